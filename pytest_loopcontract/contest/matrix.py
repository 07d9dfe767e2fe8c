"""The validity matrix: peer scores in, one judged-gate outcome per candidate out.

Every eligible seat scores every other family's candidate on four rows. This module is the
arithmetic only (stdlib, no I/O, nothing else from the package), so the rule that decides
whether a candidate survives the judged gate can be read, tested and replayed from a ledger
without running a single judge.

Why these rules:

* **No self-scoring, by construction.** A cell whose judge family equals the candidate's family
  (or whose seat is the candidate itself) is dropped before any arithmetic and reported, so a
  caller that forgets to filter cannot let a vendor grade its own homework.
* **Weighted medians, not means.** One extreme judge cannot drag a row or the verdict; each cell
  weighs ``calibration(family) * confidence``, so a family with a record of siding with the
  humans, speaking with confidence, counts for more.
* **Exact arithmetic.** Medians, means and comparisons run on :class:`fractions.Fraction`, so
  the outcome depends neither on the order the cells arrive in nor on float rounding at the
  pass line. Floats appear only in the returned values.
* **Escalate rather than guess.** Judges that disagree widely, judges that are unsure, and a
  candidate nobody could score go to a human instead of being decided silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

__all__ = [
    "LOW_CONFIDENCE",
    "MIN_CALIBRATION_CELLS",
    "ROWS",
    "ROW_FLOOR_MARGIN",
    "AgreementLike",
    "CandidateScore",
    "Cell",
    "Dissent",
    "DroppedCell",
    "FamilyHistory",
    "MatrixReason",
    "MatrixResult",
    "calibration_weight",
    "cell_agrees",
    "cites_test",
    "score_matrix",
    "tally_calibration",
    "weighted_median",
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

_PRIOR = Fraction(1, 2)
"""The calibration of a family we know nothing about, and where Laplace smoothing pulls to."""

_TRIM_AT = 5
"""With this many judges or more, the highest and lowest judge leave the spread."""

_NODE_ID = re.compile(r"[\w./\\-]*\.py::\w")
_TEST_FILE = re.compile(r"(?:\btest_\w*|\w+_test)\.py\b")
_TEST_NAME = re.compile(r"\btest_\w+")


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
        _check_history(self.agree, self.total)


# --------------------------------------------------------------------------------------------
# outputs


@dataclass(frozen=True)
class MatrixReason:
    """Why a candidate failed or escalated. ``code`` is stable; ``message`` is for people."""

    code: str
    message: str


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
    failures: tuple[MatrixReason, ...]
    escalations: tuple[MatrixReason, ...]
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
# building blocks


def calibration_weight(agree: int, total: int, *, min_cells: int = MIN_CALIBRATION_CELLS) -> float:
    """A family's weight: ``(agree + 1) / (total + 2)`` once it has ``min_cells`` decided cells,
    else ``0.5``.

    Laplace smoothing keeps every weight strictly between 0 and 1 (a family that has always
    disagreed still speaks, quietly) and pulls small records toward 0.5. Before ``min_cells``
    the record is too thin to mean anything, so the family gets exactly the prior 0.5: the
    same weight a family with no history at all gets. A newcomer therefore neither outweighs
    nor is outweighed by a family of unknown merit, and weights stay comparable across
    families (a neutral 1.0 would let an unproven family outweigh a proven one).
    """
    return float(_calibration(agree, total, min_cells))


def cell_agrees(score: float, *, min_score: float, accepted: bool) -> bool:
    """Whether a past cell sided with the decided outcome: it scored at or above the line and
    the candidate was accepted, or below the line and it was rejected. This is the "agree"
    that :class:`FamilyHistory` counts."""
    return (score >= min_score) == accepted


def tally_calibration(history: Iterable[tuple[str, bool]]) -> dict[str, FamilyHistory]:
    """Fold ``(family, agreed)`` records from the ledger into per-family counts."""
    counts: dict[str, list[int]] = {}
    for family, agreed in history:
        entry = counts.setdefault(_family_key(family), [0, 0])
        entry[0] += int(bool(agreed))
        entry[1] += 1
    return {fam: FamilyHistory(agree, total) for fam, (agree, total) in sorted(counts.items())}


def weighted_median(values: Iterable[tuple[float, float]]) -> float:
    """The weighted median of ``(value, weight)`` pairs.

    Sort by value and walk the cumulative weight: the median is the first value where it
    passes half the total; where it lands exactly on half, the midpoint of that value and the
    next (so equal weights give the ordinary median). Zero weights are ignored; when every
    weight is zero, the weights carry no information and all values count equally. The
    result does not depend on the order of the pairs.
    """
    pairs = [(_exact(v, "value"), _exact(w, "weight")) for v, w in values]
    return float(_weighted_median(pairs))


def cites_test(evidence: str, rationale: str = "") -> bool:
    """Whether a cell points at a test: a pytest node id (``path.py::name``) in the evidence or
    the rationale, or a test file or ``test_*`` name in the evidence pointer.

    The row name ``test_agreement`` is not a test. Only the evidence pointer is searched for
    bare names, since free text mentions "test_" loosely; a node id is specific enough to
    trust anywhere.
    """
    if _NODE_ID.search(evidence) or _NODE_ID.search(rationale):
        return True
    if _TEST_FILE.search(evidence):
        return True
    return any(name != "test_agreement" for name in _TEST_NAME.findall(evidence))


# --------------------------------------------------------------------------------------------
# the matrix


def score_matrix(
    cells: Iterable[Cell],
    candidates: Mapping[str, str],
    *,
    min_score: float,
    spread_threshold: float,
    dissent_threshold: float,
    calibration: Mapping[str, AgreementLike] | None = None,
    min_calibration_cells: int = MIN_CALIBRATION_CELLS,
    low_confidence: float = LOW_CONFIDENCE,
    rerun_done: Collection[str] = (),
) -> MatrixResult:
    """Score every candidate in ``candidates`` (label -> family) from the judges' cells.

    Per candidate, with ``w(cell) = calibration(family) * confidence``:

    * row median = weighted median of the row's scores, weights ``w``;
    * judge mean = plain mean of one seat's scores over the rows it scored, judge weight =
      ``calibration(family) * mean confidence`` of those cells;
    * overall = weighted median of the judge means, weights the judge weights;
    * passed = all four rows scored, overall >= ``min_score``, and no row median below
      ``min_score - 2``;
    * spread = max - min of the judge means, without the highest and the lowest judge when
      five or more judged; above ``spread_threshold`` escalates;
    * a cell with ``|score - row median| > dissent_threshold`` is a dissent; a dissent that
      cites a test asks for one re-run of the candidate's gates (not again for labels in
      ``rerun_done``, which is how "once" survives re-scoring);
    * mean confidence of all its cells under ``low_confidence`` escalates;
    * fewer than two judge families: ``degraded``;
    * no cells at all: fails and escalates (``unscored``).

    Malformed input (unknown row, score outside 0-10, confidence outside 0-1, the same seat
    scoring the same candidate's row twice, one seat with two families) raises ``ValueError``:
    judge replies are validated before they get here, so this is a programming error.
    """
    _check_settings(min_score, spread_threshold, dissent_threshold, low_confidence)
    if min_calibration_cells < 0:
        raise ValueError("min_calibration_cells must be >= 0")
    families_of = _check_candidates(candidates)
    weights = _family_weights(calibration or {}, min_calibration_cells)

    accepted: dict[str, list[Cell]] = {label: [] for label in families_of}
    dropped: list[DroppedCell] = []
    seat_family: dict[str, str] = {}
    seen: set[tuple[str, str, str]] = set()
    for cell in cells:
        _check_cell(cell)
        fam = _family_key(cell.family)
        known = seat_family.setdefault(cell.seat, fam)
        if known != fam:
            raise ValueError(f"seat {cell.seat!r} judged as two families: {known!r} and {fam!r}")
        key = (cell.seat, cell.candidate, cell.row)
        if key in seen:
            raise ValueError(f"seat {cell.seat!r} scored {cell.candidate!r}/{cell.row} twice")
        seen.add(key)
        reason = _drop_reason(cell, fam, families_of)
        if reason is not None:
            dropped.append(DroppedCell(cell, reason))
        else:
            accepted[cell.candidate].append(cell)

    settings = _Settings(
        min_score=Fraction(min_score),
        spread_threshold=Fraction(spread_threshold),
        dissent_threshold=Fraction(dissent_threshold),
        low_confidence=Fraction(low_confidence),
    )
    scores = {
        label: _score_candidate(
            label, families_of[label], accepted[label], weights, settings, label in rerun_done
        )
        for label in sorted(families_of)
    }
    return MatrixResult(
        candidates=scores,
        dropped=tuple(sorted(dropped, key=lambda d: (d.cell, d.reason))),
        rerun_gates=tuple(label for label, s in scores.items() if s.rerun_gates),
        min_score=float(min_score),
        calibration={fam: float(w) for fam, w in sorted(weights.items())},
    )


# --------------------------------------------------------------------------------------------
# internals


@dataclass(frozen=True)
class _Settings:
    min_score: Fraction
    spread_threshold: Fraction
    dissent_threshold: Fraction
    low_confidence: Fraction


def _score_candidate(
    label: str,
    family: str,
    cells: Sequence[Cell],
    weights: Mapping[str, Fraction],
    settings: _Settings,
    rerun_done: bool,
) -> CandidateScore:
    if not cells:
        reason = MatrixReason("unscored", f"no judge of another family scored {label!r}")
        return CandidateScore(
            label=label,
            family=family,
            passed=False,
            overall=None,
            row_medians={},
            missing_rows=ROWS,
            below_floor=(),
            judge_means={},
            judge_weights={},
            spread=None,
            spread_trimmed=False,
            mean_confidence=None,
            families=(),
            degraded=True,
            dissents=(),
            rerun_gates=False,
            failures=(reason,),
            escalations=(reason,),
            cells=0,
        )

    def weight(cell: Cell) -> Fraction:
        return _weight_of(weights, cell.family) * Fraction(cell.confidence)

    # Row medians, in the fixed row order.
    medians: dict[str, Fraction] = {}
    for row in ROWS:
        in_row = [(Fraction(c.score), weight(c)) for c in cells if c.row == row]
        if in_row:
            medians[row] = _weighted_median(in_row)
    missing = tuple(row for row in ROWS if row not in medians)

    # Per-judge means and weights.
    by_seat: dict[str, list[Cell]] = {}
    for cell in cells:
        by_seat.setdefault(cell.seat, []).append(cell)
    means: dict[str, Fraction] = {}
    judge_w: dict[str, Fraction] = {}
    for seat in sorted(by_seat):
        own = by_seat[seat]
        means[seat] = _mean(Fraction(c.score) for c in own)
        judge_w[seat] = _weight_of(weights, own[0].family) * _mean(
            Fraction(c.confidence) for c in own
        )
    overall = _weighted_median([(means[s], judge_w[s]) for s in means])

    # The pass rule.
    floor = settings.min_score - Fraction(ROW_FLOOR_MARGIN)
    below = tuple(row for row in ROWS if row in medians and medians[row] < floor)
    failures: list[MatrixReason] = []
    if missing:
        failures.append(MatrixReason("missing_rows", f"no score for: {', '.join(missing)}"))
    if overall < settings.min_score:
        failures.append(
            MatrixReason(
                "below_minimum",
                f"weighted median {float(overall):g} is under the minimum "
                f"{float(settings.min_score):g}",
            )
        )
    if below:
        failures.append(
            MatrixReason(
                "row_floor",
                f"row median under {float(floor):g}: "
                + ", ".join(f"{row}={float(medians[row]):g}" for row in below),
            )
        )

    # Spread of the judge means, trimmed when there are enough judges to trim.
    ordered = sorted(means.values())
    trimmed = len(ordered) >= _TRIM_AT
    if trimmed:
        ordered = ordered[1:-1]
    spread = ordered[-1] - ordered[0]

    # Dissents.
    dissents: list[Dissent] = []
    for cell in sorted(cells, key=lambda c: (ROWS.index(c.row), c.seat)):
        median = medians[cell.row]
        distance = abs(Fraction(cell.score) - median)
        if distance > settings.dissent_threshold:
            dissents.append(
                Dissent(
                    seat=cell.seat,
                    family=_family_key(cell.family),
                    candidate=label,
                    row=cell.row,
                    score=cell.score,
                    row_median=float(median),
                    distance=float(distance),
                    evidence=cell.evidence,
                    rationale=cell.rationale,
                    cites_test=cites_test(cell.evidence, cell.rationale),
                )
            )
    rerun = not rerun_done and any(d.cites_test for d in dissents)

    # Escalations.
    mean_conf = _mean(Fraction(c.confidence) for c in cells)
    escalations: list[MatrixReason] = []
    if spread > settings.spread_threshold:
        escalations.append(
            MatrixReason(
                "spread",
                f"judge means spread {float(spread):g} "
                f"{'(trimmed) ' if trimmed else ''}"
                f"exceeds {float(settings.spread_threshold):g}",
            )
        )
    if mean_conf < settings.low_confidence:
        escalations.append(
            MatrixReason(
                "low_confidence",
                f"mean confidence {float(mean_conf):g} is under {float(settings.low_confidence):g}",
            )
        )

    fams = tuple(sorted({_family_key(c.family) for c in cells}))
    return CandidateScore(
        label=label,
        family=family,
        passed=not failures,
        overall=float(overall),
        row_medians={row: float(m) for row, m in medians.items()},
        missing_rows=missing,
        below_floor=below,
        judge_means={s: float(m) for s, m in means.items()},
        judge_weights={s: float(w) for s, w in judge_w.items()},
        spread=float(spread),
        spread_trimmed=trimmed,
        mean_confidence=float(mean_conf),
        families=fams,
        degraded=len(fams) < 2,
        dissents=tuple(dissents),
        rerun_gates=rerun,
        failures=tuple(failures),
        escalations=tuple(escalations),
        cells=len(cells),
    )


def _weighted_median(pairs: Sequence[tuple[Fraction, Fraction]]) -> Fraction:
    if not pairs:
        raise ValueError("weighted median of nothing")
    if any(w < 0 for _, w in pairs):
        raise ValueError("weights must be >= 0")
    if sum(w for _, w in pairs) == 0:
        pairs = [(v, Fraction(1)) for v, _ in pairs]
    grouped: dict[Fraction, Fraction] = {}
    for value, w in pairs:
        if w > 0:
            grouped[value] = grouped.get(value, Fraction(0)) + w
    values = sorted(grouped)
    half = sum(grouped.values()) / 2
    running = Fraction(0)
    for i, value in enumerate(values):
        running += grouped[value]
        if running > half:
            return value
        if running == half:
            # The rest weighs exactly half and is positive, so a next value exists.
            return (value + values[i + 1]) / 2
    raise AssertionError("unreachable: cumulative weight never reached half")  # pragma: no cover


def _mean(values: Iterable[Fraction]) -> Fraction:
    items = list(values)
    return sum(items, Fraction(0)) / len(items)


def _calibration(agree: int, total: int, min_cells: int) -> Fraction:
    _check_history(agree, total)
    if total < min_cells:
        return _PRIOR
    return Fraction(agree + 1, total + 2)


def _family_weights(
    calibration: Mapping[str, AgreementLike], min_cells: int
) -> dict[str, Fraction]:
    weights: dict[str, Fraction] = {}
    for family, history in calibration.items():
        key = _family_key(family)
        if key in weights:
            raise ValueError(f"calibration names family {key!r} twice")
        weights[key] = _calibration(history.agree, history.total, min_cells)
    return weights


def _weight_of(weights: Mapping[str, Fraction], family: str) -> Fraction:
    return weights.get(_family_key(family), _PRIOR)


def _family_key(family: str) -> str:
    # "OpenAI" and "openai " are one vendor; comparing raw strings would let a seat dodge the
    # self-scoring rule with a capital letter.
    return family.strip().casefold()


def _drop_reason(cell: Cell, fam: str, families_of: Mapping[str, str]) -> str | None:
    if cell.candidate not in families_of:
        return "unknown_candidate"
    if cell.seat == cell.candidate:
        return "self_seat"
    target = families_of[cell.candidate]
    if fam == target:
        return "self_family"
    # A seat that is also a candidate is of its candidate's family, whatever the cell says.
    own = families_of.get(cell.seat)
    if own is not None and own == target:
        return "self_family"
    return None


def _exact(value: float, what: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return Fraction(value)


def _check_cell(cell: Cell) -> None:
    if cell.row not in ROWS:
        raise ValueError(f"unknown row {cell.row!r}; rows are {', '.join(ROWS)}")
    score = _exact(cell.score, "score")
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise ValueError(f"score {cell.score!r} outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    confidence = _exact(cell.confidence, "confidence")
    if not 0 <= confidence <= 1:
        raise ValueError(f"confidence {cell.confidence!r} outside 0-1")
    if not cell.seat or not _family_key(cell.family) or not cell.candidate:
        raise ValueError("a cell needs a seat, a family and a candidate")


def _check_candidates(candidates: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for label, family in candidates.items():
        key = _family_key(family)
        if not label or not key:
            raise ValueError("a candidate needs a label and a family")
        out[label] = key
    return out


def _check_settings(
    min_score: float, spread_threshold: float, dissent_threshold: float, low_confidence: float
) -> None:
    if not SCORE_MIN <= _exact(min_score, "min_score") <= SCORE_MAX:
        raise ValueError(f"min_score {min_score!r} outside {SCORE_MIN:g}-{SCORE_MAX:g}")
    if _exact(spread_threshold, "spread_threshold") < 0:
        raise ValueError("spread_threshold must be >= 0")
    if _exact(dissent_threshold, "dissent_threshold") < 0:
        raise ValueError("dissent_threshold must be >= 0")
    if not 0 <= _exact(low_confidence, "low_confidence") <= 1:
        raise ValueError("low_confidence must be within 0-1")


def _check_history(agree: int, total: int) -> None:
    for name, n in (("agree", agree), ("total", total)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    if agree > total:
        raise ValueError(f"agree ({agree}) exceeds total ({total})")
