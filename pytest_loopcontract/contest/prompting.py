"""The task prompt every seat of a contest receives.

Why it is built here and only from trusted parts: the prompt is the one channel into every
seat at once. It carries the contract as written (goal, DoD items, the gates with their
thresholds), the lessons block (verifier evidence from earlier runs), a person's rejection
reason, and on a retry that seat's own failed gates as the verifier measured them. Nothing a
candidate wrote (its messages, its diff, its test output) is ever copied in, so one seat cannot
steer another, or its own next attempt, through the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.plural import plural
from pytest_loopcontract.verdict import VerdictView

__all__ = ["contest_prompt", "retry_notes"]


def contest_prompt(
    contract: Contract,
    *,
    attempt: int,
    lessons_block: str = "",
    rejection: str | None = None,
    retry: Sequence[str] = (),
) -> str:
    """The prompt text for one seat's attempt."""
    lines = [
        f"# Task: {contract.goal}",
        "",
        f"Contract `{contract.id}` ({contract.mode} mode). Change the repository in your working "
        "directory so that every item below is done. An external verifier runs the tests in an "
        "isolated copy; edits to tests, test configuration or the contract are detected and fail.",
        "",
        "## Definition of done",
    ]
    for item in contract.dod:
        tests = ", ".join(item.tests) or "tests marked @pytest.mark.dod"
        lines.append(f"- [{item.id}] {item.text} (tests: {tests})")
    lines += ["", "## Gates"]
    for hard in contract.hard_gates:
        lines.append(f"- hard `{hard.id}` ({hard.kind})")
    for gate in contract.measured_gates:
        unit = f" {gate.unit}" if gate.unit else ""
        lines.append(f"- measured `{gate.id}`: {gate.metric} {gate.op} {gate.threshold}{unit}")
    if contract.boundaries.allow:
        lines += ["", "Only change files under: " + ", ".join(contract.boundaries.allow)]
    if contract.constraints:
        lines += ["", "## Constraints", *(f"- {c}" for c in contract.constraints)]
    lines += [
        "",
        "If the task cannot be done as specified (the tests contradict the goal, a permission "
        'you need is missing), do not work around the tests: write {"flag": "WHY"} to the JSON '
        "report file named by $LOOP_CONTRACT_REPORT and stop. A person reads the flag; a flag "
        "is never held against you, a cheat always is.",
    ]
    if lessons_block:
        lines += ["", lessons_block.rstrip()]
    if rejection:
        lines += ["", "## A person rejected the previous winner", rejection.strip()]
    if retry:
        lines += [
            "",
            f"## Attempt {attempt}: your previous candidate failed these gates (verifier log)",
            *(f"- {note}" for note in retry),
        ]
    return "\n".join(lines) + "\n"


def retry_notes(verdict: Mapping[str, Any]) -> list[str]:
    """The verifier's own account of a failed candidate, for that seat's next attempt.

    Only verifier-produced fields: gate ids and statuses, measured values, finding codes and
    paths, the node ids of tests that did not pass. Never failure text the candidate's code
    printed.
    """
    notes: list[str] = []
    view = VerdictView(verdict)
    for finding in view.findings(blocking=True):
        notes.append(f"tampering `{finding.get('code')}` at {finding.get('path') or '-'}")
    for gate in view.failed_gates("hard"):
        notes.append(f"hard gate `{gate.get('id')}` ({gate.get('kind')}): {gate.get('status')}")
    for gate in view.failed_gates("measured"):
        notes.append(
            f"measured gate `{gate.get('id')}`: {gate.get('metric')} observed "
            f"{gate.get('observed')} against {gate.get('op')} {gate.get('threshold')}"
        )
    hidden = {str(r.get("nodeid")) for r in view.records() if r.get("hidden")}
    failing = [n for n in view.failing_tests() if n not in hidden]  # hidden tests stay unnamed
    notes.extend(f"test did not pass: {nodeid}" for nodeid in failing[:20])
    if len(failing) > 20:
        notes.append(f"... and {plural(len(failing) - 20, 'more test')}")
    for reason in verdict.get("reasons") or []:
        if reason.get("code") not in (
            "hard_gate_failed",
            "measured_gate_failed",
            "tamper_detected",
        ):
            notes.append(f"reason `{reason.get('code')}`")
    return notes
