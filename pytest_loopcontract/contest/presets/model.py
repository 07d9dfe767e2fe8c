"""What a seat preset is: the argv of one agent CLI and a pure reading of what it printed.

Why a model of its own: the presets must not import the seat runner or the seat record
(:mod:`..seat_model` builds seats *from* presets), so a preset reads plain process facts
(:class:`Output`) and answers with a plain :class:`Reading`; :mod:`.adapter` folds that into a
:class:`~pytest_loopcontract.contest.seat_model.SeatRun` on the seat-adapter hook.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUTH_FAILED",
    "OUTCOMES",
    "RATE_LIMITED",
    "REFUSED",
    "Output",
    "Preset",
    "Reading",
    "json_lines",
    "json_object",
    "non_negative_int",
    "non_negative_number",
]

REFUSED = "refused"
AUTH_FAILED = "auth_failed"
RATE_LIMITED = "rate_limited"
OUTCOMES: tuple[str, ...] = (REFUSED, AUTH_FAILED, RATE_LIMITED)
"""The outcomes a preset may name; anything else stays as the runner classified it."""


@dataclass(frozen=True)
class Output:
    """The process facts a preset reads: the runner's status (``ok``, ``error``, ``timeout``,
    ``unavailable``), the exit code, and the kept stdout (``None`` when it was too large to
    keep whole) and stderr tail."""

    status: str
    exit_code: int | None
    stdout: str | None
    stderr: str


@dataclass(frozen=True)
class Reading:
    """What a preset read from its CLI's own output. ``outcome`` is one of :data:`OUTCOMES` or
    ``None`` (keep the runner's status); ``reply`` is the agent's answer text taken out of the
    CLI's envelope (what a judge's reply parser should read), ``None`` to read raw stdout.
    ``tokens`` and ``cost_usd`` are what the CLI printed, never an estimate."""

    outcome: str | None = None
    reason: str = ""
    tokens: int | None = None
    cost_usd: float | None = None
    reply: str | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise ValueError(f"preset outcome {self.outcome!r} is not one of {OUTCOMES}")


@dataclass(frozen=True)
class Preset:
    """One agent CLI: its vendor, its argv as author and as judge, the documented output format
    it follows (``source``: version and URL), and the pure function that reads its output.

    ``family`` is ``None`` when the CLI runs any vendor's model (the contract must name it).
    ``generate``/``judge`` are ``None`` when the preset has no argv of its own (``generic``).
    ``proven``: the release of the CLI its argv was checked against (empty: none was).
    """

    name: str
    family: str | None
    generate: tuple[str, ...] | None
    judge: tuple[str, ...] | None
    source: str
    read: Callable[[Output], Reading]
    proven: str = ""


def json_object(text: str | None) -> dict[str, Any] | None:
    """``text`` as one JSON object (surrounding whitespace allowed), else ``None``."""
    if not text:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def json_lines(text: str | None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines stream; lines that are not objects are skipped."""
    for line in (text or "").splitlines():
        doc = json_object(line.strip())
        if doc is not None:
            yield doc


def non_negative_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def non_negative_number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        number = float(value)
        return number if number == number and number != float("inf") else None
    return None
