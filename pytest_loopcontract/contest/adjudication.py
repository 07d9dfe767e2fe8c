"""The judging phase of a local contest, around the engine (:mod:`.engine`): the ledger
records every step.

The judges see scrubbed diffs under shuffled labels and never their own family's work
(:mod:`.panel`); a discarded reply is a ledger event, never silent; a dissent that cites a
test re-runs that candidate's gates once (:func:`.screening.screen`); each judge's mean per
candidate becomes a ``score`` row, from which the ledger later weighs a family's agreement
with the panel (the calibration the next run's matrix uses).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pytest_loopcontract.contest.engine import Contestant, Decision, Panel, decide
from pytest_loopcontract.contest.judging import JudgeOutcome
from pytest_loopcontract.contest.matrix_model import MatrixResult
from pytest_loopcontract.contest.run_state import Candidate, RunState
from pytest_loopcontract.contest.scoring import Scoring
from pytest_loopcontract.contest.screening import screen
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.plural import plural
from pytest_loopcontract.workspace import diff_text

__all__ = ["adjudicate"]


def adjudicate(state: RunState, survivors: Sequence[Candidate]) -> Decision:
    """Decide among the survivors (a lone one wins outright), record it, and move every
    candidate to its stage."""
    judged = len(survivors) > 1  # a lone survivor wins outright: no diffs, no panel
    if judged:
        state.progress.phase("judging")
        for judge in state.seats:
            if judge.judge:
                state.progress.seat(judge.name, "judging")
    decision = decide(
        state.contract,
        state.run_id,
        [_contestant(state, c, with_diff=judged) for c in survivors],
        _panel(state) if judged else Panel((), (), state.run_dir, 1),
        rerun=lambda names: _rerun(state, names),
    )
    if decision.scoring is None:
        return decision
    for outcome in decision.outcomes:
        _judged(state, outcome)
    _record_escalations(state, decision.scoring, decision.scored)
    _apply(state, decision.scoring)
    _record_scores(state, decision.outcomes)
    if decision.matrix is not None:
        bracket = decision.scoring.bracket
        state.event("bracket", rounds=bracket["rounds"], proposed_winner=decision.winner)
    return decision


def _contestant(state: RunState, cand: Candidate, *, with_diff: bool) -> Contestant:
    """The candidate as the engine reads it; its diff (a git run) only when judges read it."""
    tree = state.baseline.tree
    return Contestant(
        seat=cand.seat.name,
        family=cand.seat.family,
        diff=diff_text(state.root, tree, cand.tree or "", context=3) if with_diff else "",
        verdict=cand.verdict or {},
        tokens=cand.run.tokens if cand.run else None,
        seconds=cand.run.seconds if cand.run else None,
    )


def _panel(state: RunState) -> Panel:
    judges = [s for s in state.seats if s.judge]

    def dispatched(judge: Seat, run: SeatRun, attempt: int) -> None:
        state.dispatched("judge", attempt, judge, run)

    families = sorted({judge.family for judge in judges})
    return Panel(
        judges=judges,
        identities=_identities(state),
        folder=state.run_dir / "judges",
        parallel=state.parallel,
        on_run=dispatched,
        calibration={family: state.ledger.family_agreement(family) for family in families},
    )


def _rerun(state: RunState, names: Sequence[str]) -> Collection[str]:
    """A dissent that cites a test re-runs that candidate's gates once."""
    for name in names:
        state.event("dissent_rerun", target=name)
        screen(state, [state.candidates[name]], tag="-rerun")
    return {name for name in names if state.candidates[name].stage == "passed"}


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


def _record_escalations(state: RunState, scoring: Scoring, scored: MatrixResult | None) -> None:
    for esc in scoring.escalations:
        if esc.code.startswith("spread") and scored is not None:
            state.event(
                "spread_over_threshold",
                target=esc.seat,
                spread=scored.candidates[esc.seat].spread,
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
