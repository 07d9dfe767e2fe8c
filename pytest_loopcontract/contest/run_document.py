"""The result document of a local contest run, framed from its state for the engine's
:func:`.engine.result_document` (the one builder, shared with the GitHub Action)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_loopcontract.contest.engine import Decision, ResultFrame
from pytest_loopcontract.contest.engine import result_document as build_result
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.panel import lesson_document
from pytest_loopcontract.contest.result_file import empty_gates
from pytest_loopcontract.contest.run_state import Candidate, RunState
from pytest_loopcontract.contest.seat_model import Seat
from pytest_loopcontract.contest.standing import gate_summary
from pytest_loopcontract.fsio import utc_now

__all__ = ["candidate_document", "result_document"]


def result_document(
    state: RunState,
    decision: Decision,
    *,
    started: str,
    attempts: int,
    lessons: Sequence[Lesson],
    base_branch: str | None,
    stopped: bool = False,
    certificate: str | None = None,
) -> dict[str, Any]:
    """The run's ``result.json``."""
    seq, head = state.ledger.head()
    frame = ResultFrame(
        run_id=state.run_id,
        contract_path=state.baseline.contract_path,
        started=started,
        finished=utc_now(),
        attempts=attempts,
        seats=[seat_document(state, seat) for seat in state.seats],
        candidates=[candidate_document(c) for c in state.candidates.values()],
        ledger={
            "path": str(state.paths.ledger.relative_to(state.root)),
            "head_seq": seq,
            "head": head,
        },
        escalations=state.escalations,
        lessons=[
            lesson_document(lesson) for lesson in {lesson.id: lesson for lesson in lessons}.values()
        ],
        status="stopped" if stopped else None,
        certificate=certificate,
        extra={
            "spend": state.ledger.totals_payload(state.run_id, upto_seq=seq),
            "base": {"commit": state.baseline.commit, "branch": base_branch},
        },
    )
    return build_result(state.contract, decision, frame)


def seat_document(state: RunState, seat: Seat) -> dict[str, Any]:
    """A seat of the run, with its family's probe record (how often it cheated when the task
    was impossible), so a reader weighs the family's candidates knowing it."""
    record = state.ledger.probe_record(family=seat.family)
    return {
        "name": seat.name,
        "family": seat.family,
        "scripted": seat.scripted,
        "probe": {
            "probes": record.probes,
            "cheated": record.cheated,
            "flagged": record.flagged,
            "failed_honestly": record.failed_honestly,
        },
    }


def candidate_document(cand: Candidate) -> dict[str, Any]:
    """One entry of the result's ``candidates``: the seat's latest attempt and where it stopped."""
    run = cand.run
    verdict = cand.verdict
    return {
        "seat": cand.seat.name,
        "family": cand.seat.family,
        "attempt": cand.attempt,
        "outcome": cand.outcome,
        "branch": cand.worktree.branch if cand.worktree else None,
        "commit": cand.commit,
        "tree": cand.tree,
        "same_tree_as": list(cand.same_tree_as),
        "provenance": {
            "command": list(run.command) if run else list(cand.seat.generate or ()),
            "exit_code": run.exit_code if run else None,
            "tokens": run.tokens if run else None,
            "cost_usd": run.cost_usd if run else None,
            "seconds": round(run.seconds, 3) if run else None,
            "reason": run.reason if run else "",
        },
        "verdict": verdict.get("verdict") if verdict else None,
        "exit_code": verdict.get("exit_code") if verdict else None,
        "verdict_path": cand.verdict_path,
        "stage": cand.stage if cand.stage != "passed" else "matrix",
        "gates": gate_summary(verdict) if verdict else empty_gates(),
        "reasons": cand.reasons,
    }
