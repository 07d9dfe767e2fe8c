"""Gemini CLI (``gemini -p ... --output-format json``): one JSON object on stdout.

Format followed: Gemini CLI 0.6+ headless mode,
https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/headless.md
(``{"response": str, "stats": {"models": {"<model>": {"api": {...}, "tokens": {"prompt",
"candidates", "total", "cached", "thoughts", "tool"}}}, "tools": {...}, "files": {...}},
"error": {"type", "message", "code"}}``, ``error`` only when the request failed; exit code 41
is an authentication error). Tokens are the sum of ``tokens.total`` over the models; Gemini
prints no cost. Gemini documents no refusal marker: a refusal is read from the report file.
The file tools only reach the workspace, so the prompt's folder is added with
``--include-directories``.

Proven on 0.61.0 against a scripted Gemini API server (``tests/contest/presets/
test_gemini_real.py``): ``auto_edit`` alone offers no shell, so the agent could not run the
tests; ``--allowed-tools`` (deprecated in favour of policy files, still honoured by 0.61) lets
the test runner, ``loop-contract`` and read-only git through, and every other command is
"denied by policy". The flag takes one value per use (a second value would be read as the
prompt). A failed API call leaves stdout empty and prints the JSON error object
last on stderr, with the HTTP status as ``code``.
"""

from __future__ import annotations

from typing import Any

from pytest_loopcontract.contest.presets.model import (
    AUTH_FAILED,
    RATE_LIMITED,
    Output,
    Preset,
    Reading,
    json_object,
    non_negative_int,
)
from pytest_loopcontract.contest.presets.signals import (
    error_reading,
    first_line,
    stderr_reading,
)

__all__ = ["PRESET", "read"]

AUTH_EXIT = 41

ALLOWED_COMMANDS = tuple(
    f"run_shell_command({command})"
    for command in (
        "python -m pytest",
        "python3 -m pytest",
        "pytest",
        "loop-contract",
        "git status",
        "git diff",
        "git log",
    )
)
GENERATE = (
    "gemini",
    "-p",
    "Carry out the task described in the file {prompt_file} (read it first).",
    "--output-format",
    "json",
    "--approval-mode",
    "auto_edit",
    "--include-directories",
    "{prompt_dir}",
    *(word for command in ALLOWED_COMMANDS for word in ("--allowed-tools", command)),
)
_API_STATUS = {401: AUTH_FAILED, 403: AUTH_FAILED, 429: RATE_LIMITED}
JUDGE = (
    "gemini",
    "-p",
    "Read the judging packet in the file {packet_file} and reply with only the JSON object "
    "it asks for.",
    "--output-format",
    "json",
    "--include-directories",
    "{packet_dir}",
)


def read(output: Output) -> Reading:
    """Tokens from ``stats.models.*.tokens.total``; the failure from ``error`` (or exit 41)."""
    doc = json_object(output.stdout) or _trailing_object(output.stderr)
    if doc is None:
        if output.exit_code == AUTH_EXIT:
            why = first_line(output.stderr) or "exit code 41"
            return Reading(outcome=AUTH_FAILED, reason=f"auth failed: {why}")
        return stderr_reading(output, "gemini")
    response = doc.get("response")
    base = Reading(
        tokens=_tokens(doc.get("stats")), reply=response if isinstance(response, str) else None
    )
    error = doc.get("error")
    if isinstance(error, dict) and error.get("code") in _API_STATUS:
        kind = _API_STATUS[error["code"]]
        line = first_line(str(error.get("message") or error["code"]))
        return Reading(outcome=kind, reason=f"{kind.replace('_', ' ')}: {error['code']} {line}",
                       tokens=base.tokens, reply=base.reply)  # fmt: skip
    if isinstance(error, dict):
        message = " ".join(
            str(error[key]) for key in ("type", "code", "message") if error.get(key) is not None
        )
        reading = error_reading(base, "gemini", message or "error")
        if reading.outcome is None and output.exit_code == AUTH_EXIT:
            return Reading(
                outcome=AUTH_FAILED,
                reason=f"auth failed: {first_line(message)}",
                tokens=base.tokens,
                reply=base.reply,
            )
        return reading
    return base


def _trailing_object(stderr: str) -> dict[str, Any] | None:
    """The JSON object a failed run prints last on stderr (after the stack trace)."""
    lines = stderr.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if lines[start] == "{":
            return json_object("\n".join(lines[start:]))
    return None


def _tokens(stats: object) -> int | None:
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict) or not models:
        return None
    total = 0
    for model in models.values():
        tokens = model.get("tokens") if isinstance(model, dict) else None
        count = non_negative_int(tokens.get("total")) if isinstance(tokens, dict) else None
        if count is None:
            return None
        total += count
    return total


PRESET = Preset(
    name="gemini",
    family="google",
    generate=GENERATE,
    judge=JUDGE,
    source="Gemini CLI `gemini -p --output-format json` object "
    "(https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/headless.md)",
    read=read,
    proven="0.61.0",
)
