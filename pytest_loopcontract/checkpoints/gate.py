"""Checkpoints applied to a candidate's diff: what in it needs a person before it can pass.

The launcher scans the diff against the baseline with the same patterns the command checker
uses (secrets, credential files, ...). Each file's findings become one clearance request in the
history; until a named person approves it the verdict answers ``await_human`` (exit 24), and a
denial fails the verdict so the agent undoes it. A verify of the working tree then withdraws
the pending requests its diff no longer raises (:func:`withdraw_gone`): a file that went away
takes its request with it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import groupby
from typing import Any

from pytest_loopcontract import hooks
from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.model import Match, Pattern
from pytest_loopcontract.checkpoints.patterns import patterns_from_contract
from pytest_loopcontract.checkpoints.scan import scan_diff
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record
from pytest_loopcontract.verdict import Reason

__all__ = [
    "contract_patterns",
    "diff_checkpoints",
    "diff_matches",
    "request_checkpoints",
    "withdraw_gone",
]

KIND = "diff"


def contract_patterns(contract: Contract) -> tuple[Pattern, ...]:
    """The contract's checkpoint patterns plus any a ``loopcontract`` plugin contributes."""
    extra = [
        p for group in hooks.plugin_manager().hook.loopcontract_checkpoint_patterns() for p in group
    ]
    return patterns_from_contract(contract.checkpoints, extra)


def diff_matches(contract: Contract, patch: str, extra: Sequence[Match] = ()) -> list[Match]:
    """The contract's checkpoint patterns over the diff, plus ``extra`` matches found by other
    checks of the same candidate (the reward rules, the run's capability policy, the review)."""
    return [*scan_diff(patch, contract_patterns(contract)), *extra]  # paths of changed files too


def _by_file(matches: Sequence[Match]) -> list[tuple[str, list[Match]]]:
    """The matches grouped by file, in a stable order: one request per file."""
    ordered = sorted(matches, key=lambda m: (m.path, m.pattern_id, m.line or 0))
    return [(path, list(group)) for path, group in groupby(ordered, key=lambda m: m.path)]


def request_checkpoints(history: History, matches: Sequence[Match], by: str = "") -> list[Reason]:
    """Reasons for the verdict: ``checkpoint_pending`` / ``checkpoint_denied``, one request
    per file, so a person clears a file's findings together. ``by`` is the name the printed
    resolve command carries (see :func:`clearance.resolve_command`)."""
    reasons = []
    for path, found in _by_file(matches):
        request = clearance.request(history, f"diff:{path}", found, kind=KIND, standing=True)
        what = "; ".join(dict.fromkeys(m.message for m in found))
        if request.status == "pending":
            reasons.append(
                Reason(
                    "checkpoint_pending",
                    f"{request.id}: {path or 'diff'}: {what} - needs "
                    f"'{clearance.resolve_command(request.id, by)}'",
                )
            )
        elif request.status == "denied":
            reasons.append(
                Reason(
                    "checkpoint_denied",
                    f"{request.id}: {path or 'diff'}: {what} ({request.message})",
                )
            )
    return reasons


def diff_checkpoints(
    history: History, contract: Contract, patch: str, extra: Sequence[Match] = (), by: str = ""
) -> list[Reason]:
    """:func:`diff_matches` requested at once (see :func:`request_checkpoints`)."""
    return request_checkpoints(history, diff_matches(contract, patch, extra), by)


def withdraw_gone(
    history: History,
    matches: Sequence[Match],
    changed: Collection[str],
    *,
    complete: bool,
) -> list[Record]:
    """Withdraw the pending diff requests the working tree no longer raises.

    ``matches`` is everything this verify found (requested already, see
    :func:`request_checkpoints`), ``changed`` the paths in the candidate's diff. A pending
    request this tree does not raise again is withdrawn, saying whether its file left the diff
    or no longer holds what raised it; only when ``complete``, though: every source of
    evidence looked (the run's and the review's too), since a run that never happened proves
    nothing gone.
    """
    if not complete:
        return []
    now = {
        path: clearance.checkpoint_id(f"diff:{path}", found) for path, found in _by_file(matches)
    }
    raised_now = set(now.values())
    in_diff = set(changed)

    def why(raised: Mapping[str, Any], records: Sequence[Record]) -> str | None:
        if raised.get("base") in raised_now:
            return None  # the tree still raises exactly this
        path = str(raised.get("subject") or "").removeprefix("diff:")
        if path and path not in in_diff:
            return f"{path} is no longer in the candidate's diff"
        shown = path or "the diff"
        if path in now:
            return (
                f"{shown} changed; what it holds now is {clearance.latest_id(records, now[path])}"
            )
        return f"{shown} no longer holds what raised it"

    return clearance.withdraw(history, KIND, why)
