"""Verifier evidence made inert for a prompt: names squeezed to safe tokens, numbers and codes
checked, text cut to one bounded line.

A lesson ends up in another agent's prompt, so every field it quotes must
be something the verifier produced and that a candidate cannot turn into a sentence. The
drafts (:mod:`.drafts`) read a verdict only through these helpers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "GATE_REASONS",
    "OPS",
    "OUTCOMES",
    "PASSING",
    "as_list",
    "as_map",
    "dod_failing",
    "failing_pairs",
    "first_few",
    "is_one_of",
    "one_line",
    "safe_code",
    "safe_token",
    "show_number",
    "status_words",
    "with_unit",
]

TOKEN_CHARS = 120
MAX_LISTED = 4  # node ids / findings named in one evidence line

PASSING = frozenset({"pass", "not_measurable"})
OUTCOMES = frozenset(
    {"passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected", "missing"}
)
OPS = frozenset({">=", ">", "<=", "<", "==", "!="})
_CODE = re.compile(r"[a-z][a-z0-9_]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/\[\]()+=,@#%-]")
# Reason codes that only restate a gate; an ``error`` lesson names the others.
GATE_REASONS = frozenset(
    {
        "contract_met",
        "hard_gate_failed",
        "measured_gate_failed",
        "metric_missing",
        "tamper_detected",
    }
)


def one_line(text: str, limit: int) -> str:
    """One line (whitespace collapsed) of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def safe_token(value: Any, limit: int = TOKEN_CHARS) -> str:
    """A verifier-produced name (gate id, node id, path, metric) made inert for a prompt.

    Only path-and-identifier characters survive; anything else (spaces, quotes, newlines,
    non-ASCII) becomes ``?``, so a file or parametrize id a candidate named cannot spell out
    a sentence.
    """
    if not isinstance(value, str) or not value:
        return "?"
    safe = _UNSAFE.sub("?", value)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


_STATUS_WORDS = {"fail": "failed", "missing": "had no result", "error": "errored"}


def status_words(value: Any) -> str:
    return _STATUS_WORDS.get(value, f"ended {safe_code(value)}") if isinstance(value, str) else "?"


def safe_code(value: Any) -> str:
    return value if isinstance(value, str) and _CODE.fullmatch(value) else "unknown"


def show_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    return str(value)


def with_unit(number: str, unit: str) -> str:
    if not unit:
        return number
    return f"{number}{unit}" if unit == "%" else f"{number} {unit}"


def is_one_of(value: Any, choices: Iterable[str]) -> bool:
    """``value in choices`` for a value that may be anything (a list is not hashable)."""
    return isinstance(value, str) and value in choices


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def first_few(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    extra = len(names) - MAX_LISTED
    return f"{shown} (+{extra} more)" if extra > 0 else shown


def failing_pairs(value: Any) -> list[str]:
    """``{nodeid: outcome}`` (the gates' ``failing`` detail) as ``nodeid outcome`` strings."""
    pairs = []
    for nodeid, outcome in as_map(value).items():
        shown = outcome if isinstance(outcome, str) and outcome in OUTCOMES else "?"
        pairs.append(f"{safe_token(nodeid)} {shown}")
    return pairs


def dod_failing(verdict: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Pending DoD ids and their non-passing tests, from the verdict's ``dod`` list."""
    pending: list[str] = []
    failing: list[str] = []
    for item in as_list(verdict.get("dod")):
        item = as_map(item)
        if item.get("status") == "done":
            continue
        pending.append(safe_token(item.get("id")))
        for test in as_list(item.get("tests")):
            test = as_map(test)
            outcome = test.get("outcome")
            if outcome != "passed":
                shown = outcome if isinstance(outcome, str) and outcome in OUTCOMES else "?"
                failing.append(f"{safe_token(test.get('nodeid'))} {shown}")
    return pending, failing
