"""The judging panel and the shapes its results take, shared by the local contest and the
GitHub Action.

Why one module: ``contest run`` (candidates in worktrees) and ``github publish`` (candidates as
pull requests, verdicts and diffs from artifacts) must judge the same way: the same packets, the
same seat runner for the judges, the same matrix settings from the contract, and the same
documents in the result. Only where the candidates come from differs.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.judging import AskResult, JudgeOutcome, run_judge
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.matrix_model import ROWS, CandidateScore, Cell, MatrixResult
from pytest_loopcontract.contest.packets import CandidateView, JudgeBrief
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.contest.seats import run_seat
from pytest_loopcontract.contract.model import Contract, JudgedSettings
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.verifier.sandbox import Confinement
from pytest_loopcontract.workspace import scratch_folder

__all__ = [
    "PanelSettings",
    "convene",
    "dispatch_payload",
    "lesson_document",
    "lesson_scope",
    "matrix_document",
    "save_seat_log",
    "task_of",
]

_JUDGED = JudgedSettings()

OnRun = Callable[[Seat, SeatRun, int], None]
"""Called after every judge invocation (seat, run, attempt number): ledger rows, progress."""


@dataclass(frozen=True)
class PanelSettings:
    """The contract's ``judged:`` block as the matrix uses it: every row named."""

    min_score: float = _JUDGED.min_score
    spread_threshold: float = _JUDGED.spread_threshold
    dissent_threshold: float = _JUDGED.dissent_threshold
    rows: tuple[str, ...] = ROWS

    @classmethod
    def of(cls, contract: Contract) -> PanelSettings:
        judged = contract.judged
        return cls(
            min_score=judged.min_score,
            spread_threshold=judged.spread_threshold,
            dissent_threshold=judged.dissent_threshold,
            rows=judged.rows or ROWS,
        )


def lesson_scope(contract: Contract) -> tuple[str, tuple[str, ...]]:
    """The dotted domain and the tags lessons of this contract are filed and looked up under
    (``contest.domain``, else ``contract.<id>``)."""
    settings = contract.contest
    return settings.domain or f"contract.{contract.id.lower()}", settings.tags


_RESULT_LESSON_KEYS = ("id", "domain", "gate", "kind", "what", "evidence", "cause", "rule")
"""The keys of :meth:`Lesson.to_json` a run result lists, in its order (its provenance, tags,
times and count stay in the store)."""


def lesson_document(lesson: Lesson) -> dict[str, Any]:
    """A lesson as the run result lists it: a part of the lesson's one JSON form."""
    whole = lesson.to_json()
    return {key: whole[key] for key in _RESULT_LESSON_KEYS}


def dispatch_payload(role: str, attempt: int, run: SeatRun) -> dict[str, Any]:
    """The ledger ``dispatch`` row of one seat run (tokens and cost go in their columns)."""
    return {
        "role": role,
        "attempt": attempt,
        "command": list(run.command),
        "status": run.status,
        "exit_code": run.exit_code,
        "seconds": round(run.seconds, 3),
        "reason": run.reason,
    }


def task_of(contract: Contract) -> dict[str, Any]:
    """The task as a judge sees it: the contract's words, nothing about the candidates."""
    return {
        "goal": contract.goal,
        "mode": contract.mode,
        "dod": [{"id": item.id, "text": item.text} for item in contract.dod],
    }


def convene(
    *,
    run_id: str,
    task: Mapping[str, Any],
    views: Sequence[CandidateView],
    judges: Sequence[Seat],
    identities: Sequence[str],
    rows: Sequence[str],
    folder: Path,
    parallel: int,
    on_run: OnRun | None = None,
    confine: Callable[[Seat], Confinement | None] | None = None,
) -> list[JudgeOutcome]:
    """Run every judge on the candidates it may score, in parallel; one outcome per judge.

    Each judge runs in an empty temporary directory with only its packet, so it sees the diffs
    as data and nothing of the repository; ``confine`` gives a judge its sandbox
    (:func:`.seats.seat_box`), as publish does on a runner that holds a write token.
    """

    def one(judge: Seat) -> JudgeOutcome:
        private = folder / judge.name
        private.mkdir(parents=True, exist_ok=True)
        brief = JudgeBrief(
            run_id=run_id,
            judge_seat=judge.name,
            judge_family=judge.family,
            task=task,
            candidates=views,
            identities=identities,
            rows=rows,
        )
        box = confine(judge) if confine is not None else None
        return run_judge(brief, packet_dir=private, ask=_asker(judge, private, on_run, box))

    with cf.ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return [f.result() for f in [pool.submit(one, judge) for judge in judges]]


def _asker(
    judge: Seat, private: Path, on_run: OnRun | None, box: Confinement | None = None
) -> Callable[[Path], AskResult]:
    calls = 0

    def ask(packet_file: Path) -> AskResult:
        nonlocal calls
        calls += 1
        with scratch_folder("loopcontract-judge-") as cwd:
            run = run_seat(
                judge,
                "judge",
                cwd=cwd,
                values={"packet_file": str(packet_file)},
                report_file=private / f"report-{calls}.json",
                confinement=box,
            )
        save_seat_log(private, run, suffix=f"-{calls}")
        if on_run is not None:
            on_run(judge, run, calls)
        stdout = run.reply if run.reply is not None else run.stdout_text
        reason = run.reason
        if stdout is None and run.status == "ok":
            reason = f"reply too large ({run.stdout_bytes} bytes)"
        return AskResult(status=run.status, stdout=stdout, reason=reason)

    return ask


def save_seat_log(folder: Path, run: SeatRun, suffix: str = "") -> None:
    """The seat's command, outcome and kept output, for a person reading the run folder."""
    lines = [
        f"command: {list(run.command)}",
        f"status: {run.status} exit: {run.exit_code} seconds: {run.seconds:.3f}",
        f"reason: {run.reason}",
        *(f"note: {n}" for n in run.notes),
        f"--- stdout ({run.stdout_bytes} bytes; head and tail kept) ---",
        run.stdout_head,
        "...",
        run.stdout_tail,
        "--- stderr (tail) ---",
        run.stderr_tail,
    ]
    write_text_atomic(folder / f"log{suffix}.txt", "\n".join(lines))


def matrix_document(
    matrix: MatrixResult,
    judges: Sequence[JudgeOutcome],
    cells: Sequence[Cell],
    settings: PanelSettings,
) -> dict[str, Any]:
    """The ``matrix`` part of a run result."""
    return {
        "min_score": settings.min_score,
        "rows": list(settings.rows),
        "judges": [_judge_document(j) for j in judges],
        "cells": [_cell_document(c) for c in cells if c.candidate in matrix.candidates],
        "candidates": {name: _score_document(s) for name, s in matrix.candidates.items()},
    }


def _judge_document(judge: JudgeOutcome) -> dict[str, Any]:
    return {
        "seat": judge.seat,
        "family": judge.family,
        "status": judge.status,
        "cells": len(judge.cells),
        "discarded_cells": len(judge.discarded_cells),
        "note": judge.note,
    }


def _cell_document(cell: Cell) -> dict[str, Any]:
    return {
        "judge": cell.seat,
        "family": cell.family,
        "candidate": cell.candidate,
        "row": cell.row,
        "score": cell.score,
        "confidence": cell.confidence,
        "evidence": cell.evidence,
        "rationale": cell.rationale,
    }


def _score_document(score: CandidateScore) -> dict[str, Any]:
    return {
        "passed": score.passed,
        "overall": score.overall,
        "row_medians": dict(score.row_medians),
        "spread": score.spread,
        "mean_confidence": score.mean_confidence,
        "degraded": score.degraded,
        "families": list(score.families),
        "failures": [f.to_json() for f in score.failures],
        "escalations": [e.to_json() for e in score.escalations],
        "dissents": [
            {
                "judge": d.seat,
                "row": d.row,
                "score": d.score,
                "row_median": d.row_median,
                "rationale": d.rationale,
                "cites_test": d.cites_test,
            }
            for d in score.dissents
        ],
    }
