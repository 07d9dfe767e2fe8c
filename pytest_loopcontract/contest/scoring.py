"""Scoring the survivors of the gates: the matrix's verdicts applied, the bracket run, the
winner proposed, the run's status named.

Why one module: a local contest (``contest run``, candidates in worktrees) and the GitHub
Action (``github publish``, candidates as pull requests) must reach the same winner from the
same scores, with the same stages, reasons and escalations in the result document. Before,
each side carried its own copy of these rules, down to the same reason string; now both call
these functions, and only where the candidates and the judges' cells come from differs.

Pure: arithmetic over the matrix result (:mod:`.matrix`) and the bracket (:mod:`.bracket`),
no I/O. The callers own the side effects (ledger rows, progress lines, comments).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_loopcontract.contest.bracket import BracketResult, Cut, Entrant, run_bracket
from pytest_loopcontract.contest.matrix import score_matrix
from pytest_loopcontract.contest.matrix_model import AgreementLike, Cell, MatrixResult
from pytest_loopcontract.reason import Reason, ReasonDocument

__all__ = [
    "SOLE_SURVIVOR_REASON",
    "Contender",
    "Escalation",
    "MatrixSettings",
    "Scoring",
    "bracket_document",
    "judge_contenders",
    "run_status",
    "score_cells",
    "sole_survivor",
]

SOLE_SURVIVOR_REASON = "the only candidate through the gates wins without a matrix"
"""The bracket's reason when exactly one candidate passed the gates: no judges are asked."""


class MatrixSettings(Protocol):
    """The contract's ``judged:`` thresholds the matrix needs (``panel.PanelSettings``)."""

    @property
    def min_score(self) -> float: ...

    @property
    def spread_threshold(self) -> float: ...

    @property
    def dissent_threshold(self) -> float: ...


@dataclass(frozen=True)
class Contender:
    """A candidate that passed every gate and goes to the judges.

    ``tokens`` and ``seconds`` are what its seat reported (the bracket's tie-breaks); a pull
    request has neither.
    """

    seat: str
    family: str
    tokens: int | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Escalation:
    """One of the matrix's escalations of one candidate (a spread too wide, a dissent)."""

    seat: str
    code: str
    message: str

    def document(self) -> ReasonDocument:
        """As the result document lists it: the message names the candidate."""
        return Reason(self.code, f"{self.seat}: {self.message}").to_json()


@dataclass(frozen=True)
class Scoring:
    """What scoring decided.

    ``stages``: the new stage of every contender it placed (``matrix``, ``bracket``,
    ``finalist``, ``winner``); ``reasons``: the reasons that replace a matrix failer's own;
    ``escalations``: the matrix's escalations, by candidate label.
    """

    winner: str | None
    bracket: dict[str, Any]
    stages: Mapping[str, str]
    reasons: Mapping[str, list[ReasonDocument]] = field(default_factory=dict)
    escalations: list[Escalation] = field(default_factory=list)


def sole_survivor(seat: str) -> Scoring:
    """Exactly one candidate passed the gates: it is the proposed winner, no matrix is run."""
    bracket = {
        "rounds": [],
        "finalists": [seat],
        "proposed_winner": seat,
        "decided_by": None,
        "reason": SOLE_SURVIVOR_REASON,
    }
    return Scoring(winner=seat, bracket=bracket, stages={seat: "winner"})


def score_cells(
    cells: Iterable[Cell],
    contenders: Sequence[Contender],
    settings: MatrixSettings,
    *,
    calibration: Mapping[str, AgreementLike] | None = None,
    rerun_done: Collection[str] = (),
) -> MatrixResult:
    """The validity matrix of ``contenders`` from the judges' cells, with the contract's
    thresholds (the one place both sides turn a contract's ``judged:`` block into a matrix)."""
    return score_matrix(
        cells,
        {c.seat: c.family for c in contenders},
        min_score=settings.min_score,
        spread_threshold=settings.spread_threshold,
        dissent_threshold=settings.dissent_threshold,
        calibration=calibration,
        rerun_done=set(rerun_done),
    )


def judge_contenders(
    contenders: Sequence[Contender], matrix: MatrixResult, *, cut: Cut, final: int
) -> Scoring:
    """Apply the matrix to the contenders and run the bracket over those it scored.

    A matrix failer stops at the ``matrix`` stage with the matrix's failures as its reasons
    (it still enters the bracket's screen round, so the record shows it leave); the rest are
    ``finalist`` or ``bracket`` (cut), and the proposed winner ``winner``. A contender the
    matrix did not score (its gates were re-run and failed) is left where it is. Escalations
    come in the matrix's order (by candidate label), so both sides list them alike.
    """
    stages: dict[str, str] = {}
    reasons: dict[str, list[ReasonDocument]] = {}
    entrants: list[Entrant] = []
    for cand in contenders:
        score = matrix.candidates.get(cand.seat)
        if score is None:
            continue
        if not score.passed:
            stages[cand.seat] = "matrix"
            reasons[cand.seat] = [f.to_json() for f in score.failures]
        entrants.append(Entrant(cand.seat, score.overall, score.passed, cand.tokens, cand.seconds))
    escalations = [
        Escalation(name, x.code, x.message)
        for name, score in matrix.candidates.items()
        for x in score.escalations
    ]
    result = run_bracket(entrants, cut=cut, final=final)
    for entrant in entrants:
        if entrant.passed_matrix:
            stages[entrant.label] = "finalist" if entrant.label in result.finalists else "bracket"
    if result.proposed_winner:
        stages[result.proposed_winner] = "winner"
    return Scoring(
        winner=result.proposed_winner,
        bracket=bracket_document(result),
        stages=stages,
        reasons=reasons,
        escalations=escalations,
    )


def run_status(winner: str | None, escalations: Sequence[object]) -> str:
    """The run's status once scored: a winner waits for a person (``escalated`` when anything
    was escalated on the way), else there is none."""
    if not winner:
        return "no_winner"
    return "escalated" if escalations else "awaiting_human"


def bracket_document(result: BracketResult) -> dict[str, Any]:
    """The ``bracket`` part of a run result: the screen and every cut, in order."""
    return {
        "rounds": [
            {
                "number": r.number,
                "field_in": list(r.field_in),
                "field_out": list(r.field_out),
                "eliminated": list(r.eliminated),
                "cut_line": r.cut_line,
                "decided_by": r.decided_by,
                "reason": r.reason,
            }
            for r in (result.screen, *result.rounds)
        ],
        "finalists": list(result.finalists),
        "proposed_winner": result.proposed_winner,
        "decided_by": result.decided_by,
        "reason": result.reason,
    }
