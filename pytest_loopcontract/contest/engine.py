"""The contest's one engine: from the candidates that passed the gates to the proposed winner.

A local contest (``contest run``: candidates in worktrees, a ledger) and the GitHub Action
(``github publish``: candidates as pull requests, judges boxed on a runner holding a write
token) gather their candidates and judges differently and write what was decided to
different places; what is decided, and how, is this module's alone: the judges convened on
scrubbed packets, the matrix scored with the contract's thresholds and the judges' calibration,
a dissent that cites a test re-running that candidate's gates once, the bracket with the
contract's settings, the run's status, and the result document's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.judging import JudgeOutcome
from pytest_loopcontract.contest.matrix_model import AgreementLike, Cell, MatrixResult
from pytest_loopcontract.contest.packets import CandidateView
from pytest_loopcontract.contest.panel import PanelSettings, convene, matrix_document, task_of
from pytest_loopcontract.contest.result_file import RESULT_SCHEMA_VERSION, contract_document
from pytest_loopcontract.contest.scoring import (
    Contender,
    Scoring,
    judge_contenders,
    run_status,
    score_cells,
    sole_survivor,
)
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.contest.standing import gate_summary
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.verifier.sandbox import Confinement

__all__ = ["Contestant", "Decision", "Panel", "ResultFrame", "decide", "result_document"]

# The seats whose gates a dissent asks to re-run -> those of them that passed again.
Rerun = Callable[[Sequence[str]], Collection[str]]


@dataclass(frozen=True)
class Contestant:
    """A candidate through every gate, as the judges and the bracket need it: its diff, its
    verdict (the gates and the test summary the packet shows), and what its seat spent (the
    bracket's tie-breaks; a pull request reports neither)."""

    seat: str
    family: str
    diff: str
    verdict: Mapping[str, Any]
    tokens: int | None = None
    seconds: float | None = None

    def contender(self) -> Contender:
        return Contender(self.seat, self.family, self.tokens, self.seconds)

    def view(self) -> CandidateView:
        return CandidateView(
            seat=self.seat,
            family=self.family,
            diff=self.diff,
            gates=gate_summary(self.verdict),
            tests=dict(self.verdict.get("summary") or {}),
        )


@dataclass(frozen=True)
class Panel:
    """How a front end convenes its judges: which seats, what the packets scrub, where each
    judge works, how many at once, the box a judge runs in (publish: no token, no runner
    files), a callback per judge run (the local ledger's dispatch rows), and each judge
    family's calibration (the local ledger's agreement record; none weighs all alike)."""

    judges: Sequence[Seat]
    identities: Sequence[str]
    folder: Path
    parallel: int
    confine: Callable[[Seat], Confinement | None] | None = None
    on_run: Callable[[Seat, SeatRun, int], None] | None = None
    calibration: Mapping[str, AgreementLike] | None = None


@dataclass(frozen=True)
class Decision:
    """What the engine decided: the scoring (None when no candidate passed the gates), the
    result's ``matrix`` block (None without judges), each judge's outcome, the scored matrix,
    and whether a candidate had fewer than two judge families."""

    scoring: Scoring | None
    matrix: dict[str, Any] | None = None
    outcomes: Sequence[JudgeOutcome] = ()
    scored: MatrixResult | None = None
    degraded: bool = False

    @property
    def winner(self) -> str | None:
        return self.scoring.winner if self.scoring else None

    @property
    def bracket(self) -> dict[str, Any] | None:
        return self.scoring.bracket if self.scoring else None

    def escalations(self) -> list[dict[str, Any]]:
        """The matrix's escalations, as the result document lists them."""
        return [dict(e.document()) for e in self.scoring.escalations] if self.scoring else []


def decide(
    contract: Contract,
    run_id: str,
    contestants: Sequence[Contestant],
    panel: Panel,
    rerun: Rerun | None = None,
) -> Decision:
    """The winner among ``contestants``: a lone one outright (its diff and the panel are not
    read), several by the judges, the matrix and the bracket. ``rerun`` re-runs the gates of
    the seats a dissent names (the local contest screens them again); without it the dissent
    stands in the matrix as is."""
    if not contestants:
        return Decision(None)
    if len(contestants) == 1:
        return Decision(sole_survivor(contestants[0].seat))
    settings = PanelSettings.of(contract)
    outcomes = convene(
        run_id=run_id,
        task=task_of(contract),
        views=[c.view() for c in contestants],
        judges=panel.judges,
        identities=panel.identities,
        rows=settings.rows,
        folder=panel.folder,
        parallel=panel.parallel,
        on_run=panel.on_run,
        confine=panel.confine,
    )
    cells = [cell for o in outcomes for cell in o.cells]
    contenders = [c.contender() for c in contestants]
    scored = score_cells(cells, contenders, settings, calibration=panel.calibration)
    if scored.rerun_gates and rerun is not None:
        scored, contenders = _after_rerun(cells, contestants, scored, rerun, settings, panel)
    scoring = judge_contenders(
        contenders, scored, cut=contract.bracket.cut, final=contract.bracket.final
    )
    return Decision(
        scoring,
        matrix=matrix_document(scored, outcomes, cells, settings),
        outcomes=outcomes,
        scored=scored,
        degraded=any(score.degraded for score in scored.candidates.values()),
    )


def _after_rerun(
    cells: Sequence[Cell],
    contestants: Sequence[Contestant],
    scored: MatrixResult,
    rerun: Rerun,
    settings: PanelSettings,
    panel: Panel,
) -> tuple[MatrixResult, list[Contender]]:
    """Re-score without the candidates whose gates failed when re-run; a re-run is once."""
    passed = set(rerun(scored.rerun_gates))
    still = [c for c in contestants if c.seat not in scored.rerun_gates or c.seat in passed]
    names = {c.seat for c in still}
    contenders = [c.contender() for c in still]
    rescored = score_cells(
        [cell for cell in cells if cell.candidate in names],
        contenders,
        settings,
        calibration=panel.calibration,
        rerun_done=scored.rerun_gates,
    )
    return rescored, contenders


@dataclass(frozen=True)
class ResultFrame:
    """What a front end knows of its run beyond the decision: where and when it ran, its
    seats and candidates as documents, where its record is kept, and every escalation in the
    order it was raised (the matrix's, :meth:`Decision.escalations`, among them)."""

    run_id: str
    contract_path: str
    started: str
    finished: str
    attempts: int
    seats: Sequence[Mapping[str, Any]]
    candidates: Sequence[Mapping[str, Any]]
    ledger: Mapping[str, Any]
    escalations: Sequence[Mapping[str, Any]]  # all of the run's, in the order raised
    lessons: Sequence[Mapping[str, Any]] = ()
    status: str | None = None  # set when the run ended before a decision (``stopped``)
    certificate: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # ``spend``, ``base``


def result_document(contract: Contract, decision: Decision, frame: ResultFrame) -> dict[str, Any]:
    """The run's ``result.json`` (``schemas/contest_result.schema.json``), for both front ends."""
    escalations = [dict(e) for e in frame.escalations]
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "run_id": frame.run_id,
        "contract": contract_document(contract, frame.contract_path),
        "started": frame.started,
        "finished": frame.finished,
        "status": frame.status or run_status(decision.winner, escalations),
        "attempts": frame.attempts,
        "seats": [dict(s) for s in frame.seats],
        "candidates": [dict(c) for c in frame.candidates],
        "matrix": decision.matrix,
        "bracket": decision.bracket,
        "winner": decision.winner,
        "escalations": escalations,
        "lessons": [dict(lesson) for lesson in frame.lessons],
        "decision": None,
        "certificate": frame.certificate,
        "ledger": dict(frame.ledger),
        **frame.extra,
    }
