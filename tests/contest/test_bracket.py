"""The step-down bracket: cuts, screen, tie-breaks, records, and invariants."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopcontract.contest import bracket
from pytest_loopcontract.contest.bracket import (
    BracketResult,
    Entrant,
    Round,
    next_round,
    rank,
    run_bracket,
)


def field(*scores: float | None, passed: bool = True) -> list[Entrant]:
    """Entrants c1, c2, ... with the given scores (c1 gets the first)."""
    return [Entrant(f"c{i}", s, passed) for i, s in enumerate(scores, start=1)]


def sizes(result: BracketResult) -> list[int]:
    return [len(result.rounds[0].field_in), *(len(r.field_out) for r in result.rounds)]


def check_records(result: BracketResult) -> None:
    """Every round's books balance, and each round starts where the last one ended."""
    previous = result.screen.field_out
    for number, step in enumerate(result.rounds, start=1):
        assert step.number == number
        assert step.field_in == previous
        assert step.field_out + step.eliminated == step.field_in
        assert step.eliminated
        previous = step.field_out
    assert set(previous) == set(result.finalists)


# --------------------------------------------------------------------------------------------
# cuts


def test_cut_two_from_eight() -> None:
    result = run_bracket(field(9, 8, 7, 6, 5, 4, 3, 2))
    assert sizes(result) == [8, 6, 4, 2]
    assert [r.eliminated for r in result.rounds] == [("c7", "c8"), ("c5", "c6"), ("c3", "c4")]
    assert [r.cut_line for r in result.rounds] == [4, 6, 8]
    assert [r.decided_by for r in result.rounds] == ["score"] * 3
    assert result.finalists == ("c1", "c2")
    assert result.proposed_winner == "c1" and result.decided_by == "score"
    assert "awaiting the human gate" in result.reason
    check_records(result)


def test_halve_from_eight() -> None:
    result = run_bracket(field(9, 8, 7, 6, 5, 4, 3, 2), cut="halve")
    assert sizes(result) == [8, 4, 2]
    assert result.rounds[0].eliminated == ("c5", "c6", "c7", "c8")
    assert result.rounds[0].cut_line == 6
    assert result.rounds[1].eliminated == ("c3", "c4")
    assert result.finalists == ("c1", "c2") and result.proposed_winner == "c1"
    check_records(result)


@pytest.mark.parametrize(
    ("n", "cut", "expected"),
    [
        (7, 2, [7, 5, 3, 2]),
        (5, 2, [5, 3, 2]),
        (3, 2, [3, 2]),
        (7, "halve", [7, 4, 2]),
        (5, "halve", [5, 3, 2]),
        (3, "halve", [3, 2]),
        (9, "halve", [9, 5, 3, 2]),
        (9, 3, [9, 6, 3, 2]),
        (6, 10, [6, 2]),
    ],
)
def test_odd_fields_still_land_on_a_final_two(n: int, cut: Any, expected: list[int]) -> None:
    result = run_bracket(field(*range(n, 0, -1)), cut=cut)
    assert sizes(result) == expected
    assert len(result.finalists) == 2
    check_records(result)


def test_last_round_is_capped_and_says_so() -> None:
    result = run_bracket(field(5, 4, 3))
    [step] = result.rounds
    assert step.eliminated == ("c3",)
    assert "capped" in step.reason and "1 of 3" in step.reason


def test_two_survivors_need_no_rounds() -> None:
    result = run_bracket(field(6, 8))
    assert result.rounds == ()
    assert result.finalists == ("c2", "c1") and result.proposed_winner == "c2"


def test_a_larger_final() -> None:
    result = run_bracket(field(9, 8, 7, 6, 5, 4), final=3)
    assert sizes(result) == [6, 4, 3]
    assert result.finalists == ("c1", "c2", "c3") and result.proposed_winner == "c1"


def test_final_of_one_ends_the_bracket_on_the_winner() -> None:
    result = run_bracket(field(9, 8, 7), final=1)
    assert sizes(result) == [3, 1]
    assert result.finalists == ("c1",) and result.proposed_winner == "c1"
    assert result.decided_by is None


# --------------------------------------------------------------------------------------------
# the screen


def test_matrix_failers_leave_before_the_cut() -> None:
    entrants = [*field(5, 4, 3, 2), Entrant("x1", 10, False), Entrant("x2", 9.5, False)]
    result = run_bracket(entrants)
    assert result.screen.number == 0
    assert result.screen.eliminated == ("x1", "x2")
    assert result.screen.field_out == ("c1", "c2", "c3", "c4")
    assert result.screen.cut_line is None and result.screen.decided_by == "matrix"
    # The cut then works on passers only: 4 -> 2, and no failer appears in any round.
    assert sizes(result) == [4, 2]
    assert all(not {"x1", "x2"} & set(r.field_in) for r in result.rounds)
    assert result.finalists == ("c1", "c2")
    check_records(result)


def test_everyone_passed_screen_is_recorded_empty() -> None:
    result = run_bracket(field(3, 2, 1))
    assert result.screen.eliminated == () and result.screen.decided_by is None
    assert result.screen.reason == "all passed"


def test_a_lone_survivor_wins_without_rounds() -> None:
    result = run_bracket([Entrant("solo", 3, True), *field(9, 9, passed=False)])
    assert result.rounds == ()
    assert result.finalists == ("solo",) and result.proposed_winner == "solo"
    assert "only candidate" in result.reason


def test_no_survivor_no_winner() -> None:
    result = run_bracket(field(9, 8, passed=False))
    assert result.proposed_winner is None and result.finalists == () and result.rounds == ()
    assert result.reason == "no candidate passed the validity matrix"
    empty = run_bracket([])
    assert empty.proposed_winner is None and empty.reason == "no candidates entered"


# --------------------------------------------------------------------------------------------
# ranking and tie-breaks


def test_ties_go_to_fewer_tokens_then_shorter_time_then_label() -> None:
    entrants = [
        Entrant("slow", 8, True, tokens=100, seconds=60),
        Entrant("fast", 8, True, tokens=100, seconds=30),
        Entrant("cheap", 8, True, tokens=50, seconds=90),
        Entrant("b-twin", 8, True, tokens=100, seconds=60),
        Entrant("best", 9, True, tokens=10_000, seconds=999),
    ]
    assert [e.label for e in rank(entrants)] == ["best", "cheap", "fast", "b-twin", "slow"]


def test_unknown_cost_sorts_after_known() -> None:
    entrants = [
        Entrant("silent", 8, True),
        Entrant("no-time", 8, True, tokens=900),
        Entrant("no-tokens", 8, True, seconds=1),
        Entrant("known", 8, True, tokens=900, seconds=500),
    ]
    assert [e.label for e in rank(entrants)] == ["known", "no-time", "no-tokens", "silent"]


def test_unknown_score_ranks_last() -> None:
    assert [e.label for e in rank([Entrant("n", None, True), *field(0)])] == ["c1", "n"]


@pytest.mark.parametrize(
    ("loser", "decided_by"),
    [
        (Entrant("z", 7, True, tokens=5, seconds=5), "score"),
        (Entrant("z", 8, True, tokens=11, seconds=5), "tokens"),
        (Entrant("z", 8, True, tokens=10, seconds=6), "seconds"),
        (Entrant("z", 8, True, tokens=10, seconds=5), "label"),
        (Entrant("z", 8, True, tokens=None, seconds=1), "tokens"),
    ],
)
def test_the_record_names_the_key_that_decided_the_cut(loser: Entrant, decided_by: str) -> None:
    entrants = [Entrant("top", 9, True), Entrant("a", 8, True, tokens=10, seconds=5), loser]
    result = run_bracket(entrants)
    [step] = result.rounds
    assert step.eliminated == ("z",)
    assert step.decided_by == decided_by
    assert step.cut_line == 8
    assert result.proposed_winner == "top"


def test_final_two_tie_decided_by_tokens() -> None:
    result = run_bracket([Entrant("a", 8, True, tokens=300), Entrant("b", 8, True, tokens=200)])
    assert result.finalists == ("b", "a") and result.proposed_winner == "b"
    assert result.decided_by == "tokens" and "by tokens" in result.reason


def test_next_round_alone_for_rescoring_between_rounds() -> None:
    step = next_round(field(1, 5, 3, 4), number=3, cut="halve")
    assert step == Round(
        number=3,
        field_in=("c2", "c4", "c3", "c1"),
        field_out=("c2", "c4"),
        eliminated=("c3", "c1"),
        cut_line=4,
        decided_by="score",
        reason="half the field: 2 of 4 leave",
    )
    idle = next_round(field(1, 2), number=1)
    assert idle.eliminated == () and idle.field_out == idle.field_in


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "options", [{"cut": 0}, {"cut": -2}, {"cut": "third"}, {"cut": True}, {"final": 0}], ids=str
)
def test_bad_parameters_raise(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        run_bracket(field(3, 2, 1), **options)


def test_duplicate_labels_raise() -> None:
    with pytest.raises(ValueError, match="two entrants"):
        run_bracket([Entrant("a", 1, True), Entrant("a", 2, False)])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": "", "score": 1.0},
        {"label": "a", "score": math.nan},
        {"label": "a", "score": math.inf},
        {"label": "a", "score": 1.0, "tokens": -1},
        {"label": "a", "score": 1.0, "tokens": 1.5},
        {"label": "a", "score": 1.0, "seconds": -0.1},
        {"label": "a", "score": 1.0, "seconds": math.nan},
    ],
    ids=str,
)
def test_bad_entrants_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Entrant(passed_matrix=True, **kwargs)


def test_module_is_pure() -> None:
    source = Path(bracket.__file__).read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports, "expected stdlib imports"
    assert not any("pytest_loopcontract" in line or line.startswith("from .") for line in imports)


# --------------------------------------------------------------------------------------------
# invariants (hypothesis)

entrants_strategy = st.lists(
    st.builds(
        Entrant,
        label=st.text("abcdef", min_size=1, max_size=3),
        score=st.none() | st.integers(0, 20).map(lambda n: n / 2),
        passed_matrix=st.booleans(),
        tokens=st.none() | st.integers(0, 5),
        seconds=st.none() | st.sampled_from([0.0, 1.5, 3.0]),
    ),
    max_size=12,
    unique_by=lambda e: e.label,
)
cuts = st.sampled_from([1, 2, 3, "halve"])


@settings(max_examples=300, deadline=None)
@given(entrants_strategy, cuts, st.integers(1, 3), st.data())
def test_bracket_invariants(
    entrants: list[Entrant], cut: Any, final: int, data: st.DataObject
) -> None:
    result = run_bracket(entrants, cut=cut, final=final)
    passers = [e for e in entrants if e.passed_matrix]
    failers = {e.label for e in entrants if not e.passed_matrix}

    # Input order never matters.
    assert run_bracket(data.draw(st.permutations(entrants)), cut=cut, final=final) == result

    # Failers leave at the screen and never reach a round.
    assert set(result.screen.eliminated) == failers
    assert all(not failers & set(r.field_in) for r in result.rounds)

    # Always the final size when enough survive; the winner is the best-ranked passer.
    assert len(result.finalists) == min(final, len(passers))
    if passers:
        assert result.proposed_winner == rank(passers)[0].label
        assert set(result.finalists) == {e.label for e in rank(passers)[:final]}
    else:
        assert result.proposed_winner is None

    # Rounds shrink the field, never below the final, and every passer leaves exactly once.
    check_records(result)
    counts = [len(r.field_out) for r in result.rounds]
    assert counts == sorted(counts, reverse=True) and all(c >= final for c in counts)
    gone = [label for r in result.rounds for label in r.eliminated]
    assert sorted(gone + list(result.finalists)) == sorted(e.label for e in passers)
    if isinstance(cut, int):
        assert all(len(r.eliminated) <= cut for r in result.rounds)
    # Nobody eliminated outranks anybody kept in the same round.
    by_label = {e.label: e for e in entrants}
    for step in result.rounds:
        kept = rank(by_label[x] for x in step.field_out)
        out = rank(by_label[x] for x in step.eliminated)
        assert rank([kept[-1], out[0]])[0] is kept[-1]
        assert step.cut_line == kept[-1].score
