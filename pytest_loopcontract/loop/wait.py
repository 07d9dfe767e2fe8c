"""Parking on background work, and the control plane: the records and the outside checks.

``loop-contract wait`` records a barrier (``barrier_set``) and returns at once: the agent ends
its turn and the loop, reading the history between turns, starts no new one while the barrier
stands (:mod:`pytest_loopcontract.loop.control` decides). This module writes those records and
runs the probes only the machine can answer: is process N still the process it was (its start
time in ``/proc`` guards against a recycled pid), does the command exit 0. A probe's answer is
a ``barrier_cleared`` record, so a loop resumed later sees the same thing.

``pause``, ``resume`` and ``clear`` are records as well (``paused``, ``unpaused``,
``cleared``, each with who asked): safe while a turn runs, they take effect between turns.
Every record goes through :class:`~pytest_loopcontract.history.History` (appended,
flushed, fsynced under its lock).
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.budget import now_instant
from pytest_loopcontract.loop.control import Gate, describe_barrier, turn_gate
from pytest_loopcontract.processes import kill_group, spawn

__all__ = [
    "PROBE_TIMEOUT",
    "Parking",
    "check_barriers",
    "clear_loop",
    "drop_barriers",
    "pause_loop",
    "pid_start",
    "probe",
    "resume_loop",
    "set_barrier",
]

PROBE_TIMEOUT = 60.0  # an --until-exit command that hangs is killed, and asked again later


def _who(by: str | None) -> str:
    """The name a control record carries: the one given, else the login name."""
    if by and by.strip():
        return by.strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def pid_start(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, from ``/proc``), or None when it is
    gone or this is not Linux: with it, a pid the kernel gave to a new process is not the
    process a barrier waits for."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text("utf-8", "replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    # after "(comm)": state is field 3, starttime field 22 -> indexes 0 and 19 here
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None  # a zombie has exited; only its parent has not reaped it yet
    return fields[19]


def _pid_alive(pid: int, start: str | None) -> bool:
    """Whether ``pid`` is still the process that was recorded."""
    if Path("/proc/self/stat").exists():
        now = pid_start(pid)
        return now is not None and (start is None or now == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def set_barrier(
    history: History,
    *,
    pid: int | None = None,
    seconds: float | None = None,
    until_exit: Sequence[str] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Record a barrier; returns it (with its id ``wN``). Bad input is a CommandError that
    says how to write it."""
    if pid is None and seconds is None and not until_exit:
        raise CommandError(
            "wait for what? 'loop-contract wait --pid N | --seconds S | --until-exit CMD...'"
        )
    if pid is not None and until_exit:
        raise CommandError("wait on one thing: --pid N or --until-exit CMD..., not both")
    if seconds is not None and (seconds != seconds or seconds <= 0 or seconds > 7 * 86400):
        raise CommandError(f"--seconds {seconds:g}: give a number of seconds between 0 and 604800")
    if pid is not None and pid <= 0:
        raise CommandError(f"--pid {pid}: a process id is a positive number")
    if until_exit and shutil.which(until_exit[0]) is None and not Path(until_exit[0]).exists():
        raise CommandError(
            f"--until-exit: {until_exit[0]!r} is not a command on PATH; it could never succeed"
        )
    on = "pid" if pid is not None else "until_exit" if until_exit else "seconds"
    data: dict[str, Any] = {"on": on, "seconds": seconds, "reason": reason or None}
    if pid is not None:
        data.update(pid=pid, pid_start=pid_start(pid))
    if until_exit:
        data["command"] = list(until_exit)
    with history.transaction() as tx:
        n = 1 + sum(1 for r in tx.records if r.kind == "barrier_set")
        data["id"] = f"w{n}"
        tx.append("barrier_set", data)
    return data


def drop_barriers(
    history: History, state: Mapping[str, Any], barrier_id: str | None, by: str | None
) -> list[str]:
    """``unwait [ID]``: clear one standing barrier, or all; returns the ids dropped."""
    standing = list(state.get("barriers") or {})
    if barrier_id is not None and barrier_id not in standing:
        known = ", ".join(standing) or "none"
        raise CommandError(f"no standing barrier {barrier_id!r} (standing: {known})")
    gone = [barrier_id] if barrier_id is not None else standing
    if gone:
        history.append(
            "barrier_cleared", {"id": barrier_id or "*", "why": "unwait", "by": _who(by)}
        )
    return [g for g in gone if g is not None]


def pause_loop(history: History, by: str | None, reason: str | None) -> str:
    """Record a pause; returns who paused."""
    who = _who(by)
    history.append("paused", {"by": who, "reason": reason or None})
    return who


def resume_loop(history: History, state: Mapping[str, Any], by: str | None) -> bool:
    """Lift a pause; False when the loop was not paused (nothing is recorded then)."""
    if not (state.get("control") or {}).get("paused"):
        return False
    history.append("unpaused", {"by": _who(by)})
    return True


def clear_loop(history: History, by: str | None, reason: str | None) -> str:
    """Ask the loop to end at the next turn boundary; barriers and a pause go with it."""
    who = _who(by)
    history.append("cleared", {"by": who, "reason": reason or None})
    return who


def probe(barrier: Mapping[str, Any], cwd: Path) -> str | None:
    """Why the barrier is over (``exited``, ``succeeded``, ``cannot run``), or None while it
    stands. Runs an ``--until-exit`` command once, in its own session, killed after
    :data:`PROBE_TIMEOUT` seconds."""
    on = barrier.get("on")
    if on == "pid":
        pid = barrier.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            return "the record names no process"
        start = barrier.get("pid_start")
        return None if _pid_alive(pid, start if isinstance(start, str) else None) else "exited"
    if on == "until_exit":
        command = [str(a) for a in barrier.get("command") or []]
        if not command:
            return "the record names no command"
        try:
            proc = spawn(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as exc:
            return f"cannot run: {exc.strerror or exc}"
        try:
            code = proc.wait(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return None
        return "succeeded" if code == 0 else None
    return None


def check_barriers(history: History, gate: Gate, cwd: Path) -> list[str]:
    """Record the barriers that are over: deadlines passed, probes answered. Returns one line
    per barrier cleared, for the loop to say."""
    said = []
    for barrier in gate.expired:
        history.append("barrier_cleared", {"id": barrier.get("id"), "why": "deadline"})
        said.append(f"{describe_barrier(barrier)}: deadline passed")
    for barrier in gate.probes:
        why = probe(barrier, cwd)
        if why is not None:
            history.append("barrier_cleared", {"id": barrier.get("id"), "why": why})
            said.append(f"{describe_barrier(barrier)}: {why}")
    return said


class Parking:
    """The loop's side of :func:`turn_gate`: record what cleared, say once what it waits for,
    sleep one poll. :meth:`step` answers ``("go", "")``, ``("wait", message)`` (look again)
    or ``("stop", why)`` (a person cleared the loop)."""

    def __init__(
        self, root: Path, history: History, say: Callable[[str], None], poll: float
    ) -> None:
        self.root, self.history, self.say, self.poll = root, history, say, max(0.05, poll)
        self.last_message = ""

    def step(self, state: Mapping[str, Any]) -> tuple[str, str]:
        """One look at the gate (see the class notes)."""
        gate = turn_gate(state, now_instant())
        if gate.action == "stop":
            return "stop", gate.message
        cleared = check_barriers(self.history, gate, self.root)
        for line in cleared:
            self.say(f"[loop] barrier over: {line}")
        if cleared:
            return "wait", "re-read"  # the history changed: the gate may have opened
        if gate.action == "go":
            if self.last_message:
                self.say("[loop] unparked; the next turn starts")
            self.last_message = ""
            return "go", ""
        if gate.message != self.last_message:
            self.say(f"[loop] {gate.message}")
            self.last_message = gate.message
        time.sleep(self.poll)
        return "wait", gate.message
