"""The validity matrix's data: the rows, the bounds, a judge's cell, a family's record, and
what the matrix concludes (:class:`CandidateScore`, :class:`MatrixResult`), with the checks
that make an input valid.

Stdlib only (and the pure :mod:`pytest_loopcontract.reason`), like :mod:`.matrix` whose
arithmetic reads these: the ledger, the judges' replies and the reports share one definition
of a cell and a result without importing the scoring.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

from pytest_loopcontract.reason import Reason

__all__ = [
    "LOW_CONFIDENCE",
    "MIN_CALIBRATION_CELLS",
    "ROWS",
    "ROW_FLOOR_MARGIN",
    "SCORE_MAX",
    "SCORE_MIN",
    "AgreementLike",
    "CandidateScore",
    "Cell",
    "Dissent",
    "DroppedCell",
    "FamilyHistory",
    "MatrixResult",
    "check_candidates",
    "check_cell",
    "check_history",
    "check_settings",
    "exact",
    "family_key",
]

ROWS: tuple[str, ...] = ("question_fidelity", "completeness", "evidence", "test_agreement")
"""The four rows every judge scores, in the order results report them."""

SCORE_MIN = 0.0
SCORE_MAX = 10.0

ROW_FLOOR_MARGIN = 2.0
"""A row median below ``min_score - ROW_FLOOR_MARGIN`` fails the candidate: a high overall
score must not hide one row (say, evidence) that the judges found missing."""

LOW_CONFIDENCE = 0.4
"""Mean confidence under this escalates: unsure judges should not decide on their own."""

MIN_CALIBRATION_CELLS = 5
"""A family's history counts only after this many decided cells; before that it is noise."""


# --------------------------------------------------------------------------------------------
# inputs


@dataclass(frozen=True, order=True)
class Cell:
    """One judge's score of one candidate on one row.

    ``evidence`` is a pointer (a file and line, a test node id, a log excerpt id) and
    ``rationale`` the judge's words; both travel with a dissent so a human can check it.
    """

    seat: str
    family: str
    candidate: str
    row: str
    score: float
    confidence: float
    evidence: str = ""
    rationale: str = ""


class AgreementLike(Protocol):
    """Anything with ``agree`` and ``total`` counts: :class:`FamilyHistory`, or the ledger's
    per-family agreement record, passed straight through without this module importing it."""

    @property
    def agree(self) -> int: ...
    @property
    def total(self) -> int: ...


@dataclass(frozen=True)
class FamilyHistory:
    """A family's record in the ledger: cells that agreed with the decided outcome, of all
    its cells whose candidate's outcome has been decided."""

    agree: int
    total: int

    def __post_init__(self) -> None:
        check_history(self.agree, self.total)


# --------------------------------------------------------------------------------------------
# outputs


@dataclass(frozen=True)
class DroppedCell:
    """A cell that never entered the arithmetic, and why (``self_family``, ``self_seat``,
    ``unknown_candidate``). Reported so that an attempt at self-scoring is visible."""

    cell: Cell
    reason: str


@dataclass(frozen=True)
class Dissent:
    """A cell further than ``dissent_threshold`` from its row median.

    Kept with its rationale and evidence because a lone dissenter is sometimes the only judge
    that ran the test; ``cites_test`` says its evidence names one, which earns the candidate
    one re-run of its gates.
    """

    seat: str
    family: str
    candidate: str
    row: str
    score: float
    row_median: float
    distance: float
    evidence: str
    rationale: str
    cites_test: bool


@dataclass(frozen=True)
class CandidateScore:
    """Everything the matrix concluded about one candidate.

    ``overall`` is the weighted median of the per-judge means; ``passed`` is the judged gate.
    ``escalations`` do not fail a candidate: they ask a human to look before the outcome is
    trusted. ``degraded`` marks a candidate fewer than two families could score, so the
    cross-vendor check the contest relies on did not happen.
    """

    label: str
    family: str
    passed: bool
    overall: float | None
    row_medians: Mapping[str, float]
    missing_rows: tuple[str, ...]
    below_floor: tuple[str, ...]
    judge_means: Mapping[str, float]
    judge_weights: Mapping[str, float]
    spread: float | None
    spread_trimmed: bool
    mean_confidence: float | None
    families: tuple[str, ...]
    degraded: bool
    dissents: tuple[Dissent, ...]
    rerun_gates: bool
    failures: tuple[Reason, ...]
    escalations: tuple[Reason, ...]
    cells: int

    @property
    def escalated(self) -> bool:
        return bool(self.escalations)


@dataclass(frozen=True)
class MatrixResult:
    """The whole matrix: one :class:`CandidateScore` per candidate (sorted by label), the
    cells that were dropped, and the candidates whose gates must run once more."""

    candidates: Mapping[str, CandidateScore]
    dropped: tuple[DroppedCell, ...]
    rerun_gates: tuple[str, ...]
    min_score: float
    calibration: Mapping[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> tuple[str, ...]:
        return tuple(label for label, score in self.candidates.items() if score.passed)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(label for label, score in self.candidates.items() if not score.passed)

    @property
    def escalated(self) -> tuple[str, ...]:
        return tuple(label for label, score in self.candidates.items() if score.escalated)


# --------------------------------------------------------------------------------------------
# what makes an input valid


def family_key(family: str) -> str:
    """The vendor a family names: "OpenAI" and "openai " are one vendor; comparing raw strings
    would let a seat dodge the self-scoring rule with a capital letter."""
    return family.strip().casefold()


def exact(value: float, what: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return Fraction(value)


def check_cell(cell: Cell) -> None:
    if cell.row not in ROWS:
        raise ValueError(f"unknown row {cell.row!r}; rows are {', '.join(ROWS)}")
    score = exact(cell.score, "score")
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise ValueError(f"score {cell.score!r} outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    confidence = exact(cell.confidence, "confidence")
    if not 0 <= confidence <= 1:
        raise ValueError(f"confidence {cell.confidence!r} outside 0-1")
    if not cell.seat or not family_key(cell.family) or not cell.candidate:
        raise ValueError("a cell needs a seat, a family and a candidate")


def check_candidates(candidates: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for label, family in candidates.items():
        key = family_key(family)
        if not label or not key:
            raise ValueError("a candidate needs a label and a family")
        out[label] = key
    return out


def check_settings(
    min_score: float, spread_threshold: float, dissent_threshold: float, low_confidence: float
) -> None:
    if not SCORE_MIN <= exact(min_score, "min_score") <= SCORE_MAX:
        raise ValueError(f"min_score {min_score!r} outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    if exact(spread_threshold, "spread_threshold") < 0:
        raise ValueError("spread_threshold must be >= 0")
    if exact(dissent_threshold, "dissent_threshold") < 0:
        raise ValueError("dissent_threshold must be >= 0")
    if not 0 <= exact(low_confidence, "low_confidence") <= 1:
        raise ValueError("low_confidence must be within 0-1")


def check_history(agree: int, total: int) -> None:
    for name, n in (("agree", agree), ("total", total)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    if agree > total:
        raise ValueError(f"agree ({agree}) exceeds total ({total})")
