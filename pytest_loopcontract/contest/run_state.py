"""The state of one local contest run, shared by its phases.

Generating, screening, judging and recording each read and fill the
same candidates and write to the same ledger, from several threads at once. One object holds
what they share (the run's identity, the pinned contract, the ledger behind its lock, the
progress file, the escalations) so each phase can live in its own module and take just this.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.panel import PanelSettings, dispatch_payload
from pytest_loopcontract.contest.prompting import retry_notes
from pytest_loopcontract.contest.run_status import RunProgress
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.contest.worktrees import Worktree
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier.baseline.record import BaselineRecord

__all__ = ["Candidate", "RunState", "retry_log"]


@dataclass
class Candidate:
    """One seat's latest attempt, as the run goes on (mutable: filled phase by phase)."""

    seat: Seat
    attempt: int = 0
    run: SeatRun | None = None
    worktree: Worktree | None = None
    commit: str | None = None
    tree: str | None = None
    changed: tuple[str, ...] = ()
    verdict: dict[str, Any] | None = None
    verdict_path: str | None = None
    stage: str = "generation"
    reasons: list[dict[str, str]] = field(default_factory=list)
    finished_at: float = 0.0
    same_tree_as: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        return self.run.status if self.run else "error"


@dataclass
class RunState:
    """What every phase of one run reads and fills; the ledger is written under one lock."""

    root: Path
    paths: StateDir
    baseline: BaselineRecord
    contract: Contract
    seats: list[Seat]
    run_id: str
    run_dir: Path
    ledger: Ledger
    progress: RunProgress
    parallel: int
    settings: PanelSettings
    candidates: dict[str, Candidate]
    escalations: list[dict[str, str]] = field(default_factory=list)
    ledger_lock: threading.Lock = field(default_factory=threading.Lock)

    def append(self, kind: str, payload: Mapping[str, Any], **columns: Any) -> None:
        """A ledger row of this run (dispatch, outcome, score, decision, ...)."""
        with self.ledger_lock:
            self.ledger.append(
                kind, run_id=self.run_id, contract_id=self.contract.id, payload=payload, **columns
            )

    def dispatched(self, role: str, attempt: int, seat: Seat, run: SeatRun) -> None:
        """A ``dispatch`` row as soon as a seat's run ends, with what it reported spending, so
        a crash later in the run still leaves a record of what was spent."""
        self.append(
            "dispatch",
            dispatch_payload(role, attempt, run),
            seat=seat.name,
            family=seat.family,
            tokens=run.tokens,
            cost_usd=run.cost_usd,
        )

    def event(self, event: str, **details: Any) -> None:
        """A ledger event of this run: something a person may want to know happened."""
        with self.ledger_lock:
            self.ledger.record_event(
                event, run_id=self.run_id, contract_id=self.contract.id, details=details
            )

    def escalate(self, code: str, message: str) -> None:
        """An escalation: shown in the result and recorded in the ledger."""
        self.escalations.append({"code": code, "message": message})
        self.event("escalation", code=code, message=message)


def retry_log(cand: Candidate) -> list[str]:
    """What the seat's next attempt is told: the verifier's notes, or how the seat run ended."""
    if cand.verdict:
        return retry_notes(cand.verdict)
    why = cand.reasons[0]["message"] if cand.reasons else ""
    return [f"your last run ended with outcome {cand.outcome}: {why}".rstrip(": ")]
