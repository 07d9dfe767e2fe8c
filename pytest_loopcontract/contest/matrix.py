"""The validity matrix: peer scores in, one judged-gate outcome per candidate out.

Every eligible seat scores every other family's candidate on four rows. This module is the
arithmetic only (stdlib, no I/O, nothing from the package but the matrix's own data in
:mod:`.matrix_model`), so the rule that decides
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

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from pytest_loopcontract.contest.matrix_model import (
    LOW_CONFIDENCE,
    MIN_CALIBRATION_CELLS,
    ROW_FLOOR_MARGIN,
    ROWS,
    AgreementLike,
    CandidateScore,
    Cell,
    Dissent,
    DroppedCell,
    MatrixResult,
    check_candidates,
    check_cell,
    check_history,
    check_settings,
    exact,
    family_key,
)
from pytest_loopcontract.reason import Reason

__all__ = [
    "calibration_weight",
    "cites_test",
    "score_matrix",
    "weighted_median",
]

_PRIOR = Fraction(1, 2)
"""The calibration of a family we know nothing about, and where Laplace smoothing pulls to."""

_TRIM_AT = 5
"""With this many judges or more, the highest and lowest judge leave the spread."""

_NODE_ID = re.compile(r"[\w./\\-]*\.py::\w")
_TEST_FILE = re.compile(r"(?:\btest_\w*|\w+_test)\.py\b")
_TEST_NAME = re.compile(r"\btest_\w+")


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


def weighted_median(values: Iterable[tuple[float, float]]) -> float:
    """The weighted median of ``(value, weight)`` pairs.

    Sort by value and walk the cumulative weight: the median is the first value where it
    passes half the total; where it lands exactly on half, the midpoint of that value and the
    next (so equal weights give the ordinary median). Zero weights are ignored; when every
    weight is zero, the weights carry no information and all values count equally. The
    result does not depend on the order of the pairs.
    """
    pairs = [(exact(v, "value"), exact(w, "weight")) for v, w in values]
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
    check_settings(min_score, spread_threshold, dissent_threshold, low_confidence)
    if min_calibration_cells < 0:
        raise ValueError("min_calibration_cells must be >= 0")
    families_of = check_candidates(candidates)
    weights = _family_weights(calibration or {}, min_calibration_cells)
    accepted, dropped = _sort_cells(cells, families_of)
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


def _sort_cells(
    cells: Iterable[Cell], families_of: Mapping[str, str]
) -> tuple[dict[str, list[Cell]], list[DroppedCell]]:
    """Each valid cell to its candidate, or to the dropped list with the reason (self-scoring,
    unknown candidate); a seat with two families or a cell given twice raises."""
    accepted: dict[str, list[Cell]] = {label: [] for label in families_of}
    dropped: list[DroppedCell] = []
    seat_family: dict[str, str] = {}
    seen: set[tuple[str, str, str]] = set()
    for cell in cells:
        check_cell(cell)
        fam = family_key(cell.family)
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
    return accepted, dropped


def _score_candidate(
    label: str,
    family: str,
    cells: Sequence[Cell],
    weights: Mapping[str, Fraction],
    settings: _Settings,
    rerun_done: bool,
) -> CandidateScore:
    if not cells:
        return _unscored(label, family)

    def weight(cell: Cell) -> Fraction:
        return _weight_of(weights, cell.family) * Fraction(cell.confidence)

    medians = _row_medians(cells, weight)
    missing = tuple(row for row in ROWS if row not in medians)
    means, judge_w = _judges(cells, weights)
    overall = _weighted_median([(means[s], judge_w[s]) for s in means])
    below, failures = _failures(overall, medians, missing, settings)
    spread, trimmed = _spread(means.values())
    dissents = _dissents(label, cells, medians, settings.dissent_threshold)
    mean_conf = _mean(Fraction(c.confidence) for c in cells)
    fams = tuple(sorted({family_key(c.family) for c in cells}))
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
        rerun_gates=not rerun_done and any(d.cites_test for d in dissents),
        failures=tuple(failures),
        escalations=tuple(_escalations(spread, trimmed, mean_conf, settings)),
        cells=len(cells),
    )


def _unscored(label: str, family: str) -> CandidateScore:
    """A candidate no judge of another family scored: it fails and asks for a human."""
    reason = Reason("unscored", f"no judge of another family scored {label!r}")
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


def _row_medians(cells: Sequence[Cell], weight: Callable[[Cell], Fraction]) -> dict[str, Fraction]:
    """The weighted median of each scored row, in the fixed row order."""
    medians: dict[str, Fraction] = {}
    for row in ROWS:
        in_row = [(Fraction(c.score), weight(c)) for c in cells if c.row == row]
        if in_row:
            medians[row] = _weighted_median(in_row)
    return medians


def _judges(
    cells: Sequence[Cell], weights: Mapping[str, Fraction]
) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Per seat: the plain mean of its scores, and its weight (calibration * mean confidence)."""
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
    return means, judge_w


def _failures(
    overall: Fraction,
    medians: Mapping[str, Fraction],
    missing: tuple[str, ...],
    settings: _Settings,
) -> tuple[tuple[str, ...], list[Reason]]:
    """The pass rule: every row scored, the overall at the line, no row under the floor.
    Returns the rows under the floor and the reasons the candidate fails (none: it passes)."""
    floor = settings.min_score - Fraction(ROW_FLOOR_MARGIN)
    below = tuple(row for row in ROWS if row in medians and medians[row] < floor)
    failures: list[Reason] = []
    if missing:
        failures.append(Reason("missing_rows", f"no score for: {', '.join(missing)}"))
    if overall < settings.min_score:
        failures.append(
            Reason(
                "below_minimum",
                f"weighted median {float(overall):g} is under the minimum "
                f"{float(settings.min_score):g}",
            )
        )
    if below:
        failures.append(
            Reason(
                "row_floor",
                f"row median under {float(floor):g}: "
                + ", ".join(f"{row}={float(medians[row]):g}" for row in below),
            )
        )
    return below, failures


def _spread(means: Iterable[Fraction]) -> tuple[Fraction, bool]:
    """Max - min of the judge means, trimmed of the extremes when there are enough judges."""
    ordered = sorted(means)
    trimmed = len(ordered) >= _TRIM_AT
    if trimmed:
        ordered = ordered[1:-1]
    return ordered[-1] - ordered[0], trimmed


def _dissents(
    label: str, cells: Sequence[Cell], medians: Mapping[str, Fraction], threshold: Fraction
) -> list[Dissent]:
    """The cells further than ``threshold`` from their row median, in row then seat order."""
    dissents: list[Dissent] = []
    for cell in sorted(cells, key=lambda c: (ROWS.index(c.row), c.seat)):
        median = medians[cell.row]
        distance = abs(Fraction(cell.score) - median)
        if distance > threshold:
            dissents.append(
                Dissent(
                    seat=cell.seat,
                    family=family_key(cell.family),
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
    return dissents


def _escalations(
    spread: Fraction, trimmed: bool, mean_conf: Fraction, settings: _Settings
) -> list[Reason]:
    """Why a human should look: judges far apart, or judges unsure."""
    escalations: list[Reason] = []
    if spread > settings.spread_threshold:
        escalations.append(
            Reason(
                "spread",
                f"judge means spread {float(spread):g} "
                f"{'(trimmed) ' if trimmed else ''}"
                f"exceeds {float(settings.spread_threshold):g}",
            )
        )
    if mean_conf < settings.low_confidence:
        escalations.append(
            Reason(
                "low_confidence",
                f"mean confidence {float(mean_conf):g} is under {float(settings.low_confidence):g}",
            )
        )
    return escalations


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
    check_history(agree, total)
    if total < min_cells:
        return _PRIOR
    return Fraction(agree + 1, total + 2)


def _family_weights(
    calibration: Mapping[str, AgreementLike], min_cells: int
) -> dict[str, Fraction]:
    weights: dict[str, Fraction] = {}
    for family, history in calibration.items():
        key = family_key(family)
        if key in weights:
            raise ValueError(f"calibration names family {key!r} twice")
        weights[key] = _calibration(history.agree, history.total, min_cells)
    return weights


def _weight_of(weights: Mapping[str, Fraction], family: str) -> Fraction:
    return weights.get(family_key(family), _PRIOR)


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
