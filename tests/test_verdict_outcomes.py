"""failure_lines: the edges the end-to-end tests (tests/cli/commands/test_verify.py,
tests/loop/test_cli_events.py, tests/loop/test_prompt.py) do not reach."""

from __future__ import annotations

from typing import Any

from pytest_loopcontract.verdict_outcomes import failure_lines

LONG = "x" * 300
VERDICT: dict[str, Any] = {
    "tests": {
        "records": [
            {"nodeid": "t.py::a", "outcome": "failed", "when": "call", "message": LONG},
            {"nodeid": "t.py::b", "outcome": "skipped", "when": "setup", "message": "\n  why\n"},
            {"nodeid": "h.py::c", "outcome": "failed", "when": "call", "message": "E secret"},
            {"nodeid": "t.py::d", "outcome": "failed", "hidden": True, "message": "withheld"},
        ]
    }
}


def test_each_line_is_cut_and_a_test_without_a_record_is_said_so() -> None:
    tests = [("t.py::a", "failed"), ("t.py::ok", "passed"), ("t.py::b", "skipped")]
    lines = failure_lines(VERDICT, [*tests, ("t.py::gone", "missing")], width=60)
    assert lines == [
        "failed: t.py::a (call): " + "x" * 33 + "...",
        "skipped: t.py::b (setup): why",  # no E line: the message's first line
        "missing: t.py::gone (not run)",
    ]
    assert len(lines[0]) == 60


def test_hidden_tests_are_counted_never_named_and_the_rest_are_counted_too() -> None:
    tests = [(f"t.py::n{i}", "failed") for i in range(7)] + [
        ("h.py::c", "failed"),
        ("t.py::d", "failed"),
    ]
    lines = failure_lines(VERDICT, tests, hide={"h.py"}, shown=5)
    assert lines == [
        *(f"failed: t.py::n{i}" for i in range(5)),
        "... and 2 more",
        "and 2 hidden acceptance tests",
    ]
    assert failure_lines({}, [], hide=()) == [] and failure_lines({"tests": []}, []) == []
