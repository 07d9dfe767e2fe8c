"""A small real ledger for the CLI's ledger and certificate tests."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.contest.ledger import Ledger


def make_ledger(path: Path, rows: int = 5) -> Ledger:
    """A ledger at ``path`` with ``rows`` human-gate events of run ``r1``, left open."""
    ledger = Ledger(path)
    for n in range(rows):
        ledger.append(
            "event", run_id="r1", contract_id="c", payload={"event": "human_gate", "n": n}
        )
    return ledger
