"""Aider (``aider --message-file ... --yes-always --no-stream``): plain text on stdout.

Format followed: Aider 0.8x scripting, https://aider.chat/docs/scripting.html, and its usage
line as ``aider/coders/base_coder.py`` prints it after every exchange:
``Tokens: 4.2k sent, 1.1k cache write, 2.0k cache hit, 1.1k received. Cost: $0.02 message,
$0.05 session.`` (counts rounded by ``aider/utils.py`` ``format_tokens``: under 1000 exact,
then ``x.yk`` or ``xk``). Tokens are sent + received summed over the exchanges, as printed
(so rounded); cost is the last ``session`` figure. Failures are aider's own sentences for the
provider's exceptions (``aider/exceptions.py``): AuthenticationError "The API provider is not
able to authenticate you", RateLimitError "The API provider has rate limited you",
ContentPolicyViolationError "The API provider has refused the request due to a safety policy"
(a refusal). Aider retries rate limits itself, so an error only counts when no exchange
finished after it.
"""

from __future__ import annotations

import re

from pytest_loopcontract.contest.presets.model import (
    AUTH_FAILED,
    RATE_LIMITED,
    REFUSED,
    Output,
    Preset,
    Reading,
)

__all__ = ["PRESET", "read"]

_COUNT = r"(\d+(?:\.\d+)?[kKmM]?)"
_USAGE = re.compile(
    rf"Tokens: {_COUNT} sent(?:, {_COUNT} cache write)?(?:, {_COUNT} cache hit)?,"
    rf" {_COUNT} received\.(?:\s*Cost: \$(\d+(?:\.\d+)?) message, \$(\d+(?:\.\d+)?) session\.)?"
)
_FAILURES = (
    (REFUSED, re.compile(r"ContentPolicyViolationError|refused the request due to a safety")),
    (AUTH_FAILED, re.compile(r"AuthenticationError|not able to authenticate you")),
    (RATE_LIMITED, re.compile(r"RateLimitError|has rate limited you")),
)

# Proven on 0.86.2 (tests/contest/presets/test_aider_real.py): by default Aider adds ``.aider*``
# to the repository's .gitignore and leaves its chat history and repo-map cache in the work
# tree, all of which a contest would capture as part of the candidate (outside its
# boundaries), and it asks GitHub for updates and model prices. So its files go to the seat's
# private folder, the repo map is off, and nothing is fetched or reported.
_QUIET = (
    "--no-gitignore",
    "--map-tokens",
    "0",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-detect-urls",
)
GENERATE = (
    "aider",
    "--message-file",
    "{prompt_file}",
    "--yes-always",
    "--no-stream",
    "--no-pretty",
    "--no-auto-commits",
    "--chat-history-file",
    "{prompt_dir}/aider.chat.history.md",
    "--input-history-file",
    "{prompt_dir}/aider.input.history",
    *_QUIET,
)
JUDGE = (
    "aider",
    "--message-file",
    "{packet_file}",
    "--chat-mode",
    "ask",
    "--no-git",
    "--yes-always",
    "--no-stream",
    "--no-pretty",
    "--chat-history-file",
    "{packet_dir}/aider.chat.history.md",
    "--input-history-file",
    "{packet_dir}/aider.input.history",
    *_QUIET,
)


def read(output: Output) -> Reading:
    """Tokens and cost from the usage lines; the outcome from the last provider error that no
    finished exchange followed."""
    text = output.stdout or ""
    tokens: int | None = None
    cost: float | None = None
    last_usage = -1
    for match in _USAGE.finditer(text):
        tokens = (tokens or 0) + _count(match.group(1)) + _count(match.group(4))
        if match.group(6) is not None:
            cost = float(match.group(6))
        last_usage = match.end()
    base = Reading(tokens=tokens, cost_usd=cost)
    tail = text[last_usage + 1 :] if last_usage >= 0 else text
    if output.status == "error":
        tail += "\n" + output.stderr
    for outcome, pattern in _FAILURES:
        found = pattern.search(tail)
        if found:
            line = _line_at(tail, found.start())
            return Reading(
                outcome=outcome,
                reason=f"{outcome.replace('_', ' ')}: {line}",
                tokens=tokens,
                cost_usd=cost,
            )
    return base


def _count(text: str) -> int:
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    number = text[:-1] if scale > 1 else text
    return round(float(number) * scale)


def _line_at(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line = text[start : end if end >= 0 else len(text)].strip().lstrip("> ").strip()
    return line if len(line) <= 300 else line[:299] + "…"


PRESET = Preset(
    name="aider",
    family=None,
    generate=GENERATE,
    judge=JUDGE,
    proven="0.86.2",
    source="Aider 0.8x usage line `Tokens: … sent, … received. Cost: $… message, $… session.` "
    "(https://aider.chat/docs/scripting.html)",
    read=read,
)
