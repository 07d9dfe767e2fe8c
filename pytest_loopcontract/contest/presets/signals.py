"""Tell an authentication failure and a rate limit apart in an agent CLI's error text.

Why only error text: a successful agent may well print "429" or "unauthorized" while working
on a task about HTTP; so the presets apply these patterns only to what the CLI reported as its
error (a failed result object, an error event, stderr of a failed run), never to a good run.
The words are the ones the vendors' APIs document for these cases (HTTP 401/403 and 429,
Anthropic ``authentication_error``/``rate_limit_error``, OpenAI ``invalid_api_key``/
``rate_limit_exceeded``/``insufficient_quota``, Google ``UNAUTHENTICATED``/
``RESOURCE_EXHAUSTED``) and the CLIs' own sentences ("Invalid API key · Please run /login",
"You've hit your usage limit").
"""

from __future__ import annotations

import re
from dataclasses import replace

from pytest_loopcontract.contest.presets.model import AUTH_FAILED, RATE_LIMITED, Output, Reading

__all__ = ["classify_error", "error_reading", "first_line", "stderr_reading"]

_RATE_LIMIT = re.compile(
    r"\b429\b|rate[ _-]?limit|too many requests|resource[ _]exhausted|quota|usage limit",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"\b401\b|\b403\b|unauthori[sz]ed|unauthenticated|authentication|invalid[ _-]?(x-)?api[ _-]?key"
    r"|api key not valid|not logged in|/login|forbidden|permission[ _]denied",
    re.IGNORECASE,
)


def classify_error(text: str) -> str | None:
    """``rate_limited`` or ``auth_failed`` when the error text says so, else ``None``.

    A rate limit is looked for first: a quota or 429 message often names the key it counts
    against, and retrying later (not a new key) is what helps.
    """
    if _RATE_LIMIT.search(text):
        return RATE_LIMITED
    if _AUTH.search(text):
        return AUTH_FAILED
    return None


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of ``text``, shortened: a reason is one sentence."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def error_reading(base: Reading, cli: str, message: str) -> Reading:
    """``base`` for an error the CLI reported: ``auth_failed``/``rate_limited`` when the
    message says so, else the runner's own status stays and a note keeps the message."""
    kind = classify_error(message)
    line = first_line(message) or "no message"
    if kind is None:
        return replace(base, notes=(*base.notes, f"{cli} reported an error: {line}"))
    return replace(base, outcome=kind, reason=f"{kind.replace('_', ' ')}: {line}")


def stderr_reading(output: Output, cli: str, base: Reading | None = None) -> Reading:
    """For a failed run whose stdout said nothing usable: what its stderr says, if anything."""
    base = base or Reading()
    if output.status != "error" or not output.stderr.strip():
        return base
    if classify_error(output.stderr) is None:
        return base
    return error_reading(base, cli, output.stderr)
