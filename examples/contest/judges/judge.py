"""A scripted contest judge: a deterministic local program standing in for a judging model.

Usage: ``python judge.py PERSONA PACKET_FILE`` (PERSONA: ``strict``, ``lenient`` or
``evidence``). It reads the judging packet and prints one reply on stdout, scoring every
candidate label on every row of the packet. The scores come only from what the packet shows:

* the gates: every hard gate passing, every measured gate passing, and by how much;
* the test counts (passed / failed);
* the diff: its size, and whether it adds tests, docstrings or comments.

The persona shifts the scores a little so the matrix is not uniform: ``strict`` marks down
large diffs and changes without comments, ``lenient`` rounds up, ``evidence`` weighs the
measured gates' margins and any tests in the diff. A candidate whose gates all pass scores at
least 6.5 on every row from every persona. The same packet always gets the same reply, a
repair request included (the reply is rebuilt from the packet; it was valid the first time).

It writes ``{"tokens": 0, "cost_usd": 0.0}`` to ``$LOOP_CONTRACT_REPORT``: no model is used.
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PERSONAS = ("strict", "lenient", "evidence")
CONFIDENCE = {"strict": 0.8, "lenient": 0.6, "evidence": 0.7}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_TEST_PATH = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$)")
_TEST_DEF = re.compile(r"^\s*def (test_\w+)")


@dataclass
class DiffFacts:
    """What a judge can read off a unified diff without running anything."""

    files: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    docstrings: int = 0
    comments: int = 0
    tests: list[str] = field(default_factory=list)  # test files or path::test names added
    first_def: str = ""  # path:line of the first def/class added
    first_added: str = ""  # path:line of the first line added


def read_diff(diff: str) -> DiffFacts:
    facts = DiffFacts()
    path, line = "", 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            name = text[4:].strip()
            path = name[2:] if name.startswith("b/") else ("" if name == "/dev/null" else name)
            if path and path not in facts.files:
                facts.files.append(path)
                if _TEST_PATH.search(path):
                    facts.tests.append(path)
            continue
        if text.startswith("--- "):
            continue
        hunk = _HUNK.match(text)
        if hunk:
            line = int(hunk.group(1))
            continue
        if text.startswith("+"):
            body = text[1:]
            facts.added += 1
            if '"""' in body or "'''" in body:
                facts.docstrings += 1
            if body.lstrip().startswith("#"):
                facts.comments += 1
            test = _TEST_DEF.match(body)
            if test and path:
                facts.tests.append(f"{path}::{test.group(1)}")
            if path and not facts.first_added and not re.match(r"(from|import) ", body):
                facts.first_added = f"{path}:{line}"
            if path and not facts.first_def and re.match(r"\s*(def|class) ", body):
                facts.first_def = f"{path}:{line}"
            line += 1
        elif text.startswith("-"):
            facts.removed += 1
        elif text.startswith(" "):
            line += 1
    return facts


@dataclass
class GateFacts:
    hard_total: int
    hard_passed: int
    measured_total: int
    measured_passed: int
    margins: list[float]  # per passing measured gate: how far inside its threshold, 0..1
    headline: str  # e.g. "tick-arithmetic 2.975 <= 4"
    passed_tests: int
    failed_tests: int


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _margin(gate: dict[str, Any]) -> float:
    observed, threshold = _number(gate.get("observed")), _number(gate.get("threshold"))
    if observed is None or threshold is None:
        return 0.0
    scale = max(abs(threshold), 1.0)
    if gate.get("op") in ("<=", "<"):
        return max(0.0, min(1.0, (threshold - observed) / scale))
    if gate.get("op") in (">=", ">"):
        return max(0.0, min(1.0, (observed - threshold) / scale))
    return 0.0


def read_gates(candidate: dict[str, Any]) -> GateFacts:
    gates = candidate.get("gates") if isinstance(candidate.get("gates"), dict) else {}
    hard = [g for g in gates.get("hard") or [] if isinstance(g, dict)]
    measured = [g for g in gates.get("measured") or [] if isinstance(g, dict)]
    passing = [g for g in measured if g.get("status") == "pass"]
    headline = ""
    for gate in measured:
        if _number(gate.get("observed")) is not None:
            observed = _number(gate.get("observed"))
            threshold = _number(gate.get("threshold"))
            limit = "?" if threshold is None else f"{threshold:g}"
            headline = f"{gate.get('id', '?')} {observed:g} {gate.get('op', '?')} {limit}"
            break
    tests = candidate.get("tests") if isinstance(candidate.get("tests"), dict) else {}
    return GateFacts(
        hard_total=len(hard),
        hard_passed=sum(1 for g in hard if g.get("status") == "pass"),
        measured_total=len(measured),
        measured_passed=len(passing),
        margins=[_margin(g) for g in passing],
        headline=headline,
        passed_tests=int(_number(tests.get("passed")) or 0),
        failed_tests=int(_number(tests.get("failed")) or 0),
    )


def _clamp(score: float) -> float:
    return max(0.0, min(10.0, round(score * 2) / 2))


def score_row(row: str, persona: str, gates: GateFacts, diff: DiffFacts) -> float:
    """One cell's score; rounded to halves so replies are stable and easy to read."""
    hard_ok = gates.hard_total > 0 and gates.hard_passed == gates.hard_total
    measured_ok = gates.measured_passed == gates.measured_total
    gates_ok = hard_ok and measured_ok
    documented = diff.docstrings > 0
    commented = diff.comments > 0
    margin = sum(gates.margins) / len(gates.margins) if gates.margins else 0.0
    ran = gates.passed_tests + gates.failed_tests
    pass_rate = gates.passed_tests / ran if ran else 0.0

    score = 7.0 if gates_ok else 3.0
    if row == "question_fidelity":
        score += 0.5 * documented + (0.5 if diff.files and not diff.tests else 0.0)
    elif row == "completeness":
        score += 0.5 * documented + 0.5 * commented + (0.5 if diff.removed <= diff.added else 0)
    elif row == "evidence":
        score += 1.0 * margin + (1.0 if diff.tests else 0.0) + 0.5 * documented
    elif row == "test_agreement":
        score += 2.0 * pass_rate - 1.0 + (0.5 if gates.failed_tests == 0 and ran else 0.0)
    else:  # a row this judge does not know: the gates alone
        score += 0.5 * measured_ok

    if persona == "strict":
        score -= 0.5
        if diff.added > 40:
            score -= 0.5
        if not commented:
            score -= 0.5
    elif persona == "lenient":
        score += 1.0
    elif persona == "evidence" and row in ("evidence", "test_agreement"):
        score += 1.5 * margin - 0.5
    if gates_ok:
        score = max(score, 6.5)
    return _clamp(score)


def confidence(persona: str, gates: GateFacts, diff: DiffFacts) -> float:
    value = CONFIDENCE[persona]
    if gates.measured_total and gates.headline:
        value += 0.05
    if diff.tests:
        value += 0.05
    return round(max(0.6, min(0.9, value)), 2)


def pointer(row: str, diff: DiffFacts) -> str:
    """Where the judge looked: a test in the diff for the evidence rows, else the code."""
    if row in ("evidence", "test_agreement") and diff.tests:
        return diff.tests[0]
    if diff.first_def or diff.first_added:
        return diff.first_def or diff.first_added
    return diff.files[0] if diff.files else "(empty diff)"


def rationale(row: str, gates: GateFacts, diff: DiffFacts) -> str:
    parts = [
        f"{row}: hard gates {gates.hard_passed}/{gates.hard_total} pass",
        f"measured {gates.measured_passed}/{gates.measured_total} pass"
        + (f" ({gates.headline})" if gates.headline else ""),
        f"tests {gates.passed_tests} passed/{gates.failed_tests} failed",
        f"+{diff.added}/-{diff.removed} lines",
        f"{'with' if diff.docstrings else 'no'} docstrings",
        f"{'with' if diff.comments else 'no'} comments",
        f"{'adds tests' if diff.tests else 'no tests in diff'}",
    ]
    return ("; ".join(parts)).replace("\n", " ")[:300]


def reply(persona: str, packet: dict[str, Any]) -> dict[str, Any]:
    rows = [r for r in packet.get("rows") or [] if isinstance(r, str)]
    scores = []
    for candidate in packet.get("candidates") or []:
        if not isinstance(candidate, dict) or not isinstance(candidate.get("label"), str):
            continue
        diff = read_diff(str(candidate.get("diff") or ""))
        gates = read_gates(candidate)
        for row in rows:
            scores.append(
                {
                    "candidate": candidate["label"],
                    "row": row,
                    "score": score_row(row, persona, gates, diff),
                    "confidence": confidence(persona, gates, diff),
                    "evidence": pointer(row, diff),
                    "rationale": rationale(row, gates, diff),
                }
            )
    return {"scores": scores}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in PERSONAS:
        print(f"usage: judge.py {{{','.join(PERSONAS)}}} PACKET_FILE", file=sys.stderr)
        return 2
    persona, packet_file = argv
    packet = json.loads(Path(packet_file).read_text("utf-8"))
    if not isinstance(packet, dict):
        print("scripted judge: the packet is not a JSON object", file=sys.stderr)
        return 2
    repair = packet.get("repair")
    note = " (answering a repair request)" if repair else ""
    print(f"scripted judge {persona}: a deterministic program, not a model{note}", file=sys.stderr)
    report = os.environ.get("LOOP_CONTRACT_REPORT")
    if report:
        Path(report).write_text(json.dumps({"tokens": 0, "cost_usd": 0.0}) + "\n", "utf-8")
    print(json.dumps(reply(persona, packet), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
