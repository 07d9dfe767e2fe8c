"""The verdict as JUnit XML: valid against the Jenkins XSD, and saying what the verdict says."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from pytest_loopcontract.verdict_outcomes import pack_tests
from pytest_loopcontract.verifier.reports.junit import junit_xml
from testing.report_schemas import junit_errors
from testing.verdicts import passing_verdict

FAILED_MESSAGE = (
    "def test_triple():\n>       assert triple(2) == 6\nE       assert 4 == 6\n\n"
    "tests/test_roll.py:12: AssertionError"
)


def _records() -> list[dict[str, Any]]:
    return [
        {"nodeid": "tests/test_roll.py::test_window", "outcome": "passed", "duration": 0.5},
        {
            "nodeid": "tests/test_roll.py::TestSum::test_triple[2]",
            "outcome": "failed",
            "duration": 0.25,
            "when": "call",
            "message": FAILED_MESSAGE,
        },
        {"nodeid": "tests/test_roll.py::test_boom", "outcome": "error", "when": "setup",
         "duration": 0.0, "message": "fixture 'db' not found"},
        {"nodeid": "tests/test_roll.py::test_later", "outcome": "skipped", "when": "setup",
         "duration": 0.0, "message": "Skipped: later"},
        {"nodeid": "tests/test_roll.py::test_known", "outcome": "xfailed", "when": "call",
         "duration": 0.0, "message": "known bug"},
        {"nodeid": "tests/test_roll.py::test_gone", "outcome": "missing", "when": "call",
         "duration": 0.0, "message": ""},
    ]  # fmt: skip


def _failing_verdict(**overrides: Any) -> dict[str, Any]:
    overrides.setdefault("tests", pack_tests(_records(), durations=False))
    return passing_verdict(
        verdict="fail",
        exit_code=25,
        tamper={
            "detected": True,
            "findings": [
                {"code": "vacuous_pass", "message": "passes with its expected value mutated",
                 "path": "tests/test_roll.py", "line": 12, "allowed": False},
                {"code": "env_sniffing", "message": "reads CI", "path": "src/roll.py",
                 "line": 3, "allowed": True},
            ],
        },
        isolation="sandbox",
        **overrides,
    )  # fmt: skip


def _cases(xml: bytes) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def test_a_passing_verdict_is_valid_junit_with_the_verdict_in_properties() -> None:
    xml = junit_xml(passing_verdict(isolation="sandbox"))
    assert junit_errors(xml) == []
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["loopcontract.verdict"] == "pass"
    assert props["loopcontract.exit_code"] == "0"
    assert props["loopcontract.contract_id"] == "rolling"
    assert props["loopcontract.contract_sha256"] == "a" * 64
    assert props["loopcontract.isolation"] == "sandbox"
    case = _cases(xml)["tests.test_roll::test_window"]
    assert case.get("file") == "tests/test_roll.py"
    assert case.get("time") == "0.010"
    assert list(case) == []  # passed: no child element
    assert root.get("failures") == "0" and root.get("errors") == "0"


def test_each_outcome_becomes_the_element_junit_readers_count() -> None:
    xml = junit_xml(_failing_verdict())
    assert junit_errors(xml) == []
    cases = _cases(xml)
    failed = cases["tests.test_roll.TestSum::test_triple[2]"]
    assert failed.get("file") == "tests/test_roll.py"
    assert failed.get("line") == "12"
    assert failed.get("time") == "0.250"
    (failure,) = list(failed)
    assert failure.tag == "failure"
    assert failure.get("message") == "tests/test_roll.py:12: AssertionError"
    assert "assert 4 == 6" in (failure.text or "")
    assert [e.tag for e in cases["tests.test_roll::test_boom"]] == ["error"]
    assert [e.tag for e in cases["tests.test_roll::test_later"]] == ["skipped"]
    assert [e.get("type") for e in cases["tests.test_roll::test_known"]] == ["xfailed"]
    assert [e.get("type") for e in cases["tests.test_roll::test_gone"]] == ["missing"]
    # format 2 keeps no duration for a passed test: no time rather than a made-up one
    assert cases["tests.test_roll::test_window"].get("time") is None
    tests_suite = ET.fromstring(xml).find("testsuite[@name='tests']")
    assert tests_suite is not None
    counts = {k: tests_suite.get(k) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "6", "failures": "1", "errors": "2", "skipped": "2"}


def test_tamper_findings_and_gates_are_cases_of_the_contract_suite() -> None:
    xml = junit_xml(_failing_verdict())
    cases = _cases(xml)
    vacuous = cases["loopcontract.tamper::vacuous_pass"]
    assert (vacuous.get("file"), vacuous.get("line")) == ("tests/test_roll.py", "12")
    assert [e.tag for e in vacuous] == ["failure"]
    assert [e.tag for e in cases["loopcontract.tamper::env_sniffing"]] == ["skipped"]
    assert list(cases["loopcontract.gates.hard::acceptance"]) == []
    assert list(cases["loopcontract.dod::window"]) == []


def test_a_failed_gate_and_dod_item_fail_their_cases() -> None:
    gates = {
        "hard": [{"id": "acceptance", "kind": "acceptance", "status": "fail", "message": "0/1"}],
        "measured": [{"id": "cov", "kind": "measured", "status": "error", "message": "no data"}],
    }
    doc = _failing_verdict(gates=gates)
    doc["dod"][0]["status"] = "failed"
    doc["dod"][0]["tests"][0]["outcome"] = "failed"
    xml = junit_xml(doc)
    assert junit_errors(xml) == []
    cases = _cases(xml)
    assert [e.tag for e in cases["loopcontract.gates.hard::acceptance"]] == ["failure"]
    assert [e.tag for e in cases["loopcontract.gates.measured::cov"]] == ["error"]
    (dod,) = list(cases["loopcontract.dod::window"])
    assert "failed: tests/test_roll.py::test_window" in (dod.text or "")


def test_control_characters_in_a_message_still_make_valid_xml() -> None:
    """pytest's messages can hold ANSI colour codes; XML 1.0 cannot carry them at all."""
    records = _records()
    records[1]["message"] = "\x1b[31mE   assert 4 == 6\x1b[0m\x00"
    xml = junit_xml(_failing_verdict(tests=pack_tests(records, durations=False)))
    assert junit_errors(xml) == []
    case = _cases(xml)["tests.test_roll.TestSum::test_triple[2]"]
    assert "\\x1b[31m" in (case[0].text or "")
    # the cheat: the same element written naively is not XML a reader can parse
    naive = ET.Element("failure")
    naive.text = "\x1b[31m"
    assert junit_errors(ET.tostring(naive)) != []


def test_the_xsd_is_not_vacuous() -> None:
    """A report that drops a required attribute or misplaces an element is refused."""
    xml = junit_xml(_failing_verdict())
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None
    del suite.attrib["tests"]
    assert junit_errors(ET.tostring(root)) != []
    bad_case = ET.fromstring(xml)
    case = next(bad_case.iter("testcase"))
    ET.SubElement(case, "properties")  # junit-9 has no properties on a testcase
    assert junit_errors(ET.tostring(bad_case)) != []


def test_non_ascii_node_ids_are_written_as_text() -> None:
    records = [{"nodeid": "tests/test_ø.py::test_Ærøskøbing", "outcome": "failed",
                "duration": 0.1, "when": "call", "message": "boom"}]  # fmt: skip
    xml = junit_xml(_failing_verdict(tests=pack_tests(records, durations=False)))
    assert junit_errors(xml) == []
    assert "test_Ærøskøbing".encode() in xml
