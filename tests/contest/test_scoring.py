"""Scoring the survivors (contest/scoring.py), the one set of rules a local run and the GitHub
Action share: real matrix arithmetic and a real bracket, no stand-ins."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_loopcontract.contest.matrix_model import ROWS, Cell, MatrixResult
from pytest_loopcontract.contest.panel import PanelSettings
from pytest_loopcontract.contest.scoring import (
    SOLE_SURVIVOR_REASON,
    Contender,
    Scoring,
    judge_contenders,
    run_status,
    score_cells,
    sole_survivor,
)

SETTINGS = PanelSettings(min_score=6.0, spread_threshold=3.0, dissent_threshold=3.0)
JUDGES = [("j-red", "red"), ("j-blue", "blue"), ("j-green", "green")]
# Not in label order, so a rule that follows the field's order instead of the matrix's shows.
FIELD = [
    Contender("gamma", "green", tokens=100, seconds=1.0),
    Contender("beta", "blue", tokens=100, seconds=1.0),
    Contender("alpha", "red", tokens=100, seconds=1.0),
    Contender("delta", "violet", tokens=100, seconds=1.0),
]


def cells_for(scores: dict[str, dict[str, float]]) -> list[Cell]:
    """Every judge scores every row of every candidate it may judge (not its own family);
    ``scores[candidate][judge]`` (default: ``scores[candidate]["*"]``)."""
    families = {c.seat: c.family for c in FIELD}
    out: list[Cell] = []
    for candidate, by_judge in scores.items():
        for seat, family in JUDGES:
            if family == families[candidate]:
                continue
            value = by_judge.get(seat, by_judge["*"])
            out += [Cell(seat, family, candidate, row, value, 1.0) for row in ROWS]
    return out


def plain_scores() -> dict[str, dict[str, float]]:
    return {"alpha": {"*": 9}, "beta": {"*": 8}, "gamma": {"*": 7}, "delta": {"*": 3}}


def scored(
    scores: dict[str, dict[str, float]], field: Iterable[Contender] = FIELD, final: int = 2
) -> tuple[MatrixResult, Scoring]:
    contenders = list(field)
    matrix = score_cells(cells_for(scores), contenders, SETTINGS)
    return matrix, judge_contenders(contenders, matrix, cut=1, final=final)


def test_a_sole_survivor_wins_without_a_matrix() -> None:
    result = sole_survivor("alpha")
    assert result.winner == "alpha"
    assert result.stages == {"alpha": "winner"}
    assert result.bracket == {
        "rounds": [],
        "finalists": ["alpha"],
        "proposed_winner": "alpha",
        "decided_by": None,
        "reason": SOLE_SURVIVOR_REASON,
    }
    assert not result.reasons and not result.escalations


def test_the_matrix_stops_a_failer_and_the_bracket_places_the_rest() -> None:
    matrix, result = scored(plain_scores())
    assert result.winner == "alpha"
    assert result.stages == {
        "alpha": "winner",
        "beta": "finalist",
        "gamma": "bracket",
        "delta": "matrix",
    }
    # the failer takes the matrix's own failures as its reasons; nobody else gets any
    reasons = result.reasons
    assert list(reasons) == ["delta"]
    assert reasons["delta"] and all(r["code"] and r["message"] for r in reasons["delta"])
    failures = matrix.candidates["delta"].failures  # in the result document's shape, no more
    assert reasons["delta"] == [{"code": f.code, "message": f.message} for f in failures]
    bracket = result.bracket
    assert bracket["rounds"][0]["number"] == 0  # the screen round shows the failer leave
    assert bracket["rounds"][0]["eliminated"] == ["delta"]
    assert bracket["finalists"] == ["alpha", "beta"]
    assert bracket["proposed_winner"] == "alpha"


def test_a_contender_the_matrix_did_not_score_is_left_where_it_is() -> None:
    # gamma's gates were re-run and failed: the re-scored matrix no longer holds it
    field = [c for c in FIELD if c.seat != "gamma"]
    matrix = score_cells(
        cells_for({k: v for k, v in plain_scores().items() if k != "gamma"}), field, SETTINGS
    )
    result = judge_contenders(FIELD, matrix, cut=1, final=2)
    assert "gamma" not in result.stages
    assert all("gamma" not in r["field_in"] for r in result.bracket["rounds"])


def test_no_matrix_passer_means_no_winner() -> None:
    scores: dict[str, dict[str, float]] = {c.seat: {"*": 2} for c in FIELD}
    _, result = scored(scores)
    assert result.winner is None
    assert set(result.stages.values()) == {"matrix"}


def test_escalations_name_the_candidate_and_come_in_label_order() -> None:
    scores = plain_scores()
    # the judges disagree by far more than the spread threshold on gamma and on beta
    scores["gamma"] = {"*": 9, "j-red": 1}
    scores["beta"] = {"*": 9, "j-green": 1}
    _, result = scored(scores)
    escalations = result.escalations
    seats = [e.seat for e in escalations]
    assert {"beta", "gamma"} <= set(seats)
    assert seats == sorted(seats)
    for esc in escalations:
        doc = esc.document()
        assert doc == {"code": esc.code, "message": f"{esc.seat}: {esc.message}"}


@pytest.mark.parametrize(
    ("winner", "escalations", "status"),
    [
        ("alpha", [], "awaiting_human"),
        ("alpha", [{"code": "retry_cap", "message": "m"}], "escalated"),
        (None, [], "no_winner"),
        (None, [{"code": "spread", "message": "m"}], "no_winner"),
    ],
)
def test_run_status(winner: str | None, escalations: list[object], status: str) -> None:
    assert run_status(winner, escalations) == status
