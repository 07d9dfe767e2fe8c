"""The validity matrix: worked examples with hand-computed numbers, each rule, and invariants."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_loopcontract import reason
from pytest_loopcontract.contest import matrix, matrix_model
from pytest_loopcontract.contest.matrix import (
    calibration_weight,
    cites_test,
    score_matrix,
    weighted_median,
)
from pytest_loopcontract.contest.matrix_model import (
    ROWS,
    CandidateScore,
    Cell,
    FamilyHistory,
    MatrixResult,
)

QF, COMP, EV, TA = ROWS


def judge(
    seat: str,
    family: str,
    candidate: str,
    scores: Iterable[float],
    confidence: float = 1.0,
    evidence: str = "",
    rationale: str = "",
) -> list[Cell]:
    """One judge's four cells for one candidate, rows in ROWS order."""
    return [
        Cell(seat, family, candidate, row, score, confidence, evidence, rationale)
        for row, score in zip(ROWS, scores, strict=True)
    ]


def run(
    cells: Iterable[Cell],
    candidates: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> MatrixResult:
    options: dict[str, Any] = {"min_score": 7.0, "spread_threshold": 3.0, "dissent_threshold": 3.0}
    options.update(kwargs)
    return score_matrix(list(cells), candidates or {"a": "alpha"}, **options)


# --------------------------------------------------------------------------------------------
# building blocks


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([(1, 1), (2, 1), (3, 1)], 2.0),
        ([(1, 1), (2, 1)], 1.5),  # cumulative lands exactly on half: midpoint
        ([(3, 1), (1, 1), (4, 1), (2, 1)], 2.5),
        ([(1, 3), (10, 1)], 1.0),  # heavy low value wins
        ([(1, 1), (10, 3)], 10.0),
        ([(1, 1), (5, 0), (9, 1)], 5.0),  # zero weight ignored: midpoint of 1 and 9
        ([(1, 0), (2, 0), (7, 0)], 2.0),  # all zero: plain median
        ([(4, 0.25), (4, 0.25), (6, 0.5)], 5.0),  # equal values pool their weight
        ([(6, 0.25), (8, 0.5), (9, 0.5)], 8.0),
    ],
)
def test_weighted_median(pairs: list[tuple[float, float]], expected: float) -> None:
    assert weighted_median(pairs) == expected


@pytest.mark.parametrize(
    "pairs", [[], [(1.0, -1.0)], [(math.nan, 1.0)], [(1.0, math.inf)]], ids=str
)
def test_weighted_median_rejects_bad_input(pairs: list[tuple[float, float]]) -> None:
    with pytest.raises(ValueError):
        weighted_median(pairs)


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 5)), min_size=1, max_size=9), st.data())
def test_weighted_median_order_free_and_bounded(
    pairs: list[tuple[float, float]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(pairs))
    value = weighted_median(pairs)
    assert weighted_median(shuffled) == value
    assert min(v for v, _ in pairs) <= value <= max(v for v, _ in pairs)


def test_calibration_weight_prior_until_five_cells_then_laplace() -> None:
    assert calibration_weight(0, 0) == 0.5
    assert calibration_weight(4, 4) == 0.5  # four perfect cells: still too thin to count
    assert calibration_weight(0, 4) == 0.5
    assert calibration_weight(5, 5) == pytest.approx(6 / 7)
    assert calibration_weight(0, 5) == pytest.approx(1 / 7)
    assert calibration_weight(4, 5) == pytest.approx(5 / 7)
    assert calibration_weight(10, 10) == pytest.approx(11 / 12)
    assert calibration_weight(50, 100) == 0.5
    assert calibration_weight(2, 3, min_cells=3) == pytest.approx(3 / 5)
    for bad in [(-1, 3), (4, 3), (1, -1)]:
        with pytest.raises(ValueError):
            calibration_weight(*bad)
    with pytest.raises(ValueError):
        FamilyHistory(6, 5)


@given(st.integers(0, 500), st.integers(0, 500))
def test_calibration_weight_strictly_inside_zero_one(a: int, b: int) -> None:
    agree, total = min(a, b), max(a, b)
    assert 0 < calibration_weight(agree, total) < 1


@pytest.mark.parametrize(
    ("evidence", "rationale", "expected"),
    [
        ("tests/test_slug.py::test_empty", "", True),
        ("test_slug.py::TestX::test_y[1]", "", True),
        ("", "fails: tests/unit/test_a.py::test_b", True),
        ("tests/test_slug.py", "", True),
        ("slug_test.py line 4", "", True),
        ("test_unicode_input fails", "", True),
        ("src/slug.py:12", "", False),
        ("test_agreement", "", False),
        ("", "the test_agreement row is weak; test_ coverage thin", False),
        ("", "", False),
    ],
)
def test_cites_test(evidence: str, rationale: str, expected: bool) -> None:
    assert cites_test(evidence, rationale) is expected


# --------------------------------------------------------------------------------------------
# worked example


def worked_example_cells() -> list[Cell]:
    return [
        *judge("b", "beta", "a", [8, 7, 6, 9]),  # mean 7.5, weight 0.5 * 1.0
        *judge("c", "gamma", "a", [6, 6, 5, 7], confidence=0.5, rationale="misses the edge"),
        *judge("d", "delta", "a", [9, 8, 7, 8]),  # mean 8, weight 0.5 * 1.0
    ]


def test_worked_example_by_hand() -> None:
    # Weights: b 0.5, c 0.25, d 0.5 (no history: prior 0.5 times confidence); half = 0.625.
    # question_fidelity 6(.25) 8(.5) 9(.5): cumulative .25, .75 > .625 -> 8. Likewise the rest.
    # Judge means 6(.25) 7.5(.5) 8(.5) -> 7.5 >= 7; floor 5: every row median clears it.
    result = run(worked_example_cells(), dissent_threshold=1.5, spread_threshold=3.0)
    score = result.candidates["a"]
    assert score.row_medians == {QF: 8.0, COMP: 7.0, EV: 6.0, TA: 8.0}
    assert score.judge_means == {"b": 7.5, "c": 6.0, "d": 8.0}
    assert score.judge_weights == {"b": 0.5, "c": 0.25, "d": 0.5}
    assert score.overall == 7.5
    assert score.passed and score.failures == ()
    assert score.spread == 2.0 and not score.spread_trimmed
    assert score.mean_confidence == pytest.approx(10 / 12)
    assert score.families == ("beta", "delta", "gamma") and not score.degraded
    assert score.escalations == () and not score.escalated
    # Only c's question_fidelity 6 is more than 1.5 from its median 8.
    [dissent] = score.dissents
    assert (dissent.seat, dissent.row, dissent.score, dissent.row_median, dissent.distance) == (
        "c",
        QF,
        6,
        8.0,
        2.0,
    )
    assert dissent.rationale == "misses the edge" and not dissent.cites_test
    assert result.rerun_gates == () and result.passed == ("a",) and result.dropped == ()
    assert score.cells == 12


def test_worked_example_spread_escalates_above_threshold() -> None:
    score = run(worked_example_cells(), spread_threshold=1.5).candidates["a"]
    assert score.passed  # escalation asks a human; it does not fail the candidate
    assert [e.code for e in score.escalations] == ["spread"]
    assert run(worked_example_cells(), spread_threshold=2.0).candidates["a"].escalations == ()


# --------------------------------------------------------------------------------------------
# the pass rule


def test_overall_exactly_at_minimum_passes_and_just_under_fails() -> None:
    cells = [*judge("b", "beta", "a", [7, 7, 7, 7]), *judge("c", "gamma", "a", [7, 7, 7, 7])]
    assert run(cells).candidates["a"].passed
    cells = [*judge("b", "beta", "a", [7, 7, 7, 6.5]), *judge("c", "gamma", "a", [7, 7, 7, 7])]
    score = run(cells).candidates["a"]
    # Means 6.875 and 7 with equal weight: exactly half each, midpoint 6.9375.
    assert score.overall == 6.9375
    assert not score.passed
    assert [f.code for f in score.failures] == ["below_minimum"]


def test_one_row_under_the_floor_fails_a_high_overall() -> None:
    cells = [*judge("b", "beta", "a", [10, 10, 4, 10]), *judge("c", "gamma", "a", [10, 10, 4, 10])]
    score = run(cells, min_score=7).candidates["a"]
    assert score.overall == 8.5
    assert score.below_floor == (EV,)
    assert not score.passed
    assert [f.code for f in score.failures] == ["row_floor"]


def test_row_exactly_at_the_floor_passes() -> None:
    cells = [*judge("b", "beta", "a", [10, 10, 5, 10]), *judge("c", "gamma", "a", [10, 10, 5, 10])]
    score = run(cells, min_score=7).candidates["a"]
    assert score.below_floor == () and score.passed


def test_missing_row_fails() -> None:
    cells = judge("b", "beta", "a", [9, 9, 9, 9])[:3] + judge("c", "gamma", "a", [9, 9, 9, 9])[:3]
    score = run(cells).candidates["a"]
    assert score.missing_rows == (TA,)
    assert not score.passed
    assert [f.code for f in score.failures] == ["missing_rows"]


def test_unscored_candidate_fails_and_escalates() -> None:
    result = run(judge("b", "beta", "a", [9, 9, 9, 9]), {"a": "alpha", "z": "zeta"})
    z = result.candidates["z"]
    assert not z.passed and z.overall is None and z.degraded
    assert [f.code for f in z.failures] == ["unscored"]
    assert [e.code for e in z.escalations] == ["unscored"]
    assert result.passed == ("a",) and result.failed == ("z",) and result.escalated == ("z",)


# --------------------------------------------------------------------------------------------
# spread, dissent, confidence, degraded


def five_judges(means: list[float]) -> list[Cell]:
    families = ["beta", "gamma", "delta", "eps", "zeta"]
    return [
        cell for i, m in enumerate(means) for cell in judge(f"j{i}", families[i], "a", [m, m, m, m])
    ]


def test_spread_is_trimmed_with_five_judges() -> None:
    score = run(five_judges([2, 6, 6.5, 7, 10]), spread_threshold=2.0).candidates["a"]
    # Without 2 and 10 the spread is 7 - 6 = 1.
    assert score.spread_trimmed and score.spread == 1.0
    assert "spread" not in [e.code for e in score.escalations]


def test_spread_is_not_trimmed_with_four_judges() -> None:
    score = run(five_judges([2, 6, 7, 10])[:16], spread_threshold=2.0).candidates["a"]
    assert not score.spread_trimmed and score.spread == 8.0
    assert "spread" in [e.code for e in score.escalations]


def test_trimmed_spread_still_escalates_when_the_middle_disagrees() -> None:
    score = run(five_judges([1, 2, 5, 9, 10]), spread_threshold=2.0).candidates["a"]
    assert score.spread_trimmed and score.spread == 7.0
    assert "spread" in [e.code for e in score.escalations]


def test_dissent_citing_a_test_reruns_the_gates_once() -> None:
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8]),
        *judge("c", "gamma", "a", [8, 8, 8, 8]),
        *judge(
            "d",
            "delta",
            "a",
            [8, 8, 8, 2],
            evidence="tests/test_slug.py::test_empty_string",
            rationale="the empty-string test fails when I run it",
        ),
    ]
    result = run(cells, dissent_threshold=3.0)
    score = result.candidates["a"]
    [dissent] = score.dissents
    assert (dissent.seat, dissent.row, dissent.score, dissent.row_median) == ("d", TA, 2, 8.0)
    assert dissent.cites_test and dissent.rationale.startswith("the empty-string")
    assert dissent.evidence == "tests/test_slug.py::test_empty_string"
    assert score.rerun_gates and result.rerun_gates == ("a",)
    # After the one re-run, the same matrix does not ask again.
    again = run(cells, dissent_threshold=3.0, rerun_done={"a"})
    assert again.rerun_gates == () and again.candidates["a"].dissents == score.dissents


def test_dissent_without_a_test_does_not_rerun() -> None:
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8]),
        *judge("c", "gamma", "a", [8, 8, 8, 8]),
        *judge("d", "delta", "a", [8, 8, 8, 2], evidence="src/slug.py:40"),
    ]
    result = run(cells, dissent_threshold=3.0)
    assert len(result.candidates["a"].dissents) == 1
    assert result.rerun_gates == ()


def test_distance_equal_to_threshold_is_not_dissent() -> None:
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8]),
        *judge("c", "gamma", "a", [8, 8, 8, 8]),
        *judge("d", "delta", "a", [8, 8, 8, 5], evidence="tests/test_x.py::test_y"),
    ]
    result = run(cells, dissent_threshold=3.0)
    assert result.candidates["a"].dissents == () and result.rerun_gates == ()


@pytest.mark.parametrize(("confidence", "escalates"), [(0.3, True), (0.39, True), (0.4, False)])
def test_low_mean_confidence_escalates(confidence: float, escalates: bool) -> None:
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8], confidence=confidence),
        *judge("c", "gamma", "a", [8, 8, 8, 8], confidence=confidence),
    ]
    score = run(cells).candidates["a"]
    assert score.passed
    assert ("low_confidence" in [e.code for e in score.escalations]) is escalates


def test_mixed_confidence_uses_the_mean_over_all_cells() -> None:
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8], confidence=0.1),
        *judge("c", "gamma", "a", [8, 8, 8, 8], confidence=0.6),
    ]
    score = run(cells).candidates["a"]
    assert score.mean_confidence == pytest.approx(0.35)
    assert [e.code for e in score.escalations] == ["low_confidence"]


def test_one_family_is_degraded_but_can_still_pass() -> None:
    cells = [*judge("b1", "beta", "a", [9, 9, 9, 9]), *judge("b2", "beta", "a", [8, 8, 8, 8])]
    score = run(cells).candidates["a"]
    assert score.families == ("beta",) and score.degraded
    assert score.passed
    two = run([*cells, *judge("c", "gamma", "a", [8, 8, 8, 8])]).candidates["a"]
    assert two.families == ("beta", "gamma") and not two.degraded


# --------------------------------------------------------------------------------------------
# calibration


def disagreeing_pair() -> list[Cell]:
    return [*judge("b", "beta", "a", [8, 8, 8, 8]), *judge("c", "gamma", "a", [4, 4, 4, 4])]


def test_calibration_ignored_before_five_cells() -> None:
    score = run(disagreeing_pair(), calibration={"beta": FamilyHistory(4, 4)}).candidates["a"]
    assert score.judge_weights == {"b": 0.5, "c": 0.5}
    assert score.row_medians[QF] == 6.0 and score.overall == 6.0


def test_calibration_used_from_five_cells() -> None:
    result = run(disagreeing_pair(), calibration={"beta": FamilyHistory(5, 5)})
    score = result.candidates["a"]
    # beta weighs 6/7 against gamma's prior 1/2, so beta's 8 is the weighted median.
    assert score.judge_weights == {"b": pytest.approx(6 / 7), "c": 0.5}
    assert score.row_medians == dict.fromkeys(ROWS, 8.0) and score.overall == 8.0
    assert result.calibration == {"beta": pytest.approx(6 / 7)}


def test_calibration_accepts_any_agree_total_record() -> None:
    class Agreement(NamedTuple):  # the shape the ledger reports
        agree: int
        total: int

    score = run(disagreeing_pair(), calibration={"beta": Agreement(5, 5)}).candidates["a"]
    assert score.overall == 8.0
    with pytest.raises(ValueError):
        run(disagreeing_pair(), calibration={"beta": Agreement(6, 5)})


def test_a_poor_record_lowers_weight() -> None:
    calibration = {"Beta": FamilyHistory(0, 8), "gamma": FamilyHistory(9, 10)}
    score = run(disagreeing_pair(), calibration=calibration).candidates["a"]
    assert score.judge_weights == {"b": pytest.approx(0.1), "c": pytest.approx(10 / 12)}
    assert score.overall == 4.0


def test_calibration_times_confidence_weights_each_cell() -> None:
    # beta: 6/7 * 0.5 = 3/7; gamma: 1/2 * 1.0 = 1/2 -> gamma is heavier.
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8], confidence=0.5),
        *judge("c", "gamma", "a", [4, 4, 4, 4]),
    ]
    score = run(cells, calibration={"beta": FamilyHistory(5, 5)}).candidates["a"]
    assert score.judge_weights["b"] == pytest.approx(3 / 7)
    assert score.row_medians[QF] == 4.0 and score.overall == 4.0


# --------------------------------------------------------------------------------------------
# self-scoring and malformed input


def test_self_family_cells_are_dropped_and_reported() -> None:
    honest = [*judge("b", "beta", "a", [5, 5, 5, 5]), *judge("c", "gamma", "a", [5, 5, 5, 5])]
    selfish = judge("a2", " Alpha", "a", [10, 10, 10, 10])  # same vendor, odd spelling
    result = run([*honest, *selfish])
    assert result.candidates["a"] == run(honest).candidates["a"]
    assert [d.reason for d in result.dropped] == ["self_family"] * 4
    assert {d.cell for d in result.dropped} == set(selfish)
    assert "alpha" not in result.candidates["a"].families


def test_a_seat_cannot_score_its_own_candidate_under_another_family() -> None:
    candidates = {"a": "alpha", "b": "beta"}
    cells = [
        *judge("b", "beta", "a", [8, 8, 8, 8]),
        *judge("a", "gamma", "a", [10, 10, 10, 10]),  # seat a scoring candidate a
        *judge("a", "gamma", "b", [9, 9, 9, 9]),  # a scoring another vendor's candidate: kept
        *judge("x", "delta", "b", [9, 9, 9, 9]),
    ]
    result = run(cells, candidates)
    assert {d.reason for d in result.dropped} == {"self_seat"}
    assert len(result.dropped) == 4
    assert result.candidates["a"].judge_means == {"b": 8.0}


def test_a_seat_that_is_a_candidate_is_of_its_candidates_family() -> None:
    candidates = {"a": "alpha", "a-bis": "alpha"}
    cells = judge("a", "gamma", "a-bis", [10, 10, 10, 10])  # claims gamma, is alpha's seat
    result = run(cells, candidates)
    assert [d.reason for d in result.dropped] == ["self_family"] * 4
    assert result.candidates["a-bis"].cells == 0


def test_cells_for_unknown_candidates_are_dropped() -> None:
    result = run(judge("b", "beta", "ghost", [9, 9, 9, 9]))
    assert {d.reason for d in result.dropped} == {"unknown_candidate"}


@pytest.mark.parametrize(
    "bad",
    [
        Cell("b", "beta", "a", "style", 5, 1),
        Cell("b", "beta", "a", QF, 11, 1),
        Cell("b", "beta", "a", QF, -1, 1),
        Cell("b", "beta", "a", QF, math.nan, 1),
        Cell("b", "beta", "a", QF, 5, 1.5),
        Cell("b", "beta", "a", QF, 5, -0.1),
        Cell("", "beta", "a", QF, 5, 1),
        Cell("b", " ", "a", QF, 5, 1),
    ],
    ids=repr,
)
def test_malformed_cells_raise(bad: Cell) -> None:
    with pytest.raises(ValueError):
        run([bad])


def test_duplicate_cell_and_two_families_for_one_seat_raise() -> None:
    cell = Cell("b", "beta", "a", QF, 5, 1)
    with pytest.raises(ValueError, match="twice"):
        run([cell, replace(cell, score=6)])
    with pytest.raises(ValueError, match="two families"):
        run([cell, replace(cell, family="gamma", row=EV)])


@pytest.mark.parametrize(
    "options",
    [
        {"min_score": 11},
        {"min_score": math.nan},
        {"spread_threshold": -1},
        {"dissent_threshold": -0.5},
        {"low_confidence": 2},
        {"min_calibration_cells": -1},
    ],
    ids=str,
)
def test_bad_settings_raise(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        run([], **options)


def test_bad_candidates_and_duplicate_calibration_raise() -> None:
    with pytest.raises(ValueError):
        run([], {"a": ""})
    with pytest.raises(ValueError, match="twice"):
        run([], calibration={"Beta": FamilyHistory(1, 1), "beta": FamilyHistory(1, 1)})


def test_module_is_pure() -> None:
    """The scoring imports the stdlib, the matrix's own data and the pure reason type only; the
    data, the stdlib and the reason type only; that, the stdlib only (so no I/O module comes
    in through it)."""
    for module, allowed in (
        (matrix, ("pytest_loopcontract.contest.matrix_model", "pytest_loopcontract.reason")),
        (matrix_model, ("pytest_loopcontract.reason",)),
        (reason, ()),
    ):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
        assert imports, "expected stdlib imports"
        own = [
            line for line in imports if "pytest_loopcontract" in line or line.startswith("from .")
        ]
        assert all(line.split()[1] in allowed for line in own), own


# --------------------------------------------------------------------------------------------
# invariants (hypothesis)

NAMES = [f"n{i}" for i in range(6)]
FAMILIES = ["alpha", "beta", "gamma", "delta"]
EVIDENCE = ["", "src/a.py:3", "tests/test_a.py::test_b", "test_agreement"]
HALF_STEPS = st.integers(0, 20).map(lambda n: n / 2)
CONFIDENCE = st.sampled_from([0.0, 0.2, 0.35, 0.5, 0.8, 1.0])


@st.composite
def contests(
    draw: st.DrawFn, scores: st.SearchStrategy[float] = HALF_STEPS
) -> tuple[list[Cell], dict[str, str], dict[str, Any]]:
    """A small contest: candidates and seats share one name space, as they do for real."""
    labels = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    candidates = {label: draw(st.sampled_from(FAMILIES)) for label in labels}
    seats = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    seat_family = {s: candidates.get(s) or draw(st.sampled_from(FAMILIES)) for s in seats}
    cells: list[Cell] = []
    for seat in seats:
        for label in labels:
            rows = draw(st.sampled_from([ROWS, ROWS, ROWS, (), ROWS[:2]]))
            confidence = draw(CONFIDENCE)
            for row in rows:
                cells.append(
                    Cell(
                        seat,
                        seat_family[seat],
                        label,
                        row,
                        draw(scores),
                        confidence,
                        draw(st.sampled_from(EVIDENCE)),
                        "because",
                    )
                )
    calibration = {
        fam: FamilyHistory(agree, agree + extra)
        for fam in draw(st.lists(st.sampled_from(FAMILIES), unique=True))
        for agree, extra in [(draw(st.integers(0, 8)), draw(st.integers(0, 8)))]
    }
    options = {
        "min_score": draw(st.sampled_from([4.0, 5.0, 6.0, 7.0])),
        "spread_threshold": draw(st.sampled_from([1.0, 2.5, 4.0])),
        "dissent_threshold": draw(st.sampled_from([1.0, 2.0, 3.0])),
        "calibration": calibration,
    }
    return cells, candidates, options


def projection(
    score: CandidateScore, seat_name: Mapping[str, str], family_name: Mapping[str, str]
) -> tuple[Any, ...]:
    """Everything about a score that must survive renaming seats, candidates and families."""
    return (
        family_name[score.family],
        score.passed,
        score.overall,
        score.row_medians,
        score.missing_rows,
        score.below_floor,
        {seat_name[s]: m for s, m in score.judge_means.items()},
        {seat_name[s]: w for s, w in score.judge_weights.items()},
        score.spread,
        score.spread_trimmed,
        score.mean_confidence,
        sorted(family_name[f] for f in score.families),
        score.degraded,
        score.rerun_gates,
        tuple(f.code for f in score.failures),
        tuple(e.code for e in score.escalations),
        sorted(
            (seat_name[d.seat], d.row, d.score, d.row_median, d.cites_test) for d in score.dissents
        ),
        score.cells,
    )


@settings(max_examples=80, deadline=None)
@given(contests(), st.data())
def test_order_of_cells_does_not_matter(
    contest: tuple[list[Cell], dict[str, str], dict[str, Any]], data: st.DataObject
) -> None:
    cells, candidates, options = contest
    shuffled = data.draw(st.permutations(cells))
    reordered = dict(reversed(list(candidates.items())))
    expected = score_matrix(cells, candidates, **options)
    assert score_matrix(shuffled, reordered, **options) == expected


@settings(max_examples=80, deadline=None)
@given(contests(), st.permutations(NAMES), st.permutations(FAMILIES))
def test_renaming_judges_and_labels_does_not_change_results(
    contest: tuple[list[Cell], dict[str, str], dict[str, Any]],
    new_names: list[str],
    new_families: list[str],
) -> None:
    cells, candidates, options = contest
    name = dict(zip(NAMES, new_names, strict=True))
    fam = dict(zip(FAMILIES, new_families, strict=True))
    renamed_cells = [
        replace(c, seat=name[c.seat], candidate=name[c.candidate], family=fam[c.family])
        for c in cells
    ]
    renamed_candidates = {name[label]: fam[f] for label, f in candidates.items()}
    renamed_options = {
        **options,
        "calibration": {fam[f]: h for f, h in options["calibration"].items()},
    }
    before = score_matrix(cells, candidates, **options)
    after = score_matrix(renamed_cells, renamed_candidates, **renamed_options)
    same_name = {n: n for n in NAMES}
    same_family = {f: f for f in FAMILIES}
    for label, score in before.candidates.items():
        theirs = after.candidates[name[label]]
        assert projection(score, name, fam) == projection(theirs, same_name, same_family)
    assert sorted(name[c] for c in before.rerun_gates) == list(after.rerun_gates)
    assert sorted((name[d.cell.seat], d.reason) for d in before.dropped) == sorted(
        (d.cell.seat, d.reason) for d in after.dropped
    )


@settings(max_examples=80, deadline=None)
@given(contests(), st.data())
def test_a_self_cell_never_enters(
    contest: tuple[list[Cell], dict[str, str], dict[str, Any]], data: st.DataObject
) -> None:
    cells, candidates, options = contest
    base = score_matrix(cells, candidates, **options)
    for label, score in base.candidates.items():
        assert candidates[label] not in score.families
        assert label not in score.judge_means
    # Add same-family cells with arbitrary scores from fresh seats: nothing but `dropped` moves.
    extra: list[Cell] = []
    for i, (label, family) in enumerate(sorted(candidates.items())):
        for row in data.draw(st.lists(st.sampled_from(ROWS), unique=True)):
            extra.append(
                Cell(f"self{i}", family.upper(), label, row, data.draw(HALF_STEPS), 1.0, "", "")
            )
    mixed = data.draw(st.permutations(cells + extra))
    result = score_matrix(mixed, candidates, **options)
    assert result.candidates == base.candidates
    assert result.rerun_gates == base.rerun_gates
    assert len(result.dropped) == len(base.dropped) + len(extra)
    assert set(extra) <= {d.cell for d in result.dropped}
    accepted = sum(s.cells for s in result.candidates.values())
    assert accepted + len(result.dropped) == len(mixed)


@settings(max_examples=80, deadline=None)
@given(contests(scores=st.integers(6, 20).map(lambda n: n / 2)), CONFIDENCE, st.data())
def test_an_agreeing_judge_never_drops_a_passing_candidate(
    contest: tuple[list[Cell], dict[str, str], dict[str, Any]],
    confidence: float,
    data: st.DataObject,
) -> None:
    cells, candidates, options = contest
    base = score_matrix(cells, candidates, **options)
    assume(base.passed)
    label = data.draw(st.sampled_from(base.passed))
    line = options["min_score"]
    # "Agrees": on its own, this judge's scores would pass the candidate by the same rule
    # (mean at or above the line, no row under the floor). Draw rows at or above the floor,
    # then lift the lowest until the mean reaches the line.
    floor_steps = int((line - 2) * 2)
    scores = data.draw(st.lists(st.integers(floor_steps, 20), min_size=4, max_size=4))
    while sum(scores) < line * 2 * 4:
        scores[scores.index(min(scores))] += 1
    family = data.draw(st.sampled_from([f for f in [*FAMILIES, "omega"] if f != candidates[label]]))
    extra = judge("newcomer", family, label, [n / 2 for n in scores], confidence=confidence)
    after = score_matrix([*cells, *extra], candidates, **options)
    score = after.candidates[label]
    assert score.passed, score.failures
    assert score.overall is not None and score.overall >= line
