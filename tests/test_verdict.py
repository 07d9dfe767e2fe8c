"""VerdictView: the questions every reader asks of a verdict, answered once."""

from __future__ import annotations

from typing import Any

from pytest_loopcontract.verdict import VerdictView

VERDICT: dict[str, Any] = {
    "tests": {
        "outcomes": {"passed": ["t::a"]},
        "records": [
            {"nodeid": "t::b", "outcome": "failed"},
            {"nodeid": "t::c", "outcome": "error"},
            {"nodeid": "t::d", "outcome": "skipped"},
            {"nodeid": "t::e", "outcome": "xfailed"},
            {"nodeid": "t::f", "outcome": "deselected"},
        ],
    },
    "dod": [
        {"id": "one", "status": "done", "tests": [{"nodeid": "t::a", "outcome": "passed"}]},
        {"id": "two", "status": "failed", "tests": [{"nodeid": "t::b", "outcome": "failed"}]},
    ],
    "gates": {
        "hard": [{"id": "h1", "status": "pass"}, {"id": "h2", "status": "fail"}],
        "measured": [{"id": "m1", "status": "missing"}],
    },
    "tamper": {"findings": [{"code": "x", "allowed": True}, {"code": "y", "allowed": False}]},
    "reasons": [{"code": "hard_gate_failed", "message": "h2"}],
}


def test_the_view_answers_from_the_document() -> None:
    view = VerdictView(VERDICT)
    assert view.failing_tests() == ["t::b", "t::c"]
    assert view.dod_failing("two") == [{"nodeid": "t::b", "outcome": "failed"}]
    assert view.dod_failing("one") == [] and view.dod_failing("nope") == []
    assert [g["id"] for g in view.failed_gates("hard")] == ["h2"]
    assert [g["id"] for g in view.failed_gates("measured")] == ["m1"]
    assert [f["code"] for f in view.findings()] == ["x", "y"]
    assert [f["code"] for f in view.findings(blocking=True)] == ["y"]
    assert [r["code"] for r in view.reasons()] == ["hard_gate_failed"]


def test_a_malformed_verdict_reads_as_empty_not_as_a_traceback() -> None:
    view = VerdictView(
        {"tests": "junk", "dod": [3, None], "gates": [], "tamper": {"findings": 1}, "reasons": 2}
    )
    assert view.failing_tests() == [] and view.dod_failing("a") == []
    assert view.failed_gates("hard") == [] and view.findings() == []
    assert view.reasons() == []


def test_the_checklist_names_three_findings_of_a_code_and_counts_the_rest() -> None:
    """Every wrong expectation's twin is a finding of its own: six for one test's three
    assertions filled the screen, so the summary groups them by code and counts the rest."""
    from pytest_loopcontract.verdict import TAMPER_SHOWN, render_checklist

    twins = [
        {"code": "twin_passed", "message": f"twin {n} passed", "path": "t.py", "line": 20 + n}
        for n in range(6)
    ]
    patched = {"code": "runtime_patched", "message": "assertEqual replaced"}
    document = {
        "contract": {"id": "c"},
        "trust": "isolated",
        "verdict": "fail",
        "exit_code": 25,
        "dod": [],
        "gates": {"hard": [], "measured": []},
        "tamper": {"findings": [twins[0], patched, *twins[1:]]},
        "reasons": [],
    }

    tamper = [line for line in render_checklist(document) if "TAMPER" in line]

    assert TAMPER_SHOWN == 3
    assert tamper == [
        "  TAMPER twin_passed: twin 0 passed t.py:20",
        "  TAMPER twin_passed: twin 1 passed t.py:21",
        "  TAMPER twin_passed: twin 2 passed t.py:22",
        "  TAMPER twin_passed: ... and 3 more (verdict.json)",
        "  TAMPER runtime_patched: assertEqual replaced",
    ]
