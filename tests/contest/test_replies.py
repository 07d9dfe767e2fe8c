"""Judge replies: extraction of the JSON, per-cell validation, labels back to seats."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.contest.matrix_model import ROWS, Cell
from pytest_loopcontract.contest.replies import (
    MAX_REPLY_BYTES,
    ReplyError,
    extract_json,
    parse_reply,
    reply_schema,
    validate_reply,
)

LABELS = {"A": "gamma", "B": "alpha"}
JUDGE = {"judge_seat": "beta", "judge_family": "globex"}


def cell(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "candidate": "A",
        "row": "evidence",
        "score": 7,
        "confidence": 0.8,
        "evidence": "tests/test_x.py::test_y",
        "rationale": "the test exercises the new branch",
    }
    base.update(overrides)
    return base


def reply(*cells: dict[str, Any]) -> str:
    return json.dumps({"scores": list(cells)})


def parse(text: str, **kwargs: Any) -> Any:
    return parse_reply(text, labels=kwargs.pop("labels", LABELS), **JUDGE, **kwargs)


# --------------------------------------------------------------------------------------------
# schema


def test_schema_is_valid_draft_2020_12() -> None:
    schema = reply_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["cell"]["properties"]["row"]["enum"] == list(ROWS)


def test_reply_schema_returns_a_fresh_copy() -> None:
    reply_schema()["$defs"]["cell"]["properties"]["score"]["maximum"] = 99
    assert reply_schema()["$defs"]["cell"]["properties"]["score"]["maximum"] == 10


def test_spec_example_validates() -> None:
    example = {
        "scores": [
            {
                "candidate": "A",
                "row": "evidence",
                "score": 7,
                "confidence": 0.8,
                "evidence": "tests/test_x.py::test_y",
                "rationale": "one line, no newline",
            }
        ]
    }
    assert validate_reply(example) == []


@pytest.mark.parametrize(
    "bad",
    [
        cell(score=11),
        cell(score=-1),
        cell(confidence=1.5),
        cell(score=True),
        cell(rationale="two\nlines"),
        cell(rationale="trailing newline\n"),
        cell(rationale="x" * 301),
        cell(evidence=""),
    ],
)
def test_schema_refuses_bad_cells(bad: dict[str, Any]) -> None:
    assert validate_reply({"scores": [bad]})


# --------------------------------------------------------------------------------------------
# extract_json


def test_extract_whole_text() -> None:
    assert extract_json('  {"scores": []}\n') == {"scores": []}


def test_extract_fenced_block() -> None:
    text = 'Here are my scores:\n```json\n{"scores": [1]}\n```\nThanks.'
    assert extract_json(text) == {"scores": [1]}


def test_extract_bare_fence() -> None:
    assert extract_json('Scores:\n```\n{"scores": [2]}\n```') == {"scores": [2]}


def test_extract_outermost_braces() -> None:
    text = 'I judged them. {"scores": [{"a": {"b": 1}}]} That is all.'
    assert extract_json(text) == {"scores": [{"a": {"b": 1}}]}


@pytest.mark.parametrize(
    "text",
    [
        '{"scores": [NaN]}',
        '{"scores": [Infinity]}',
        '{"scores": [-Infinity]}',
        '{"scores": [1e999]}',
        'prose {"score": NaN} prose',
    ],
)
def test_extract_refuses_non_finite_numbers(text: str) -> None:
    with pytest.raises(ReplyError):
        extract_json(text)


def test_extract_refuses_duplicate_keys() -> None:
    with pytest.raises(ReplyError, match="duplicate key"):
        extract_json('{"scores": [], "scores": [1]}')


def test_extract_refuses_oversized_reply() -> None:
    text = json.dumps({"scores": [], "pad": "x" * MAX_REPLY_BYTES})
    with pytest.raises(ReplyError, match="limit"):
        extract_json(text)


@pytest.mark.parametrize(
    "text", ["", "   ", "I think A is better than B.", '{"scores": [{"candidate": "A",', "[[[["]
)
def test_extract_refuses_non_json(text: str) -> None:
    with pytest.raises(ReplyError):
        extract_json(text)


def test_extract_survives_deep_nesting() -> None:
    with pytest.raises(ReplyError):
        extract_json("[" * 200_000)


# --------------------------------------------------------------------------------------------
# parse_reply: the reply as a whole


def test_good_reply_becomes_cells() -> None:
    cells = [cell(candidate=label, row=row) for label in ("A", "B") for row in ROWS]
    parsed = parse(reply(*cells))
    assert parsed.error is None
    assert parsed.discarded == ()
    assert len(parsed.cells) == 8
    first = parsed.cells[0]
    assert first == Cell(
        seat="beta",
        family="globex",
        candidate="gamma",
        row="question_fidelity",
        score=7.0,
        confidence=0.8,
        evidence="tests/test_x.py::test_y",
        rationale="the test exercises the new branch",
    )
    assert {c.candidate for c in parsed.cells} == {"gamma", "alpha"}
    assert all(isinstance(c.score, float) for c in parsed.cells)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Candidate A is clearly better.", "no JSON"),
        ("[1, 2, 3]", "not an object"),
        ('{"score": []}', '"scores"'),
        ('{"scores": {"A": 7}}', "not a list"),
        ('"scores"', "not an object"),
    ],
)
def test_unusable_reply_sets_error(text: str, message: str) -> None:
    parsed = parse(text)
    assert parsed.error is not None and message in parsed.error
    assert parsed.cells == () and parsed.discarded == ()


def test_empty_scores_is_not_an_error() -> None:
    parsed = parse('{"scores": []}')
    assert parsed.error is None and parsed.cells == ()


# --------------------------------------------------------------------------------------------
# parse_reply: cell by cell


@pytest.mark.parametrize(
    "field", ["candidate", "row", "score", "confidence", "evidence", "rationale"]
)
def test_cell_missing_a_field_is_discarded(field: str) -> None:
    bad = cell(candidate="B")
    del bad[field]
    parsed = parse(reply(cell(), bad))
    assert [c.candidate for c in parsed.cells] == ["gamma"]
    assert len(parsed.discarded) == 1
    assert parsed.discarded[0].index == 1
    assert field in parsed.discarded[0].reason


@pytest.mark.parametrize(
    ("bad", "word"),
    [
        (cell(score=11), "maximum"),
        (cell(score=-1), "minimum"),
        (cell(score=10.5), "maximum"),
        (cell(confidence=1.5), "maximum"),
        (cell(confidence=-0.1), "minimum"),
        (cell(score=True), "number"),
        (cell(confidence=False), "number"),
        (cell(score="7"), "number"),
        (cell(score=None), "number"),
        (cell(candidate="Z"), "unknown candidate"),
        (cell(candidate="gamma"), "unknown candidate"),  # a seat name is not a label
        (cell(row="style"), "unknown row"),
        (cell(rationale=""), "rationale"),
        (cell(rationale="   "), "blank"),
        (cell(rationale="one\ntwo"), "single line"),
        (cell(rationale="x" * 301), "rationale"),
        (cell(evidence="  "), "blank"),
        (cell(candidate=1), "candidate"),
    ],
)
def test_bad_cell_is_discarded_others_kept(bad: dict[str, Any], word: str) -> None:
    good = cell(candidate="B", row="completeness")
    parsed = parse(reply(good, bad))
    assert parsed.error is None
    assert len(parsed.cells) == 1 and parsed.cells[0].candidate == "alpha"
    assert len(parsed.discarded) == 1
    assert word in parsed.discarded[0].reason
    assert json.loads(parsed.discarded[0].raw) == bad


def test_non_object_cell_is_discarded() -> None:
    parsed = parse(json.dumps({"scores": [5, "A", None, cell()]}))
    assert len(parsed.cells) == 1
    assert [d.index for d in parsed.discarded] == [0, 1, 2]


def test_duplicate_cells_are_all_discarded() -> None:
    parsed = parse(reply(cell(score=3), cell(score=9), cell(row="completeness")))
    assert [c.row for c in parsed.cells] == ["completeness"]
    assert [d.index for d in parsed.discarded] == [0, 1]
    assert all("duplicate" in d.reason for d in parsed.discarded)


def test_row_outside_the_requested_rows_is_discarded() -> None:
    parsed = parse(
        reply(cell(row="evidence"), cell(row="completeness")), rows=("evidence", "test_agreement")
    )
    assert [c.row for c in parsed.cells] == ["evidence"]
    assert "unknown row" in parsed.discarded[0].reason


def test_extra_fields_are_ignored() -> None:
    parsed = parse(reply(cell(notes="anything")))
    assert len(parsed.cells) == 1


def test_discarded_raw_is_bounded() -> None:
    parsed = parse(reply(cell(score=50, evidence="e" * 5000)))
    assert len(parsed.discarded[0].raw) <= 500


def test_fenced_reply_parses() -> None:
    text = "My scores:\n```json\n" + reply(cell()) + "\n```\n"
    assert len(parse(text).cells) == 1


# --------------------------------------------------------------------------------------------
# labels are never the judge or its family


def test_label_resolving_to_the_judge_itself_raises() -> None:
    with pytest.raises(ValueError, match="judge"):
        parse(reply(cell()), labels={"A": "beta"})


def test_label_resolving_to_the_judges_family_raises() -> None:
    with pytest.raises(ValueError, match="own family"):
        parse(
            reply(cell()),
            labels={"A": "delta"},
            seat_families={"delta": " GLOBEX "},
        )


def test_label_with_unknown_family_raises() -> None:
    with pytest.raises(ValueError, match="unknown"):
        parse(reply(cell()), labels={"A": "delta"}, seat_families={})


def test_two_labels_for_one_seat_raise() -> None:
    with pytest.raises(ValueError, match="same seat"):
        parse(reply(cell()), labels={"A": "gamma", "B": "gamma"})


def test_labels_of_other_families_pass() -> None:
    parsed = parse(reply(cell()), seat_families={"gamma": "initech", "alpha": "acme"})
    assert len(parsed.cells) == 1


# --------------------------------------------------------------------------------------------
# property: any schema-valid cell is accepted and maps to its seat

_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zl", "Zp", "Cc")), min_size=1, max_size=60
).filter(lambda s: s.strip() != "")

_cells = st.fixed_dictionaries(
    {
        "candidate": st.sampled_from(sorted(LABELS)),
        "row": st.sampled_from(ROWS),
        "score": st.one_of(
            st.integers(0, 10), st.floats(0, 10, allow_nan=False, allow_infinity=False)
        ),
        "confidence": st.floats(0, 1, allow_nan=False, allow_infinity=False),
        "evidence": _line,
        "rationale": _line,
    }
)


@given(st.lists(_cells, max_size=8, unique_by=lambda c: (c["candidate"], c["row"])))
def test_valid_cells_always_survive(cells: list[dict[str, Any]]) -> None:
    text = reply(*cells)
    assert validate_reply(json.loads(text)) == []
    parsed = parse(text)
    assert parsed.error is None and parsed.discarded == ()
    assert [(c.candidate, c.row, c.score) for c in parsed.cells] == [
        (LABELS[c["candidate"]], c["row"], float(c["score"])) for c in cells
    ]
