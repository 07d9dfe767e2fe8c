"""The verdict: one verification's machine-readable outcome, its schema and its exit codes.

Everything downstream (the loop, the contest, the GitHub Action) reads verdicts rather than
pytest output, so the keys and reason codes here are a public, stable interface.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any, NamedTuple

from pytest_loopcontract.idtext import readable_ids
from pytest_loopcontract.reason import Reason
from pytest_loopcontract.verdict_outcomes import (
    failing_tests,
    failure_lines,
    tests_section,
    verdict_records,
)

__all__ = [
    "BASELINE_STALE",
    "EXIT_AWAIT_HUMAN",
    "EXIT_BASELINE",
    "EXIT_BUDGET",
    "EXIT_CONTRACT_INVALID",
    "EXIT_ITERATION_CAP",
    "EXIT_MET",
    "EXIT_NOT_MET",
    "EXIT_NO_PROGRESS",
    "EXIT_TAMPER",
    "SCHEMA_VERSION",
    "DodResult",
    "Finding",
    "GateResult",
    "Reason",
    "VerdictView",
    "build_verdict",
    "gate_failures",
    "pytest_version",
    "render_checklist",
    "validate_verdict",
]

SCHEMA_VERSION = 2  # 2: compact tests and pass_to_pass (verdict_tests.py, idsets.py)

EXIT_MET = 0
EXIT_NOT_MET = 20
EXIT_BUDGET = 21
EXIT_NO_PROGRESS = 22
EXIT_ITERATION_CAP = 23
EXIT_AWAIT_HUMAN = 24
EXIT_TAMPER = 25
EXIT_CONTRACT_INVALID = 26
EXIT_BASELINE = 27

# The error a verdict carries when the baseline belongs to another history (verifier/stale.py):
# not the candidate's failure but the baseline rule's, so it exits 27.
BASELINE_STALE = "baseline_stale"


class DodResult(NamedTuple):
    id: str
    text: str
    status: str  # done | failed | no_tests
    tests: tuple[tuple[str, str], ...]  # (nodeid, outcome)


class GateResult(NamedTuple):
    id: str
    kind: str
    status: str  # pass | fail | not_measurable | missing | error
    message: str
    details: Mapping[str, Any] = MappingProxyType({})  # read-only: one shared empty mapping

    @property
    def blocking(self) -> bool:
        """A gate blocks unless it passed or had nothing to measure."""
        return self.status not in ("pass", "not_measurable")


class Finding(NamedTuple):
    """One piece of tampering evidence; ``allowed`` findings are reported but do not fail."""

    code: str
    message: str
    path: str = ""
    line: int | None = None
    allowed: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message, "allowed": self.allowed}
        if self.path:
            out["path"] = self.path
        if self.line is not None:
            out["line"] = self.line
        return out


def _gate_json(gate: GateResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": gate.id, "kind": gate.kind, "status": gate.status}
    out["message"] = gate.message
    out.update(gate.details)
    return out


def _dod_json(item: DodResult) -> dict[str, Any]:
    tests = [{"nodeid": n, "outcome": o} for n, o in item.tests]
    return {"id": item.id, "text": item.text, "status": item.status, "tests": tests}


def _tamper_json(
    findings: Sequence[Finding], checks: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "detected": any(not f.allowed for f in findings),
        "findings": [f.to_json() for f in findings],
    }
    if checks:
        out["checks"] = [dict(c) for c in checks]
    return out


def decide(
    hard: Sequence[GateResult],
    measured: Sequence[GateResult],
    findings: Sequence[Finding],
    errors: Sequence[Reason],
    checkpoints: Sequence[Reason] = (),
) -> tuple[str, int, list[Reason]]:
    """Turn gate outcomes into (verdict, exit code, reasons).

    Tampering outranks everything (exit 25) because a run that was interfered with proves
    nothing; a dangerous change waiting on a person comes next (exit 24); a run that could not
    be measured is an ``error``; otherwise any blocking gate fails. A checkpoint a person
    denied is a failure the agent must undo.
    """
    reasons: list[Reason] = []
    blocking_findings = [f for f in findings if not f.allowed]
    for finding in blocking_findings:
        reasons.append(Reason("tamper_detected", f"{finding.code}: {finding.message}"))
    reasons.extend(checkpoints)
    reasons.extend(errors)
    for gate in hard:
        if gate.blocking:
            reasons.append(Reason("hard_gate_failed", f"{gate.id}: {gate.message}"))
    for gate in measured:
        if gate.status in ("missing", "error"):
            reasons.append(Reason("metric_missing", f"{gate.id}: {gate.message}"))
        elif gate.blocking:
            reasons.append(Reason("measured_gate_failed", f"{gate.id}: {gate.message}"))
    if blocking_findings:
        return "fail", EXIT_TAMPER, reasons
    if any(c.code == "checkpoint_pending" for c in checkpoints):
        return "fail", EXIT_AWAIT_HUMAN, reasons
    if errors:
        stale = any(e.code == BASELINE_STALE for e in errors)
        return "error", EXIT_BASELINE if stale else EXIT_NOT_MET, reasons
    if reasons:
        return "fail", EXIT_NOT_MET, reasons
    return "pass", EXIT_MET, [Reason("contract_met", "every DoD item and gate passed")]


def build_verdict(
    *,
    contract: Mapping[str, Any],
    trust: str,
    nonce: str,
    dod: Sequence[DodResult],
    hard: Sequence[GateResult],
    measured: Sequence[GateResult],
    findings: Sequence[Finding],
    errors: Sequence[Reason],
    tests: Iterable[Mapping[str, Any]],
    baseline: Mapping[str, Any],
    environment: Mapping[str, Any],
    timing: Mapping[str, Any],
    tool_version: str,
    egress: Mapping[str, Any] | None = None,
    checkpoints: Sequence[Reason] = (),
    confinement: Mapping[str, Any] | None = None,
    reruns: Sequence[Mapping[str, Any]] = (),
    checks: Sequence[Mapping[str, Any]] = (),
    durations: bool = False,
) -> dict[str, Any]:
    """Assemble the verdict document in the shape ``schemas/verdict.schema.json`` fixes.

    ``tests`` are per-test records, read once (:func:`~.verdict_tests.tests_section`); they
    are written compactly, with the durations of passed tests only when ``durations`` (a gate
    measured them)."""
    tests_block, summary = tests_section(tests, durations=durations)
    verdict, exit_code, reasons = decide(hard, measured, findings, errors, checkpoints)
    decision = {"pass": "done", "fail": "continue", "error": "continue"}[verdict]
    if exit_code == EXIT_AWAIT_HUMAN:
        decision = "await_human"
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pytest-loopcontract", "version": tool_version},
        "contract": dict(contract),
        "trust": trust,
        "nonce": nonce,
        "verdict": verdict,
        "exit_code": exit_code,
        "reasons": [r.to_json() for r in reasons],
        "dod": [_dod_json(d) for d in dod],
        "gates": {
            "hard": [_gate_json(g) for g in hard],
            "measured": [_gate_json(g) for g in measured],
        },
        "tamper": _tamper_json(findings, checks),
        "baseline": dict(baseline),
        "tests": tests_block,
        "summary": summary,
        "loop": {"iteration": None, "decision": decision, "stop_reason": None},
        "environment": dict(environment),
        "timing": dict(timing),
    }
    return {**document, **_optional_parts(egress, reruns, confinement)}


def _optional_parts(
    egress: Mapping[str, Any] | None,
    reruns: Sequence[Mapping[str, Any]],
    confinement: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The sections a verdict carries only when there is something to say in them."""
    parts: dict[str, Any] = {}
    if egress is not None:
        parts["egress"] = dict(egress)
    if reruns:
        parts["reruns"] = [dict(r) for r in reruns]
    if confinement is not None:
        parts["isolation"] = confinement["mode"]
        parts["confinement"] = {
            "note": str(confinement.get("note", "")),
            "leftovers": list(confinement.get("leftovers", ())),
        }
    return parts


def environment_info(commit: str | None, dirty: bool | None) -> dict[str, Any]:
    return {
        "commit": commit,
        "dirty": dirty,
        "python": platform.python_version(),
        "pytest": pytest_version(),
    }


@cache
def pytest_version() -> str:
    """pytest's version: its own ``__version__`` where pytest is already loaded (the
    in-process plugin: reading the metadata cost that run 4 ms), else its installed
    metadata, since importing pytest only to read it would cost the launcher a tenth of a
    second. ``importlib.metadata`` is imported here, not with this module, which everything
    loads: it costs more than the rest of the launcher's imports (the verifier asks for the
    version on a thread while the tests run)."""
    loaded = getattr(sys.modules.get("pytest"), "__version__", None)
    if isinstance(loaded, str):
        return loaded
    from importlib import metadata

    try:
        return metadata.version("pytest")
    except metadata.PackageNotFoundError:
        import pytest

        return str(pytest.__version__)


@cache
def _schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("schemas/verdict.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate_verdict(document: Mapping[str, Any]) -> list[str]:
    """Schema errors of a verdict (empty when valid); used on untrusted verdicts too."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path)))
    ]


def _maps(value: Any) -> list[Mapping[str, Any]]:
    """The mappings in ``value`` when it is a list; a verdict read from disk may be malformed."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


class VerdictView(NamedTuple):
    """A read-only view of a verdict document: the questions every reader asks of one.

    Why: the loop's prompt, the contest's retry notes, ``loop-contract done`` and the verifier
    itself all ask "which tests did not pass", "which gates failed", "which findings block".
    Asked here once, they get one answer. Tolerant of a malformed document (a missing or
    ill-typed part reads as empty), since some verdicts come from untrusted places.
    """

    document: Mapping[str, Any]

    def failing_tests(self) -> list[str]:
        """Node ids of the tests that failed or errored (not skipped, xfailed or deselected),
        in the verdict's order (either format of the ``tests`` section)."""
        return failing_tests(self.document)

    def records(self) -> list[dict[str, Any]]:
        """The per-test records the verdict carries (every test that did not pass, in format 2)."""
        return verdict_records(self.document)

    def dod_item(self, item_id: str) -> Mapping[str, Any] | None:
        """The verdict's entry for one DoD item, or None."""
        return next((d for d in _maps(self.document.get("dod")) if d.get("id") == item_id), None)

    def dod_failing(self, item_id: str) -> list[Mapping[str, Any]]:
        """The tests of one DoD item that did not pass (``{"nodeid", "outcome"}`` each)."""
        item = self.dod_item(item_id) or {}
        return [t for t in _maps(item.get("tests")) if t.get("outcome") != "passed"]

    def failed_gates(self, kind: str) -> list[Mapping[str, Any]]:
        """The ``hard`` or ``measured`` gates whose status is not ``pass``."""
        gates = self.document.get("gates")
        listed = gates.get(kind) if isinstance(gates, Mapping) else None
        return [g for g in _maps(listed) if g.get("status") != "pass"]

    def reasons(self) -> list[Mapping[str, Any]]:
        """The verdict's reasons (``{"code", "message"}`` each), in its order."""
        return _maps(self.document.get("reasons"))

    def findings(self, *, blocking: bool = False) -> list[Mapping[str, Any]]:
        """The tamper findings; ``blocking`` keeps only those the contract does not allow."""
        tamper = self.document.get("tamper")
        found = _maps(tamper.get("findings") if isinstance(tamper, Mapping) else None)
        return [f for f in found if not (blocking and f.get("allowed"))]


_MARK = {"done": "[x]", "failed": "[ ]", "no_tests": "[?]"}
_GATE_MARK = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING", "error": "ERROR"}


def render_checklist(document: Mapping[str, Any]) -> list[str]:
    """The human summary both entry points print: DoD checklist, gates, tamper, verdict.

    Under each DoD item not done and each gate that names tests (regressions), the first of
    those tests with phase and error, and how many more (:func:`.failure_lines`)."""
    contract = document["contract"]
    lines = [
        f"loop-contract: {contract.get('id')} ({document['trust']}) "
        f"verdict: {str(document['verdict']).upper()} (exit {document['exit_code']})",
    ]
    view = VerdictView(document)
    for item in document["dod"]:
        tests = item["tests"]
        failing = view.dod_failing(item["id"])
        lines.append(
            f"  {_MARK.get(item['status'], '[ ]')} {item['id']}: {item['text']} "
            f"({len(tests) - len(failing)}/{len(tests)} tests passed)"
        )
        pairs = ((str(t.get("nodeid")), str(t.get("outcome"))) for t in failing)
        lines.extend(f"        {line}" for line in failure_lines(document, pairs))
    for kind in ("hard", "measured"):
        for gate in document["gates"][kind]:
            mark = _GATE_MARK.get(gate["status"], gate["status"].upper())
            lines.append(f"  {kind} gate {gate['id']}: {mark} - {gate['message']}")
            named = failure_lines(document, gate_failures(gate))
            lines.extend(f"        {line}" for line in named)
    lines.extend(_tamper_lines(document["tamper"]["findings"]))
    if document["verdict"] != "pass":
        lines.extend(
            f"  reason {r['code']}: {r['message']}"
            for r in document["reasons"]
            if r["code"] not in ("hard_gate_failed", "measured_gate_failed", "tamper_detected")
        )
    return [readable_ids(line) for line in lines]  # node ids as the text they are


TAMPER_SHOWN = 3  # findings of one code named in the summary; the verdict holds them all


def _tamper_lines(findings: Sequence[Mapping[str, Any]]) -> list[str]:
    """The findings grouped by code, in the order the codes first appear: the first
    :data:`TAMPER_SHOWN` of each, then how many more (one twin finding per wrong expectation
    would otherwise fill the screen)."""
    by_code: dict[str, list[Mapping[str, Any]]] = {}
    for finding in findings:
        by_code.setdefault(str(finding["code"]), []).append(finding)
    lines: list[str] = []
    for code, group in by_code.items():
        for finding in group[:TAMPER_SHOWN]:
            allowed = " (allowed by contract)" if finding.get("allowed") else ""
            where = finding.get("path", "")
            if finding.get("line"):
                where += f":{finding['line']}"
            lines.append(f"  TAMPER {code}{allowed}: {finding['message']} {where}".rstrip())
        if len(group) > TAMPER_SHOWN:
            lines.append(
                f"  TAMPER {code}: ... and {len(group) - TAMPER_SHOWN} more (verdict.json)"
            )
    return lines


def gate_failures(gate: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The tests a failed gate names, ``(nodeid, outcome)`` in its order: the regressions of a
    ``pass_to_pass`` gate, the tests of a ``tests`` gate not passing. None for a gate that
    passed, nor for an acceptance gate: every reader lists those under their DoD items."""
    failing = gate.get("failing")
    if gate.get("kind") == "acceptance" or gate.get("status") == "pass":
        return []
    if not isinstance(failing, Mapping):
        return []
    return [(str(n), str(o)) for n, o in failing.items()]
