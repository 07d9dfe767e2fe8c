"""Checkpoints applied to a candidate's diff: what in it needs a person before it can pass.

The launcher scans the diff against the baseline with the same patterns the command checker
uses (secrets, credential files, ...). Each file's findings become one clearance request in the
history; until a named person approves it the verdict answers ``await_human`` (exit 24), and a
denial fails the verdict so the agent undoes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from pytest_loopcontract import hooks
from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.model import Match, Pattern
from pytest_loopcontract.checkpoints.patterns import patterns_from_contract
from pytest_loopcontract.checkpoints.scan import scan_diff
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.history import History
from pytest_loopcontract.verdict import Reason

__all__ = ["contract_patterns", "diff_checkpoints", "diff_matches", "request_checkpoints"]


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


def request_checkpoints(history: History, matches: Sequence[Match]) -> list[Reason]:
    """Reasons for the verdict: ``checkpoint_pending`` / ``checkpoint_denied``, one request
    per file, so a person clears a file's findings together."""
    reasons = []
    ordered = sorted(matches, key=lambda m: (m.path, m.pattern_id, m.line or 0))
    for path, group in groupby(ordered, key=lambda m: m.path):
        found = list(group)
        request = clearance.request(history, f"diff:{path}", found, kind="diff", standing=True)
        what = "; ".join(dict.fromkeys(m.message for m in found))
        if request.status == "pending":
            reasons.append(
                Reason(
                    "checkpoint_pending",
                    f"{request.id}: {path or 'diff'}: {what} - needs 'loop-contract checkpoint "
                    f"resolve {request.id} --by NAME'",
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
    history: History, contract: Contract, patch: str, extra: Sequence[Match] = ()
) -> list[Reason]:
    """:func:`diff_matches` requested at once (see :func:`request_checkpoints`)."""
    return request_checkpoints(history, diff_matches(contract, patch, extra))
