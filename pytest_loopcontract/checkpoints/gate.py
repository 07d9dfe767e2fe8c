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
from pytest_loopcontract.loop.history import History
from pytest_loopcontract.verdict import Reason

__all__ = ["contract_patterns", "diff_checkpoints"]


def contract_patterns(contract: Contract) -> tuple[Pattern, ...]:
    """The contract's checkpoint patterns plus any a ``loopcontract`` plugin contributes."""
    extra = [
        p for group in hooks.plugin_manager().hook.loopcontract_checkpoint_patterns() for p in group
    ]
    return patterns_from_contract(contract.checkpoints, extra)


def diff_checkpoints(
    history: History, contract: Contract, patch: str, extra: Sequence[Match] = ()
) -> list[Reason]:
    """Reasons for the verdict: ``checkpoint_pending`` / ``checkpoint_denied`` per request.

    ``extra`` are matches found by other checks of the same diff (the reward rules' evidence);
    they join the file's one request, so a person clears a file's findings together.
    """
    patterns = contract_patterns(contract)
    matches: list[Match] = list(scan_diff(patch, patterns))  # paths of added/changed files too
    matches += extra
    if not matches:
        return []
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
