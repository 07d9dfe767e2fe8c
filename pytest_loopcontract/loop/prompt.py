"""The prompt for the agent's next turn, built from the contract and the last verdict.

The agent gets the goal, what is still failing and why (in the verifier's words, never its own
earlier claims), what it must not touch, and what a person decided about its checkpoints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.verdict import VerdictView, gate_failures
from pytest_loopcontract.verdict_outcomes import failure_lines

__all__ = ["HONEST_WAY_OUT", "build_prompt", "failure_report", "substitute"]

MAX_FAILING_SHOWN = 20
MAX_MESSAGE = 600


HONEST_WAY_OUT = (
    "If the task cannot be done as specified (the tests contradict the goal, a permission "
    "you need is missing), do not work around the tests: run `loop-contract flag --reason "
    "'WHY' --evidence 'TEST ID OR LINE'` and stop. A person reads the flag and decides; "
    "a flag is never held against you, a cheat always is."
)
"""What every prompt says about flagging (the loop's, and a contest seat's)."""


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _hidden(nodeid: str, places: frozenset[str]) -> bool:
    return nodeid.split("::", 1)[0] in places


def _dod_lines(contract: Contract, verdict: Mapping[str, Any] | None) -> list[str]:
    """Hidden acceptance tests (``dod[].hidden``) are counted, never named."""
    view = VerdictView(verdict or {})
    places = frozenset(h.to for h in contract.hidden_tests())
    lines = []
    for item in contract.dod:
        found = view.dod_item(item.id)
        mark = "[x]" if found and found.get("status") == "done" else "[ ]"
        lines.append(f"{mark} {item.id}: {item.text}")
        if found is None:  # no verdict yet (the first turn): say which tests decide the item
            lines.extend(f"    must pass: {test}" for test in item.tests[:MAX_FAILING_SHOWN])
            lines.append(f'    (and every test marked @pytest.mark.dod("{item.id}"))')
        elif found.get("status") != "done":
            failing = [
                (str(t.get("nodeid")), str(t.get("outcome"))) for t in view.dod_failing(item.id)
            ]
            lines.extend(
                f"    {line}" for line in failure_lines(view.document, failing, hide=places)
            )
        if item.hidden:
            lines.append("    (hidden acceptance tests also decide this item; you cannot see them)")
    return lines


def _scrub(text: str, places: frozenset[str]) -> str:
    """A reason that names a hidden test (a vacuous-pass finding) names it no more."""
    for place in places:
        text = re.sub(re.escape(place) + r"(?:::[^\s,;:]+(?:::[^\s,;:]+)*)?", "[hidden test]", text)
    return text


def _reason_lines(verdict: Mapping[str, Any], places: frozenset[str]) -> list[str]:
    """The verifier's reasons, each failed gate's with the first tests it names (the
    regressions, with phase and error) and how many more."""
    view = VerdictView(verdict)
    named = {
        f"{g.get('id')}: {g.get('message')}": gate_failures(g)
        for kind in ("hard", "measured")
        for g in view.failed_gates(kind)
    }
    lines = []
    for reason in view.reasons():
        lines.append(f"- {reason['code']}: {_clip(_scrub(reason['message'], places))}")
        tests = named.get(str(reason.get("message"))) or []
        lines.extend(f"    {line}" for line in failure_lines(verdict, tests, hide=places))
    return lines


def _message_lines(verdict: Mapping[str, Any], places: frozenset[str]) -> list[str]:
    """The first failure messages in full (clipped), hidden tests' never."""
    messages = {
        t["nodeid"]: t.get("message", "")
        for t in VerdictView(verdict).records()
        if t.get("outcome") in ("failed", "error")
        and t.get("message")
        and not t.get("hidden")
        and not _hidden(str(t.get("nodeid")), places)
    }
    return [
        f"--- {nodeid}\n{_clip(message, 1500)}" for nodeid, message in list(messages.items())[:5]
    ]


def failure_report(contract: Contract, verdict: Mapping[str, Any]) -> list[str]:
    """What the verifier found, as an agent may read it: the reasons (a failed gate's with the
    first regressions it names), each DoD item not done with the first tests that failed it
    (hidden acceptance tests counted, never named), then the first failure messages. The
    agent CLIs' Stop hook sends it back with a blocked stop."""
    places = frozenset(h.to for h in contract.hidden_tests())
    return [
        *_reason_lines(verdict, places),
        *_undone_lines(contract, verdict),
        *_message_lines(verdict, places),
    ]


def _undone_lines(contract: Contract, verdict: Mapping[str, Any]) -> list[str]:
    """The DoD lines of the items not done (``_dod_lines`` without the done ones)."""
    lines, keep = [], False
    for line in _dod_lines(contract, verdict):
        if not line.startswith("    "):
            keep = line.startswith("[ ]")
        if keep:
            lines.append(line)
    return lines


def build_prompt(
    contract: Contract,
    *,
    iteration: int,
    verdict: Mapping[str, Any] | None,
    checkpoint_notes: Sequence[str] = (),
    lessons: str = "",
    protected: Sequence[str] = (),
) -> str:
    """The full text for one turn; plain markdown, no secrets, no identities."""
    parts = [
        f"# Task: {contract.id} (turn {iteration})",
        "",
        contract.goal or "(no goal text in the contract)",
        "",
        "## Definition of Done (measured by an external verifier, not by you)",
        *_dod_lines(contract, verdict),
    ]
    if contract.constraints:
        parts += ["", "## Constraints", *(f"- {c}" for c in contract.constraints)]
    if verdict is not None and verdict.get("verdict") != "pass":
        places = frozenset(h.to for h in contract.hidden_tests())
        found = [*_reason_lines(verdict, places), *_message_lines(verdict, places)]
        parts += ["", "## What the verifier found last turn", *found]
    if checkpoint_notes:
        parts += ["", "## Decisions by a person", *(f"- {n}" for n in checkpoint_notes)]
    if lessons.strip():
        parts += ["", "## Lessons from earlier attempts", lessons.strip()]
    rules = [
        "Change the code, not the referee: test files, conftest.py, test configuration, CI "
        "files and the contract are pinned; edits to them are reverted for the run and "
        "reported as tampering.",
        "Do not push, publish, delete outside the workspace or touch credentials: those "
        "actions wait for a person.",
        HONEST_WAY_OUT,
    ]
    if protected:
        rules.append("Pinned paths include: " + ", ".join(sorted(protected)[:30]))
    parts += ["", "## Rules", *(f"- {r}" for r in rules)]
    return "\n".join(parts) + "\n"


def substitute(argv: Sequence[str], prompt: str, prompt_file: str) -> tuple[list[str], bool]:
    """Fill ``{prompt}`` and ``{prompt_file}`` in an agent command; report whether either was
    used (when neither is, the prompt goes to the agent's stdin)."""
    used = False
    out = []
    for arg in argv:
        if "{prompt}" in arg or "{prompt_file}" in arg:
            used = True
            arg = arg.replace("{prompt_file}", prompt_file).replace("{prompt}", prompt)
        out.append(arg)
    return out, used
