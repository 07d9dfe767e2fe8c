"""The judging phase of a local contest: the panel scores the survivors, the matrix and the
bracket decide, the ledger records every step.

Why here: this is the I/O around the pure scoring (:mod:`.scoring`, shared with the GitHub
Action). The judges see scrubbed diffs under shuffled labels and never their own family's
work (:mod:`.panel`); a discarded reply is a ledger event, never silent; a dissent that cites
a test re-runs that candidate's gates once before the matrix is scored again; each judge's
mean per candidate becomes a ``score`` row, so the ledger can later weigh a family's
agreement with the panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.contest.judging import JudgeOutcome
from pytest_loopcontract.contest.matrix_model import Cell, MatrixResult
from pytest_loopcontract.contest.packets import CandidateView
from pytest_loopcontract.contest.panel import (
    convene,
    matrix_document,
    task_of,
)
from pytest_loopcontract.contest.run_state import Candidate, RunState
from pytest_loopcontract.contest.scoring import Contender, Scoring, judge_contenders, score_cells
from pytest_loopcontract.contest.screening import screen
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.contest.standing import gate_summary
from pytest_loopcontract.words import plural
from pytest_loopcontract.workspace import diff_text

__all__ = ["Judgement", "adjudicate"]


@dataclass(frozen=True)
class Judgement:
    """The judging phase's outcome: the result's ``matrix`` block, the scoring, and whether
    any candidate was scored by fewer than two families (a degraded panel)."""

    matrix: dict[str, Any]
    scoring: Scoring
    degraded: bool


def adjudicate(state: RunState, survivors: Sequence[Candidate]) -> Judgement:
    """Judge the survivors, score them, run the bracket, and move every candidate to its stage."""
    outcomes = _convene(state, survivors)
    cells = [cell for o in outcomes for cell in o.cells]
    judges = {s.family for s in state.seats if s.judge}
    calibration = {family: state.ledger.family_agreement(family) for family in sorted(judges)}
    matrix = score_cells(cells, _contenders(survivors), state.settings, calibration=calibration)
    if matrix.rerun_gates:
        matrix = _rerun_dissents(state, survivors, cells, calibration, matrix)
    still = [c for c in survivors if c.stage == "passed"]
    scoring = judge_contenders(
        _contenders(still),
        matrix,
        cut=state.contract.bracket.get("cut", 2),
        final=int(state.contract.bracket.get("final", 2)),
    )
    _record_escalations(state, scoring, matrix)
    _apply(state, scoring)
    _record_scores(state, outcomes)
    state.event("bracket", rounds=scoring.bracket["rounds"], proposed_winner=scoring.winner)
    return Judgement(
        matrix=matrix_document(matrix, outcomes, cells, state.settings),
        scoring=scoring,
        degraded=any(score.degraded for score in matrix.candidates.values()),
    )


def _contenders(cands: Sequence[Candidate]) -> list[Contender]:
    return [
        Contender(
            seat=c.seat.name,
            family=c.seat.family,
            tokens=c.run.tokens if c.run else None,
            seconds=c.run.seconds if c.run else None,
        )
        for c in cands
    ]


def _identities(state: RunState) -> list[str]:
    """What the packets scrub from the diffs (paths, seat names and families, branches,
    commits), so a judge cannot tell whose work it reads."""
    names: list[str] = [str(state.root), str(state.paths.folder), "loop-contract@localhost"]
    for seat in state.seats:
        names += [seat.name, seat.family]
    for cand in state.candidates.values():
        if cand.worktree:
            names += [str(cand.worktree.path), cand.worktree.branch]
        if cand.commit:
            names.append(cand.commit)
    return names


def _convene(state: RunState, survivors: Sequence[Candidate]) -> list[JudgeOutcome]:
    views = [
        CandidateView(
            seat=c.seat.name,
            family=c.seat.family,
            diff=diff_text(state.root, state.baseline.tree, c.tree or "", context=3),
            gates=gate_summary(c.verdict or {}),
            tests=dict((c.verdict or {}).get("summary") or {}),
        )
        for c in survivors
    ]
    judges = [s for s in state.seats if s.judge]
    for judge in judges:
        state.progress.seat(judge.name, "judging")

    def dispatched(judge: Seat, run: SeatRun, attempt: int) -> None:
        state.dispatched("judge", attempt, judge, run)

    outcomes = convene(
        run_id=state.run_id,
        task=task_of(state.contract),
        views=views,
        judges=judges,
        identities=_identities(state),
        rows=state.settings.rows,
        folder=state.run_dir / "judges",
        parallel=state.parallel,
        on_run=dispatched,
    )
    for outcome in outcomes:
        _judged(state, outcome)
    return outcomes


def _judged(state: RunState, outcome: JudgeOutcome) -> None:
    """Record a judge's outcome; a discarded reply or cell is an event, never silent."""
    if outcome.status in ("discarded",) or outcome.discarded_cells:
        state.event(
            "judge_reply_discarded",
            judge=outcome.seat,
            status=outcome.status,
            discarded_cells=len(outcome.discarded_cells),
            note=outcome.note[:500],
        )
    state.progress.seat(
        outcome.seat, "judged", f"{outcome.status}, {plural(len(outcome.cells), 'cell')}"
    )


def _rerun_dissents(
    state: RunState,
    survivors: Sequence[Candidate],
    cells: list[Cell],
    calibration: Mapping[str, Any],
    matrix: MatrixResult,
) -> MatrixResult:
    """A dissent that cites a test re-runs that candidate's gates once, then re-scores."""
    for name in matrix.rerun_gates:
        state.event("dissent_rerun", target=name)
        screen(state, [state.candidates[name]], tag="-rerun")
    still = [c for c in survivors if c.stage == "passed"]
    names = {c.seat.name for c in still}
    return score_cells(
        [cell for cell in cells if cell.candidate in names],
        _contenders(still),
        state.settings,
        calibration=calibration,
        rerun_done=matrix.rerun_gates,
    )


def _record_escalations(state: RunState, scoring: Scoring, matrix: MatrixResult) -> None:
    for esc in scoring.escalations:
        if esc.code.startswith("spread"):
            state.event(
                "spread_over_threshold",
                target=esc.seat,
                spread=matrix.candidates[esc.seat].spread,
                threshold=state.settings.spread_threshold,
            )
        doc = esc.document()
        state.escalate(doc["code"], doc["message"])


def _apply(state: RunState, scoring: Scoring) -> None:
    """Move each scored candidate to its stage; a matrix failer takes the matrix's reasons."""
    for name, stage in scoring.stages.items():
        cand = state.candidates[name]
        cand.stage = stage
        if name in scoring.reasons:
            cand.reasons = list(scoring.reasons[name])


def _record_scores(state: RunState, outcomes: Sequence[JudgeOutcome]) -> None:
    """One ``score`` row per judge and candidate: the judge's mean over the rows it scored."""
    for outcome in outcomes:
        by_target: dict[str, list[Any]] = {}
        for cell in outcome.cells:
            by_target.setdefault(cell.candidate, []).append(cell)
        for target, cells in sorted(by_target.items()):
            mean = sum(c.score for c in cells) / len(cells)
            state.append(
                "score",
                {
                    "target": target,
                    "validity": round(mean, 4),
                    "call": "pass" if mean >= state.settings.min_score else "fail",
                    "rows": {c.row: c.score for c in cells},
                },
                seat=outcome.seat,
                family=outcome.family,
            )
