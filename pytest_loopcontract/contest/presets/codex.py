"""OpenAI Codex CLI (``codex exec --json``): JSON Lines events on stdout.

Format followed: Codex CLI 0.4x+ non-interactive mode, https://github.com/openai/codex/blob/main/docs/exec.md
(events ``thread.started``, ``turn.started``, ``turn.completed`` with
``usage: {input_tokens, cached_input_tokens, output_tokens}``, ``turn.failed`` with
``error: {message}``, ``item.*`` with items such as ``agent_message``; and a top-level
``error`` event with ``message``). Codex prints no cost, so ``cost_usd`` stays unknown;
tokens are input + output over every completed turn (cached input is part of input). Codex
documents no refusal marker: a refusal is read from the seat's report file.
"""

from __future__ import annotations

from pytest_loopcontract.contest.presets.model import (
    Output,
    Preset,
    Reading,
    json_lines,
    non_negative_int,
)
from pytest_loopcontract.contest.presets.signals import error_reading, stderr_reading

__all__ = ["PRESET", "read"]

# Codex 0.171 removed --full-auto ("unexpected argument"); its exec mode asks for no approval,
# and --sandbox workspace-write lets the agent edit the workspace and run commands in it.
GENERATE = (
    "codex",
    "exec",
    "--json",
    "--sandbox",
    "workspace-write",
    "Carry out the task described in the file {prompt_file} (read it first).",
)
JUDGE = (
    "codex",
    "exec",
    "--json",
    "--sandbox",
    "read-only",
    "--skip-git-repo-check",
    "Read the judging packet in the file {packet_file} and reply with only the JSON object "
    "it asks for.",
)


def read(output: Output) -> Reading:
    """Tokens from ``turn.completed``; the failure from ``turn.failed`` or ``error`` events;
    the reply is the last ``agent_message``."""
    tokens: int | None = None
    errors: list[str] = []
    reply: str | None = None
    seen_usage = False
    for event in json_lines(output.stdout):
        kind = event.get("type")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            turn = _turn_tokens(event["usage"])
            if turn is not None:
                tokens = (tokens or 0) + turn
                seen_usage = True
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            errors.append(str(message or "turn failed"))
        elif kind == "error":
            errors.append(str(event.get("message") or "error"))
        elif kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                reply = text if isinstance(text, str) else reply
    base = Reading(tokens=tokens if seen_usage else None, reply=reply)
    if errors:
        return error_reading(base, "codex", "\n".join(reversed(errors)))
    return stderr_reading(output, "codex", base)


def _turn_tokens(usage: dict[str, object]) -> int | None:
    sent = non_negative_int(usage.get("input_tokens"))
    received = non_negative_int(usage.get("output_tokens"))
    if sent is None or received is None:
        return None
    return sent + received


PRESET = Preset(
    name="codex",
    family="openai",
    generate=GENERATE,
    judge=JUDGE,
    source="Codex CLI `codex exec --json` JSONL events "
    "(https://github.com/openai/codex/blob/main/docs/exec.md)",
    read=read,
    proven="0.171.0",
)
