"""Claude Code (``claude -p --output-format json``): one result object on stdout.

Format followed: Claude Code 1.x/2.x headless mode, https://code.claude.com/docs/en/headless
(formerly docs.anthropic.com/en/docs/claude-code/sdk/sdk-headless) and the Agent SDK's result
message, https://code.claude.com/docs/en/agent-sdk/typescript (``SDKResultMessage``):
``{"type": "result", "subtype": "success" | "error_max_turns" | "error_during_execution" |
...,"is_error": bool, "result": str, "stop_reason": str, "total_cost_usd": float,
"usage": {"input_tokens", "output_tokens", "cache_creation_input_tokens",
"cache_read_input_tokens"}, ...}``. A failed API call comes back as ``is_error: true`` with
the API's message in ``result`` ("Invalid API key · Please run /login", "API Error: 429 ...");
2.1.332 (proven against the real binary, ``tests/contest/presets/test_real_claude_code.py``)
also gives the HTTP status, ``api_error_status``.
A refusal is the Messages API's ``stop_reason: "refusal"``
(https://docs.claude.com/en/api/handling-stop-reasons) or Claude Code's usage-policy sentence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_loopcontract.contest.presets.model import (
    AUTH_FAILED,
    RATE_LIMITED,
    REFUSED,
    Output,
    Preset,
    Reading,
    json_lines,
    json_object,
    non_negative_int,
    non_negative_number,
)
from pytest_loopcontract.contest.presets.signals import error_reading, first_line, stderr_reading

__all__ = ["PRESET", "read"]

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
_POLICY = "violate our usage policy"
# Claude Code 2.1.332 names the API's status in the result object ("api_error_status": 401, with
# "Failed to authenticate. API Error: 401 authentication_error"): read it, not the wording.
_API_STATUS = {401: AUTH_FAILED, 403: AUTH_FAILED, 429: RATE_LIMITED}

# acceptEdits lets the agent edit files but refuses every shell command ("This command
# requires approval", seen on Claude Code 2.1.332), so an agent could not run the tests: the
# project's test runner, loop-contract (verify, flag) and read-only git are allowed by name,
# and everything else stays refused (a `curl` is a permission denial in the result object).
ALLOWED_COMMANDS = (
    "Bash(python -m pytest:*)",
    "Bash(python3 -m pytest:*)",
    "Bash(pytest:*)",
    "Bash(loop-contract:*)",
    "Bash(git status:*)",
    "Bash(git diff:*)",
    "Bash(git log:*)",
)
GENERATE = (
    "claude",
    "-p",
    "Carry out the task described in the file {prompt_file} (read it first).",
    "--output-format",
    "json",
    "--permission-mode",
    "acceptEdits",
    "--allowedTools",
    *ALLOWED_COMMANDS,
)
JUDGE = (
    "claude",
    "-p",
    "Read the judging packet in the file {packet_file} and reply with only the JSON object "
    "it asks for.",
    "--output-format",
    "json",
)


def read(output: Output) -> Reading:
    """Tokens and cost from the result object; refusal, auth failure and rate limit from its
    error fields. Without a result object nothing is claimed (stderr may still say why)."""
    result = _result_object(output.stdout)
    if result is None:
        return stderr_reading(output, "claude")
    usage = result.get("usage")
    tokens = _tokens(usage) if isinstance(usage, dict) else None
    cost = non_negative_number(result.get("total_cost_usd"))
    text = result.get("result") if isinstance(result.get("result"), str) else None
    base = Reading(tokens=tokens, cost_usd=cost, reply=text)
    if result.get("stop_reason") == "refusal" or _POLICY in (text or "").lower():
        why = first_line(text or "") or "stop_reason refusal"
        return replace(base, outcome=REFUSED, reason=f"refused: {why}")
    status = result.get("api_error_status")
    if status in _API_STATUS and result.get("is_error") is True:
        kind = _API_STATUS[status]
        return replace(
            base, outcome=kind, reason=f"{kind.replace('_', ' ')}: {first_line(text or '')}"
        )
    if result.get("is_error") is True or str(result.get("subtype", "success")) != "success":
        return error_reading(base, "claude", text or str(result.get("subtype")))
    return base


def _result_object(stdout: str | None) -> dict[str, Any] | None:
    """The ``json`` format's one object, or the last ``result`` line of ``stream-json``."""
    doc = json_object(stdout)
    if doc is not None and doc.get("type") == "result":
        return doc
    found = None
    for line in json_lines(stdout):
        if line.get("type") == "result":
            found = line
    return found


def _tokens(usage: dict[str, Any]) -> int | None:
    counts = [non_negative_int(usage.get(key)) for key in _USAGE_KEYS if key in usage]
    if not counts or any(c is None for c in counts):
        return None
    return sum(c for c in counts if c is not None)


PRESET = Preset(
    name="claude-code",
    family="anthropic",
    generate=GENERATE,
    judge=JUDGE,
    source="Claude Code 1.x/2.x `claude -p --output-format json` result object "
    "(https://code.claude.com/docs/en/headless)",
    read=read,
    proven="2.1.332",
)
