"""``loop-contract gate``: a named person approves, rejects or waives a contest's outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.contest.errors import ContestError
from pytest_loopcontract.contest.gate import GateError, decide
from pytest_loopcontract.contest.ledger.rows import LedgerError
from pytest_loopcontract.errors import CommandError

__all__ = ["EXIT_GATE_REFUSED", "gate"]

EXIT_GATE_REFUSED = 1  # the decision was not taken; nothing was changed


def gate(
    target: str,
    decision: str,
    *,
    by: str,
    reason: str | None = None,
    seat: str | None = None,
    run_id: str | None = None,
    as_json: bool = False,
) -> int:
    """Take the decision once, record it, merge where it says so; print the certificate."""
    try:
        result = decide(
            repo_root(), target, decision, by=by, reason=reason, seat=seat, run_id=run_id
        )
    except (GateError, ContestError, LedgerError) as exc:
        raise CommandError(f"gate: {exc}", EXIT_GATE_REFUSED) from exc
    taken = result["decision"]
    if as_json:
        print_json(taken | {"status": result["status"], "certificate": result["certificate"]})
    else:
        _print_text(taken, result)
    return 0


def _print_text(taken: Mapping[str, Any], result: Mapping[str, Any]) -> None:
    if taken["seat"]:
        print(
            f"{taken['decision']}d by {taken['by']}: {taken['seat']} merged into "
            f"{result['base']['branch']} (run {result['run_id']})"
        )
        print(f"certificate: {result['certificate']}")
    else:
        print(
            f"rejected by {taken['by']}: {taken['reason']} - the next "
            "`loop-contract contest run` carries the reason in every prompt"
        )
