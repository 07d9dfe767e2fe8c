"""The verdict as JUnit XML: the dialect GitHub test-report actions, Jenkins and GitLab read.

Two suites under ``<testsuites>``: ``tests`` holds one ``<testcase>`` per test the verifier ran
(``classname``/``name``/``file``/``line``/``time``, with ``<failure>``, ``<error>`` or
``<skipped>``), and ``contract`` holds one per DoD item, gate and tamper finding, so a reader
that shows only test cases still shows why the contract was not met. The verdict, exit code,
contract id and digest travel as ``<properties>`` of each suite. Pure: verdict in, bytes out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.verdict import VerdictView
from pytest_loopcontract.verifier.reports.locate import test_place

__all__ = ["junit_xml", "verdict_properties"]

# XML 1.0 cannot carry most control characters, not even escaped; pytest's messages can hold
# them (ANSI colour codes). They are shown as \xNN rather than dropped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# outcome -> (element, type); None: a pass. xfailed is a skip and xpassed a pass, as pytest's
# own writer reports them; missing and deselected tests are errors (the contract expected them).
_OUTCOMES: dict[str, tuple[str, str] | None] = {
    "passed": None,
    "xpassed": None,
    "failed": ("failure", "failed"),
    "error": ("error", "error"),
    "skipped": ("skipped", "skipped"),
    "xfailed": ("skipped", "xfailed"),
    "missing": ("error", "missing"),
    "deselected": ("error", "deselected"),
}


def _text(value: Any) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


@dataclass
class _Suite:
    name: str
    cases: list[ET.Element]
    counts: dict[str, int]
    seconds: float = 0.0

    def add(self, case: ET.Element, element: str | None, seconds: float = 0.0) -> None:
        self.cases.append(case)
        self.counts["tests"] += 1
        if element is not None:
            self.counts[{"failure": "failures", "error": "errors"}.get(element, "skipped")] += 1
        self.seconds += seconds


def _suite(name: str) -> _Suite:
    return _Suite(name, [], {"tests": 0, "failures": 0, "errors": 0, "skipped": 0})


def _case(classname: str, name: str, **extra: str) -> ET.Element:
    attrs = {"classname": _text(classname), "name": _text(name)}
    attrs.update({k: _text(v) for k, v in extra.items()})
    return ET.Element("testcase", attrs)


def _outcome(case: ET.Element, element: str, kind: str, message: str) -> None:
    first = message.strip().splitlines()[-1] if message.strip() else kind
    child = ET.SubElement(case, element, {"type": kind, "message": _text(first[:500])})
    child.text = _text(message)


def _test_suite(view: VerdictView) -> _Suite:
    suite = _suite("tests")
    for record in view.records():
        nodeid, outcome = str(record["nodeid"]), str(record.get("outcome", ""))
        message = str(record.get("message") or "")
        place = test_place(nodeid, message)
        seconds = float(record.get("duration") or 0.0)
        extra = {"file": place.file}
        if "duration" in record:  # format 2 keeps passed tests' durations only for a gate
            extra["time"] = f"{seconds:.3f}"
        if place.line is not None:
            extra["line"] = str(place.line)
        case = _case(place.classname, place.name, **extra)
        shape = _OUTCOMES.get(outcome, ("error", outcome or "unknown"))
        if shape is not None:
            _outcome(case, shape[0], shape[1], message or f"{outcome}: {nodeid}")
        suite.add(case, shape[0] if shape else None, seconds)
    return suite


def _contract_suite(document: Mapping[str, Any], view: VerdictView) -> _Suite:
    suite = _suite("contract")
    contract_file = str((document.get("contract") or {}).get("path") or "")
    for item in _maps(document.get("dod")):
        status = str(item.get("status", ""))
        case = _case("loopcontract.dod", str(item.get("id", "")), file=contract_file)
        failing = view.dod_failing(str(item.get("id", "")))
        if status != "done":
            lines = [f"{t.get('outcome')}: {t.get('nodeid')}" for t in failing]
            _outcome(case, "failure", f"dod_{status}", "\n".join([str(item.get("text")), *lines]))
        suite.add(case, None if status == "done" else "failure")
    gates = document.get("gates") or {}
    for kind in ("hard", "measured"):
        for gate in _maps(gates.get(kind) if isinstance(gates, Mapping) else None):
            status = str(gate.get("status", ""))
            case = _case(f"loopcontract.gates.{kind}", str(gate.get("id", "")), file=contract_file)
            element = None if status == "pass" else ("error" if status == "error" else "failure")
            if element is not None:
                _outcome(case, element, f"gate_{status}", str(gate.get("message") or status))
            suite.add(case, element)
    for finding in view.findings():
        allowed = bool(finding.get("allowed"))
        extra = {"file": str(finding.get("path") or contract_file)}
        if finding.get("line"):
            extra["line"] = str(finding["line"])
        case = _case("loopcontract.tamper", str(finding.get("code", "")), **extra)
        message = str(finding.get("message") or "")
        if allowed:
            _outcome(case, "skipped", "allowed_by_contract", message)
        else:
            _outcome(case, "failure", str(finding.get("code", "")), message)
        suite.add(case, "skipped" if allowed else "failure")
    return suite


def verdict_properties(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The verdict's identity and outcome as ``(name, value)`` pairs, ``loopcontract.*``."""
    contract = document.get("contract") or {}
    environment = document.get("environment") or {}
    pairs = [
        ("loopcontract.verdict", document.get("verdict")),
        ("loopcontract.exit_code", document.get("exit_code")),
        ("loopcontract.contract_id", contract.get("id")),
        ("loopcontract.contract_path", contract.get("path")),
        ("loopcontract.contract_sha256", contract.get("sha256")),
        ("loopcontract.trust", document.get("trust")),
        ("loopcontract.isolation", document.get("isolation")),
        ("loopcontract.commit", environment.get("commit")),
        ("loopcontract.tool_version", (document.get("tool") or {}).get("version")),
    ]
    pairs += [
        (f"loopcontract.reason.{r.get('code')}", r.get("message"))
        for r in VerdictView(document).reasons()
    ]
    return [(name, _text(value)) for name, value in pairs if value is not None]


def _maps(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _suite_element(
    suite: _Suite, properties: Iterable[tuple[str, str]], started: str
) -> ET.Element:
    attrs = {k: str(v) for k, v in suite.counts.items()}
    attrs.update(name=suite.name, time=f"{suite.seconds:.3f}")
    if started:
        attrs["timestamp"] = started
    element = ET.Element("testsuite", attrs)
    props = ET.SubElement(element, "properties")
    for name, value in properties:
        ET.SubElement(props, "property", {"name": name, "value": value})
    element.extend(suite.cases)
    return element


def junit_xml(document: Mapping[str, Any]) -> bytes:
    """The JUnit XML of a verdict document (UTF-8, with an XML declaration)."""
    view = VerdictView(document)
    suites = [_test_suite(view), _contract_suite(document, view)]
    properties = verdict_properties(document)
    timing = document.get("timing") or {}
    started = _text(timing.get("started") or "")
    contract_id = (document.get("contract") or {}).get("id")
    root = ET.Element("testsuites", {"name": _text(f"loop-contract {contract_id}")})
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(s.counts[key] for s in suites)))
    root.set("time", f"{float(timing.get('duration_s') or 0.0):.3f}")
    root.extend(_suite_element(s, properties, started) for s in suites)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
