"""The pure gate arithmetic: selectors, DoD, hard and measured gates, the decision."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.verdict import (
    EXIT_MET,
    EXIT_NOT_MET,
    EXIT_TAMPER,
    Finding,
    GateResult,
    Reason,
    decide,
)
from pytest_loopcontract.verifier import gates


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class Measured:
    id: str
    metric: str
    op: str
    threshold: float
    unit: str = ""


@dataclass(frozen=True)
class Obs:
    value: float | None
    status: str
    detail: str = "test"
    extra: Mapping[str, Any] = field(default_factory=dict)


@pytest.mark.parametrize(
    "selector, nodeid, expected",
    [
        ("t.py::test_a", "t.py::test_a", True),
        ("t.py::test_a", "t.py::test_ab", False),
        ("t.py::test_a", "t.py::test_a[1-2]", True),
        ("t.py::TestX", "t.py::TestX::test_y", True),
        ("t.py", "t.py::test_a", True),
        ("tests", "tests/sub/t.py::test_a", True),
        ("tests/", "tests/t.py::test_a", True),
        ("test", "tests/t.py::test_a", False),
        ("t.py::test_*", "t.py::test_zed", True),
        ("t.py::test_?", "t.py::test_ab", False),
        ("t.py::test_a[x y]", "t.py::test_a[x y]", True),
        ("t.py::test_a[x", "t.py::test_a[x y]", False),
        ("t.py::test_e[*]", "t.py::test_e[2024-01]", True),
        ("t.py::test_s[*-[a]-*", "t.py::test_s[x-[a]-y]", True),
        ("t.py::test_s[*-[a]-*", "t.py::test_s[x-[b]-y]", False),
    ],
)
def test_selector_matches(selector: str, nodeid: str, expected: bool) -> None:
    assert gates.selector_matches(selector, nodeid) is expected


def test_dod_requires_every_test_to_pass() -> None:
    items = [
        Item("a", "A", ("t.py::test_a",)),
        Item("b", "B", ("t.py::test_b",)),
        Item("c", "C", ("t.py::gone",)),
        Item("d", "D", ()),
    ]
    outcomes = {
        "t.py::test_a": "passed",
        "t.py::test_b": "skipped",
        "t.py::test_m": "passed",
    }
    results = gates.evaluate_dod(items, outcomes, {"d": ["t.py::test_m"]})
    assert [r.status for r in results] == ["done", "failed", "failed", "done"]
    assert results[2].tests == (("t.py::gone", "missing"),)


@pytest.mark.parametrize(
    "outcome", ["failed", "error", "skipped", "xfailed", "xpassed", "deselected"]
)
def test_only_passed_counts(outcome: str) -> None:
    [result] = gates.evaluate_dod([Item("a", "A", ("t::x",))], {"t::x": outcome}, {})
    assert result.status == "failed"


def test_acceptance_and_pass_to_pass() -> None:
    dod = gates.evaluate_dod([Item("a", "A", ("t::a",))], {"t::a": "passed"}, {})
    assert gates.evaluate_acceptance("acc", dod).status == "pass"
    assert gates.evaluate_acceptance("acc", dod).message == "the one DoD item done"
    assert gates.evaluate_acceptance("acc", []).status == "fail"
    two = gates.evaluate_dod(
        [Item("a", "A", ("t::a",)), Item("b", "B", ("t::b",))], {"t::a": "passed"}, {}
    )
    assert gates.evaluate_acceptance("acc", two).message.startswith("1 of 2 DoD items not done")
    one = gates.evaluate_dod([Item("b", "B", ("t::b",))], {}, {})
    assert gates.evaluate_acceptance("acc", one).message.startswith("1 of 1 DoD item not done")
    outcomes = {"t::a": "passed", "t::b": "failed", "t::c": "passed"}
    with_baseline = gates.evaluate_pass_to_pass("p2p", outcomes, ["t::c", "t::gone"], ["t::a"])
    assert with_baseline.status == "fail"
    assert with_baseline.details["failing"] == {"t::gone": "missing"}
    without = gates.evaluate_pass_to_pass("p2p", outcomes, None, ["t::a"])
    assert without.status == "fail"
    assert "no baseline" in without.message
    assert without.details["failing"] == {"t::b": "failed"}


def test_selected_and_command_gates() -> None:
    outcomes = {"t::a": "passed", "t::b": "passed"}
    assert gates.evaluate_selected("s", ["t::*"], outcomes).status == "pass"
    assert gates.evaluate_selected("s", ["t::zz"], outcomes).status == "fail"
    assert gates.evaluate_command("c", ["x"], 0, 0, "").status == "pass"
    failed = gates.evaluate_command("c", ["x"], 0, 2, "line1\nboom\n")
    assert failed.status == "fail"
    assert failed.message.endswith("boom")
    assert gates.evaluate_command("c", ["x"], 0, None, "", "timed out").status == "error"


@pytest.mark.parametrize(
    "observed, op, threshold, expected",
    [
        (80, ">=", 80, True),
        (79.99, ">=", 80, False),
        (5, "<", 5, False),
        (5, "<=", 5, True),
        (1, "==", 1, True),
        (1, "!=", 1, False),
        (2, ">", 1, True),
        (math.nan, "!=", 1, False),
        (math.nan, "<", 1, False),
    ],
)
def test_compare(observed: float, op: str, threshold: float, expected: bool) -> None:
    assert gates.compare(observed, op, threshold) is expected


def test_a_failed_measured_gate_says_where_its_source_points() -> None:
    gate = Measured("diff", "coverage.diff_percent", ">=", 80)
    where = {"where": "not run: src/scratch.py:1-3"}
    failed = gates.evaluate_measured(gate, Obs(50.0, "ok", extra=where))
    assert failed.message.endswith(" - not run: src/scratch.py:1-3")
    assert "not run" not in gates.evaluate_measured(gate, Obs(90.0, "ok", extra=where)).message


def test_measured_missing_data_never_passes() -> None:
    gate = Measured("cov", "coverage.percent", ">=", 0)
    assert gates.evaluate_measured(gate, Obs(None, "missing")).status == "missing"
    assert gates.evaluate_measured(gate, Obs(None, "error")).status == "error"
    assert gates.evaluate_measured(gate, Obs(None, "ok")).status == "missing"
    result = gates.evaluate_measured(gate, Obs(None, "not_measurable"))
    assert result.status == "not_measurable"
    assert result.details["observed"] is None
    assert not result.blocking


def test_decide_precedence() -> None:
    ok = GateResult("a", "acceptance", "pass", "")
    bad = GateResult("a", "acceptance", "fail", "nope")
    tamper = Finding("protected_path_modified", "x", "t.py")
    allowed = Finding("protected_path_modified", "x", "t.py", allowed=True)
    assert decide([ok], [], [], [])[:2] == ("pass", EXIT_MET)
    assert decide([ok], [], [allowed], [])[:2] == ("pass", EXIT_MET)
    assert decide([bad], [], [], [])[:2] == ("fail", EXIT_NOT_MET)
    assert decide([ok], [], [], [Reason("timeout", "t")])[:2] == ("error", EXIT_NOT_MET)
    assert decide([ok], [], [tamper], [Reason("timeout", "t")])[:2] == ("fail", EXIT_TAMPER)


outcome_st = st.sampled_from(["passed", "failed", "error", "skipped", "xfailed", "xpassed"])


@given(
    st.dictionaries(
        st.from_regex(r"t\.py::test_[a-c][0-9]", fullmatch=True),
        outcome_st,
        min_size=1,
        max_size=12,
    )
)
def test_item_done_iff_all_selected_passed(outcomes: dict[str, str]) -> None:
    [result] = gates.evaluate_dod([Item("i", "I", ("t.py::test_*",))], outcomes, {})
    assert (result.status == "done") == all(o == "passed" for o in outcomes.values())
    assert {n for n, _ in result.tests} == set(outcomes)


@given(st.floats(allow_nan=True), st.sampled_from(gates.OPS), st.floats(allow_nan=False))
def test_measured_gate_passes_only_on_a_real_comparison(value: float, op: str, thr: float) -> None:
    gate = Measured("g", "metric.x", op, thr)
    result = gates.evaluate_measured(gate, Obs(value, "ok"))
    assert (result.status == "pass") == (not math.isnan(value) and gates.compare(value, op, thr))
