"""Budgets: validated spend, caps that trip once and stay tripped, and elapsed time.

Why under the history lock: a spend is "read the totals, append the spend, append the trip if
this one crossed a cap". Done in one :meth:`History.transaction`, concurrent spenders (threads
or processes) are serialized, so the totals never race and each cap trips exactly once: the
spend that trips a cap exceeds it by at most its own amount.

Spend is a fact, not a request: a spend reported after a cap tripped (a call that was already
in flight) is still recorded, flagged ``after_trip``, so the history never under-reports money.
Each spender sees ``tripped`` on its next report and must start no new call.

Why two clocks for time: wall-clock time can jump (NTP, a laptop lid, a VM). The time budget
uses the monotonic clock when start and now are on the same boot, and falls back to wall-clock
time (never negative) only across a reboot.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.fsio import parse_utc
from pytest_loopcontract.history import History, boot_id
from pytest_loopcontract.history.records import Instant, Record
from pytest_loopcontract.loop.state import MAX_USD, Reducer, usd_units
from pytest_loopcontract.verdict import EXIT_BUDGET

__all__ = [
    "SPEND_SOURCES",
    "Caps",
    "Spend",
    "SpendResult",
    "crossed",
    "elapsed_seconds",
    "now_instant",
    "parse_spend",
    "record_spend",
    "run_elapsed_seconds",
    "spend_from_agent_output",
    "spent_of",
    "start_instant",
    "stop_instant",
    "time_budget_exceeded",
]

SPEND_SOURCES = ("cli", "agent-json")


@dataclass(frozen=True)
class Spend:
    """Tokens and dollars of one call (or a total). Build from untrusted input with
    :func:`parse_spend`."""

    tokens: int = 0
    usd: float = 0.0
    usd_reported: bool = True
    """False when the agent printed tokens but no cost (Codex, Gemini CLI): ``usd`` is then 0
    for the arithmetic, and the record says "not reported" (``null``) rather than $0."""

    def __add__(self, other: Spend) -> Spend:
        """Exact to the nano-dollar, like the reducer's totals."""
        usd = (usd_units(self.usd) + usd_units(other.usd)) / 1_000_000_000
        reported = self.usd_reported and other.usd_reported
        return Spend(self.tokens + other.tokens, usd, reported)


@dataclass(frozen=True)
class Caps:
    """Spend caps; None means no cap. Reaching a cap trips it: nothing is left to spend."""

    tokens: float | None = None
    usd: float | None = None

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Caps:
        caps = state.get("budget", {}).get("caps", {})
        return cls(tokens=caps.get("tokens"), usd=caps.get("usd"))


@dataclass(frozen=True)
class SpendResult:
    """What :func:`record_spend` did: the new totals, every tripped cap, the ones tripped now."""

    record: Record
    spent_total: Spend
    tripped: list[str]
    newly_tripped: list[str]
    after_trip: bool

    @property
    def exit_code(self) -> int:
        """21 (budget) once any cap has tripped, else 0."""
        return EXIT_BUDGET if self.tripped else 0


# --------------------------------------------------------------------------- parsing


def _number_text(value: str, what: str) -> float:
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not a number") from None


def _spend_number(value: str | float, what: str, text: Callable[[str], float]) -> float:
    """``value`` as a finite number: a string read by ``text``, a JSON number as it is (an int
    stays exact). A bool or anything else is no number: a ValueError names ``what`` and it."""
    number: float
    if isinstance(value, str):
        number = text(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    else:
        raise ValueError(f"{what} {value!r} is not a number")
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"{what} {value!r} is not a finite number")
    return number


def _tokens_text(value: str) -> float:
    """A token count as typed: a whole number exactly, else whatever ``float`` reads."""
    try:
        return int(value.strip())
    except ValueError:
        return _number_text(value, "tokens")


def _parse_tokens(value: str | float | None) -> int:
    if value is None:
        return 0
    number = _spend_number(value, "tokens", _tokens_text)
    if isinstance(number, float):
        if not number.is_integer():
            raise ValueError(f"tokens {value!r} is not a whole number")
        number = int(number)
    if number < 0:
        raise ValueError(f"tokens {value!r} is negative; spend cannot be refunded")
    return int(number)


def _parse_usd(value: str | float | None) -> float:
    if value is None:
        return 0.0
    number = float(_spend_number(value, "usd", lambda text: _number_text(text, "usd")))
    if number < 0:
        raise ValueError(f"usd {value!r} is negative; spend cannot be refunded")
    if number > MAX_USD:
        raise ValueError(f"usd {value!r} is not a plausible spend (over {MAX_USD:,.0f})")
    return number


def parse_spend(tokens: str | float | None, usd: str | float | None) -> Spend:
    """A validated spend. Refuses NaN, infinity, negatives, fractional tokens and non-numbers
    with a ValueError that names the bad value; at least one of the two must be given."""
    if tokens is None and usd is None:
        raise ValueError("nothing to record: give tokens, usd or both")
    return Spend(_parse_tokens(tokens), _parse_usd(usd), usd_reported=usd is not None)


# --------------------------------------------------------------------------- caps


def spent_of(state: Mapping[str, Any]) -> Spend:
    """The run's spend so far, from a reduced state."""
    spent = state["budget"]["spent"]
    return Spend(int(spent["tokens"]), float(spent["usd"]))


def crossed(total: Spend, caps: Caps) -> list[str]:
    """The caps ``total`` has reached, in a fixed order (tokens, usd). Pure."""
    out = []
    if caps.tokens is not None and total.tokens >= caps.tokens:
        out.append("tokens")
    if caps.usd is not None and total.usd >= caps.usd:
        out.append("usd")
    return out


def record_spend(
    history: History,
    spend: Spend,
    seat: str | None = None,
    caps: Caps | None = None,
    *,
    source: str = "cli",
) -> SpendResult:
    """Record one spend and trip any cap it reaches, atomically under the history lock.

    ``caps`` default to the run's caps from its ``loop_started`` record. Reads and reduces
    the whole history under the lock: about what a rebuild costs (see the benchmark).
    """
    if seat is not None and (not isinstance(seat, str) or not seat.strip()):
        raise ValueError(f"seat {seat!r} must be a non-empty name")
    # a Spend built by hand is checked too
    spend = parse_spend(spend.tokens, spend.usd if spend.usd_reported else None)
    with history.transaction() as txn:
        reducer = Reducer().feed(txn.records)
        before = reducer.state()
        caps = caps if caps is not None else Caps.from_state(before)
        already = [t["which"] for t in before["budget"]["tripped"]]
        data: dict[str, Any] = {
            "tokens": spend.tokens,
            "usd": spend.usd if spend.usd_reported else None,
            "seat": seat,
            "source": source,
        }
        if already:
            data["after_trip"] = True
        record = txn.append("spend", data)
        # The totals are the reducer's own, with this spend folded in.
        total = spent_of(reducer.apply(record).state())
        newly = [which for which in crossed(total, caps) if which not in already]
        for which in newly:
            observed = total.tokens if which == "tokens" else total.usd
            cap = caps.tokens if which == "tokens" else caps.usd
            txn.append("budget_tripped", {"which": which, "observed": observed, "cap": cap})
    return SpendResult(record, total, already + newly, newly, bool(already))


# --------------------------------------------------------------------------- agent output


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text``: the whole text, or objects starting at line starts
    (JSON lines, or one object after some noise). Arrays are flattened one level."""
    decoder = json.JSONDecoder()
    stripped = text.strip()
    try:
        whole = [json.loads(stripped)]
    except ValueError:
        whole = []
        pos = 0
        for line in text.splitlines(keepends=True):
            start = pos + len(line) - len(line.lstrip())
            pos += len(line)
            if start < len(text) and text[start] in "{[":
                try:
                    obj, _ = decoder.raw_decode(text, start)
                except ValueError:
                    continue
                whole.append(obj)
    for obj in whole:
        items = obj if isinstance(obj, list) else [obj]
        yield from (item for item in items if isinstance(item, dict))


def _has_spend(obj: Mapping[str, Any]) -> bool:
    return "total_cost_usd" in obj or "cost_usd" in obj or isinstance(obj.get("usage"), dict)


def _usage_tokens(usage: Any) -> int | None:
    """Tokens of one usage block. Anthropic counts cache reads and writes beside input tokens;
    OpenAI-style ``cached_input_tokens`` are already part of ``input_tokens``."""
    if not isinstance(usage, Mapping):
        return None
    if usage.get("total_tokens") is not None:
        return _parse_tokens(usage["total_tokens"])
    keys = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "prompt_tokens",
        "completion_tokens",
    )
    found = [_parse_tokens(usage[k]) for k in keys if usage.get(k) is not None]
    return sum(found) if found else None


def _spend_of(obj: Mapping[str, Any]) -> Spend | None:
    usd = obj.get("total_cost_usd", obj.get("cost_usd"))
    tokens = _usage_tokens(obj.get("usage"))
    if usd is None and tokens is None:
        return None
    return parse_spend(tokens, usd)


def spend_from_agent_output(text: str) -> Spend | None:
    """Tokens and dollars from an agent CLI's JSON output, or None when it reports none.

    Claude Code ``--output-format json`` (one object) and ``stream-json`` (JSON lines; the last
    ``result`` object carries ``total_cost_usd`` and ``usage``), Codex ``exec --json``
    (``turn.completed`` usage, summed), or any object with ``usage``/``total_cost_usd``.
    Noise around the JSON is skipped; a reported value that is NaN or negative raises.
    """
    objects = [obj for obj in _json_objects(text) if _has_spend(obj)]
    results = [obj for obj in objects if obj.get("type") == "result"]
    if results:
        return _spend_of(results[-1])
    turns = [obj for obj in objects if obj.get("type") == "turn.completed"]
    if turns:
        total = Spend()
        for turn in turns:
            total = total + (_spend_of(turn) or Spend())
        return total
    return _spend_of(objects[-1]) if objects else None


# --------------------------------------------------------------------------- time


def now_instant(
    clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic
) -> Instant:
    """This moment on both clocks, on this boot."""
    return Instant(clock(), monotonic(), boot_id())


def start_instant(state: Mapping[str, Any]) -> Instant | None:
    """When the current run started (from its ``loop_started`` record), or None."""
    started = state.get("loop", {}).get("started")
    if not started:
        return None
    return Instant(parse_utc(started["ts"]), started.get("mono"), started.get("boot") or "")


def stop_instant(state: Mapping[str, Any]) -> Instant | None:
    """When the current run stopped (its ``stop`` record), or None while it has not (or was
    resumed since)."""
    stopped = state.get("loop", {}).get("stopped")
    if not stopped:
        return None
    return Instant(parse_utc(stopped["ts"]), stopped.get("mono"), stopped.get("boot") or "")


def run_elapsed_seconds(state: Mapping[str, Any], now: Instant) -> float:
    """How long the current run has been going: from its start to ``now``, or to its stop
    once it stopped (a stopped loop's clock stands still); 0 before any run."""
    start = start_instant(state)
    if start is None:
        return 0.0
    return elapsed_seconds(start, stop_instant(state) or now)


def elapsed_seconds(start: Instant, now: Instant) -> float:
    """Seconds from ``start`` to ``now``: monotonic on one boot, else wall-clock; never < 0."""
    if start.boot and start.boot == now.boot and start.mono is not None and now.mono is not None:
        return max(0.0, now.mono - start.mono)
    return max(0.0, now.wall - start.wall)


def time_budget_exceeded(start: Instant | None, minutes: float | None, now: Instant) -> bool:
    """Whether ``minutes`` (None: no cap) have passed since ``start``."""
    if minutes is None or start is None:
        return False
    return elapsed_seconds(start, now) >= minutes * 60.0
