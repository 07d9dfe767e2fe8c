"""The verdict: one verification's machine-readable outcome, its schema and its exit codes.

Everything downstream (the loop, the contest, the GitHub Action) reads verdicts rather than
pytest output, so the keys and reason codes here are a public, stable interface.
"""

from __future__ import annotations

import json
import os
import platform
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .gates import DodResult, GateResult
from .verdict_tests import pack_tests

__all__ = [
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
    "Finding",
    "Reason",
    "build_verdict",
    "render_checklist",
    "validate_verdict",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
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


@dataclass(frozen=True)
class Reason:
    code: str
    message: str


@dataclass(frozen=True)
class Finding:
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


def _summary(outcomes: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(
        ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected", "missing"), 0
    )
    total = 0
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
        total += 1
    counts["total"] = total
    return counts


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
        return "error", EXIT_NOT_MET, reasons
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
    tests: Sequence[Mapping[str, Any]],
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

    ``tests`` are per-test records; they are written compactly (:func:`pack_tests`), with the
    durations of passed tests only when ``durations`` (a gate measured them)."""
    verdict, exit_code, reasons = decide(hard, measured, findings, errors, checkpoints)
    decision = {"pass": "done", "fail": "continue", "error": "continue"}[verdict]
    if exit_code == EXIT_AWAIT_HUMAN:
        decision = "await_human"
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pytest-loopcontract", "version": tool_version},
        "contract": dict(contract),
        "trust": trust,
        "nonce": nonce,
        "verdict": verdict,
        "exit_code": exit_code,
        "reasons": [{"code": r.code, "message": r.message} for r in reasons],
        "dod": [
            {
                "id": d.id,
                "text": d.text,
                "status": d.status,
                "tests": [{"nodeid": n, "outcome": o} for n, o in d.tests],
            }
            for d in dod
        ],
        "gates": {
            "hard": [_gate_json(g) for g in hard],
            "measured": [_gate_json(g) for g in measured],
        },
        "tamper": {
            "detected": any(not f.allowed for f in findings),
            "findings": [f.to_json() for f in findings],
            **({"checks": [dict(c) for c in checks]} if checks else {}),
        },
        "baseline": dict(baseline),
        "tests": pack_tests(tests, durations=durations),
        "summary": _summary(str(t["outcome"]) for t in tests),
        "loop": {"iteration": None, "decision": decision, "stop_reason": None},
        "environment": dict(environment),
        "timing": dict(timing),
    }
    if egress is not None:
        document["egress"] = dict(egress)
    if reruns:
        document["reruns"] = [dict(r) for r in reruns]
    if confinement is not None:
        document["isolation"] = confinement["mode"]
        document["confinement"] = {
            "note": str(confinement.get("note", "")),
            "leftovers": list(confinement.get("leftovers", ())),
        }
    return document


def environment_info(commit: str | None, dirty: bool | None) -> dict[str, Any]:
    import pytest

    return {
        "commit": commit,
        "dirty": dirty,
        "python": platform.python_version(),
        "pytest": pytest.__version__,
    }


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


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_json(document: Any, **options: Any) -> str:
    """JSON text that is always valid UTF-8, whatever bytes a test produced.

    A node id or message can hold lone surrogates (``os.fsdecode`` of an undecodable file name
    gives ``'\\udcff'``), which UTF-8 cannot encode. They can only stand inside JSON strings,
    so each becomes its ``\\uXXXX`` escape: reversible (``json.loads`` gives the same string
    back, so node ids still match between runs) while everything else stays readable.
    """
    text = json.dumps(document, ensure_ascii=False, **options)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json_atomic(path: str | os.PathLike[str], document: Any) -> None:
    """Write a JSON document atomically (see :func:`write_bytes_atomic`)."""
    text = dumps_json(document, separators=(",", ":")) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write-then-rename with fsync, so a crash leaves the old file or the new one, never half."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_MARK = {"done": "[x]", "failed": "[ ]", "no_tests": "[?]"}
_GATE_MARK = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING", "error": "ERROR"}


def render_checklist(document: Mapping[str, Any]) -> list[str]:
    """The human summary both entry points print: DoD checklist, gates, tamper, verdict."""
    contract = document["contract"]
    lines = [
        f"loop-contract: {contract.get('id')} ({document['trust']}) "
        f"verdict: {str(document['verdict']).upper()} (exit {document['exit_code']})",
    ]
    for item in document["dod"]:
        tests = item["tests"]
        passed = sum(1 for t in tests if t["outcome"] == "passed")
        lines.append(
            f"  {_MARK.get(item['status'], '[ ]')} {item['id']}: {item['text']} "
            f"({passed}/{len(tests)} tests passed)"
        )
        lines.extend(
            f"        {t['outcome']}: {t['nodeid']}" for t in tests if t["outcome"] != "passed"
        )
    for kind in ("hard", "measured"):
        for gate in document["gates"][kind]:
            mark = _GATE_MARK.get(gate["status"], gate["status"].upper())
            lines.append(f"  {kind} gate {gate['id']}: {mark} - {gate['message']}")
    for finding in document["tamper"]["findings"]:
        allowed = " (allowed by contract)" if finding.get("allowed") else ""
        where = finding.get("path", "")
        if finding.get("line"):
            where += f":{finding['line']}"
        lines.append(f"  TAMPER {finding['code']}{allowed}: {finding['message']} {where}".rstrip())
    if document["verdict"] != "pass":
        lines.extend(
            f"  reason {r['code']}: {r['message']}"
            for r in document["reasons"]
            if r["code"] not in ("hard_gate_failed", "measured_gate_failed", "tamper_detected")
        )
    return lines
