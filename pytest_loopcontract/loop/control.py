"""May an agent turn start? A pure answer over the loop state (itself a fold of the history).

Why pure: the loop, ``status`` and the live page must agree on whether the loop is parked, and
a loop resumed after ``kill -9`` must park on exactly the barriers the record holds. So this
module reads nothing: the state says which barriers stand (``barrier_set`` minus
``barrier_cleared``), whether a person paused the loop (``paused`` / ``unpaused``) or asked it
to end (``cleared``), and the caller passes the time. What needs the outside world (is pid N
alive? does the command succeed?) is returned as a probe for
:mod:`pytest_loopcontract.loop.wait` to run; its answer comes back as a ``barrier_cleared``
record, never as memory.

A barrier can never wedge a loop: a deadline (``--seconds``, also the longest wait of a
``--pid`` or ``--until-exit`` barrier) passes on its own, a process that is gone clears on the
next probe, ``unwait`` drops every barrier, and the contract's time budget keeps running
while the loop is parked (:func:`pytest_loopcontract.loop.run.pre_turn_stop` stops it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.fsio import parse_utc
from pytest_loopcontract.history.records import Instant
from pytest_loopcontract.loop.budget import elapsed_seconds

__all__ = ["Gate", "barrier_summary", "describe_barrier", "turn_gate"]


@dataclass(frozen=True)
class Gate:
    """The answer: ``go`` (start a turn), ``wait`` (park; nothing is spent) or ``stop``
    (a person cleared the loop). ``expired`` are barriers whose deadline passed (the caller
    records them cleared); ``probes`` the barriers only the outside world can clear."""

    action: str
    message: str
    expired: tuple[Mapping[str, Any], ...] = ()
    probes: tuple[Mapping[str, Any], ...] = ()


def _set_instant(barrier: Mapping[str, Any]) -> Instant | None:
    """When the barrier was recorded, on both clocks (None when the record lacks it)."""
    placed = barrier.get("set")
    if not isinstance(placed, Mapping) or not isinstance(placed.get("ts"), str):
        return None
    try:
        wall = parse_utc(placed["ts"])
    except ValueError:
        return None
    mono = placed.get("mono")
    return Instant(wall, mono if isinstance(mono, (int, float)) else None, placed.get("boot") or "")


def remaining_seconds(barrier: Mapping[str, Any], now: Instant) -> float | None:
    """Seconds until the barrier's deadline; None when it has none (or the record is bad)."""
    seconds = barrier.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    start = _set_instant(barrier)
    if start is None:
        return 0.0  # a deadline we cannot place has passed: never wait on a damaged record
    return float(seconds) - elapsed_seconds(start, now)


def describe_barrier(barrier: Mapping[str, Any]) -> str:
    """One line a person reads: what the loop waits for, and why."""
    on = barrier.get("on")
    if on == "pid":
        what = f"process {barrier.get('pid')} to exit"
    elif on == "until_exit":
        what = "'" + " ".join(map(str, barrier.get("command") or [])) + "' to succeed"
    else:
        what = f"{barrier.get('seconds')} s to pass"
    if on != "seconds" and barrier.get("seconds") is not None:
        what += f" (at most {barrier.get('seconds')} s)"
    reason = barrier.get("reason")
    return f"{barrier.get('id')}: waiting for {what}" + (f" - {reason}" if reason else "")


def barrier_summary(state: Mapping[str, Any], now: Instant) -> list[dict[str, Any]]:
    """The standing barriers as data for ``status`` and the live page."""
    out = []
    for barrier in (state.get("barriers") or {}).values():
        left = remaining_seconds(barrier, now)
        out.append(
            {
                "id": barrier.get("id"),
                "on": barrier.get("on"),
                "pid": barrier.get("pid"),
                "command": barrier.get("command"),
                "reason": barrier.get("reason"),
                "seconds_left": None if left is None else max(0.0, round(left, 1)),
                "text": describe_barrier(barrier),
            }
        )
    return out


def _due(barrier: Mapping[str, Any], now: Instant) -> bool:
    """Whether the barrier's deadline has passed."""
    left = remaining_seconds(barrier, now)
    return left is not None and left <= 0


def turn_gate(state: Mapping[str, Any], now: Instant) -> Gate:
    """Whether the loop may start an agent turn now (pure; see the module notes)."""
    control = state.get("control") or {}
    cleared = control.get("clear_requested")
    if cleared:
        return Gate("stop", f"cleared by {cleared.get('by') or 'someone'}")
    barriers = list((state.get("barriers") or {}).values())
    expired = tuple(b for b in barriers if _due(b, now))
    standing = [b for b in barriers if b not in expired]
    probes = tuple(b for b in standing if b.get("on") in ("pid", "until_exit"))
    paused = control.get("paused")
    if paused:
        why = f" - {paused['reason']}" if paused.get("reason") else ""
        message = f"paused by {paused.get('by') or 'someone'}{why}: 'loop-contract resume' goes on"
        return Gate("wait", message, expired, probes)
    if standing:
        lines = "; ".join(describe_barrier(b) for b in standing)
        return Gate("wait", f"parked: {lines} ('loop-contract unwait' drops it)", expired, probes)
    return Gate("go", "", expired, ())
