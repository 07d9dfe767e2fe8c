"""The turn gate: may a turn start, given the history? Real history files, injected clocks.

The gate is a pure function of the reduced records and the time passed in, so every answer
here is also what a loop resumed after ``kill -9`` would compute from the same file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Instant
from pytest_loopcontract.loop.control import barrier_summary, describe_barrier, turn_gate
from pytest_loopcontract.loop.state import reduce


class Clock:
    """Wall and monotonic time that a test moves by hand."""

    def __init__(self) -> None:
        self.wall = 1_800_000_000.0
        self.mono = 1000.0

    def now(self, boot: str) -> Instant:
        return Instant(self.wall, self.mono, boot)

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def history(tmp_path: Path, clock: Clock) -> History:
    return History(tmp_path / "state", clock=lambda: clock.wall, monotonic=lambda: clock.mono)


def gate_now(history: History, clock: Clock):  # type: ignore[no-untyped-def]
    records = history.read().records
    boot = records[-1].boot if records else ""
    return turn_gate(reduce(records), clock.now(boot))


def test_an_empty_history_lets_a_turn_start(history: History, clock: Clock) -> None:
    assert gate_now(history, clock).action == "go"


def test_a_deadline_parks_until_it_passes(history: History, clock: Clock) -> None:
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 30, "reason": "ci"})
    gate = gate_now(history, clock)
    assert gate.action == "wait"
    assert "w1: waiting for 30 s to pass - ci" in gate.message
    assert "unwait" in gate.message
    assert gate.expired == ()
    clock.advance(29)
    assert gate_now(history, clock).expired == ()
    clock.advance(2)
    gate = gate_now(history, clock)
    assert [b["id"] for b in gate.expired] == ["w1"]
    history.append("barrier_cleared", {"id": "w1", "why": "deadline"})
    assert gate_now(history, clock).action == "go"


def test_a_wall_clock_jump_does_not_end_a_wait_on_the_same_boot(
    history: History, clock: Clock
) -> None:
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 30})
    clock.wall += 3600  # NTP step: the monotonic clock decides on one boot
    assert gate_now(history, clock).expired == ()


def test_pid_and_command_barriers_are_probed_not_timed(history: History, clock: Clock) -> None:
    history.append("barrier_set", {"id": "w1", "on": "pid", "pid": 4242, "seconds": None})
    history.append("barrier_set", {"id": "w2", "on": "until_exit", "command": ["test", "-f", "x"]})
    gate = gate_now(history, clock)
    assert gate.action == "wait"
    assert [b["id"] for b in gate.probes] == ["w1", "w2"]
    assert "process 4242 to exit" in gate.message
    assert "'test -f x' to succeed" in gate.message


def test_a_longest_wait_clears_a_pid_barrier_that_never_ends(
    history: History, clock: Clock
) -> None:
    history.append("barrier_set", {"id": "w1", "on": "pid", "pid": 1, "seconds": 5})
    assert "(at most 5 s)" in describe_barrier(reduce(history.read().records)["barriers"]["w1"])
    clock.advance(6)
    assert [b["id"] for b in gate_now(history, clock).expired] == ["w1"]


def test_unwait_drops_every_barrier(history: History, clock: Clock) -> None:
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 60})
    history.append("barrier_set", {"id": "w2", "on": "pid", "pid": 1})
    history.append("barrier_cleared", {"id": "*", "why": "unwait", "by": "alice"})
    assert gate_now(history, clock).action == "go"


def test_a_barrier_whose_record_is_damaged_never_wedges(history: History, clock: Clock) -> None:
    state = reduce(history.read().records)
    damaged = {**state, "barriers": {"w1": {"id": "w1", "on": "seconds", "seconds": 60}}}
    gate = turn_gate(damaged, clock.now(""))
    assert [b["id"] for b in gate.expired] == ["w1"]  # no placeable start: it has passed


def test_pause_and_resume(history: History, clock: Clock) -> None:
    history.append("paused", {"by": "alice", "reason": "lunch"})
    gate = gate_now(history, clock)
    assert gate.action == "wait"
    assert gate.message == "paused by alice - lunch: 'loop-contract resume' goes on"
    history.append("unpaused", {"by": "bob"})
    assert gate_now(history, clock).action == "go"


def test_a_pause_still_lets_deadlines_pass(history: History, clock: Clock) -> None:
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 1})
    history.append("paused", {"by": "alice"})
    clock.advance(2)
    gate = gate_now(history, clock)
    assert gate.action == "wait"
    assert [b["id"] for b in gate.expired] == ["w1"]


def test_clear_stops_and_takes_barriers_and_pause_with_it(history: History, clock: Clock) -> None:
    history.append("loop_started", {"command": ["agent"]})
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 60})
    history.append("paused", {"by": "alice"})
    history.append("cleared", {"by": "carol"})
    gate = gate_now(history, clock)
    assert (gate.action, gate.message) == ("stop", "cleared by carol")
    state = reduce(history.read().records)
    assert state["barriers"] == {} and state["control"]["paused"] is None
    history.append("stop", {"reason": "cleared", "exit_code": 20})
    history.append("resumed", {"command": ["agent"]})
    assert gate_now(history, clock).action == "go"


def test_barriers_survive_a_resume(history: History, clock: Clock) -> None:
    history.append("loop_started", {"command": ["agent"]})
    history.append("barrier_set", {"id": "w1", "on": "pid", "pid": 1})
    history.append("interrupted", {"phase": "parked"})
    history.append("resumed", {"command": ["agent"]})
    assert gate_now(history, clock).action == "wait"


def test_the_summary_counts_down(history: History, clock: Clock) -> None:
    history.append("barrier_set", {"id": "w1", "on": "seconds", "seconds": 30, "reason": "build"})
    clock.advance(10)
    records = history.read().records
    [summary] = barrier_summary(reduce(records), clock.now(records[-1].boot))
    assert summary["seconds_left"] == pytest.approx(20.0)
    assert summary["reason"] == "build"
