"""Child processes the verifier, the loop and the contest start: the one way to run them.

Each child leads its own session (:func:`spawn`), so a timeout or an interrupt can end it
together with everything it spawned (:func:`signal_group`, :func:`kill_group`). Its pipes are
drained by pump threads into a :class:`Capture` that keeps a bounded head and tail, so a child
that prints gigabytes neither blocks on a full pipe nor fills the memory.

Because each child has its own session, a terminal's Ctrl-C (SIGINT to the foreground process
group) and a SIGTERM sent to the command never reach it: :func:`stopping_on_signals` is how a
command stops when asked, ending the children it spawned and cleaning up before it exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = [
    "Capture",
    "Stopped",
    "end_children",
    "kill_group",
    "read_tail",
    "signal_group",
    "spawn",
    "start_pump",
    "stopping_on_signals",
]

_PIPE_CHUNK = 64 * 1024
_Stream = int | IO[Any] | None


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: _Stream = subprocess.DEVNULL,
    stdout: _Stream = subprocess.PIPE,
    stderr: _Stream = subprocess.PIPE,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) as the leader of a new session; raises ``OSError``.

    By default stdin is empty and both output streams are pipes, to drain with
    :func:`start_pump`; a log file or ``subprocess.STDOUT`` may be given instead.
    """
    with _SPAWNED_LOCK:  # held across the start: a stop cannot miss a child just started
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        _SPAWNED.add(proc)
    return proc


# Every child :func:`spawn` started and nobody has reaped yet, for a stop to end them all.
_SPAWNED: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()
_SPAWNED_LOCK = threading.RLock()  # re-entrant: the stop handler runs on the main thread


def _running() -> list[subprocess.Popen[bytes]]:
    with _SPAWNED_LOCK:
        return [proc for proc in _SPAWNED if proc.returncode is None]


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``pid`` leads; a group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group, then reap the child."""
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


STOP_GRACE = 2.0
"""Seconds a stopped command's children get, after SIGTERM, before their groups are killed."""


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM asked the command to stop (see :func:`stopping_on_signals`).

    A ``KeyboardInterrupt``, so every ``finally`` runs and whatever already handles Ctrl-C
    handles a SIGTERM the same way; ``exit_code`` is what a shell reports for a process the
    signal ended (130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def end_children(grace: float = STOP_GRACE) -> None:
    """End every child :func:`spawn` started that is still running: SIGTERM to its group
    (a sandbox, a reaper, a seat: each ends what it holds), then SIGKILL to the groups that
    are not gone within ``grace`` seconds. For a process that is stopping, not for one that
    runs other work beside."""
    running = _running()
    for proc in running:
        signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        signal_group(proc.pid, signal.SIGKILL)  # what is left of its group (the leader gone)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """While in this block, SIGINT and SIGTERM stop the command: the first one SIGTERMs every
    running child's group at once (a seat on another thread stops too) and raises
    :class:`Stopped` in the main thread, so the ``finally`` blocks end what is left and remove
    their folders; leaving the block after a stop kills what still runs (:func:`end_children`).

    SIGINT is taken even when it was inherited ignored (a job a non-interactive shell started
    with ``&``), so Ctrl-C stops a command a script runs in the background. A second signal
    while stopping is ignored: the cleanup it would cut short is what the first one asked
    for. Outside the main thread this does nothing (only the main thread receives signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        if received:
            return
        received.append(signum)
        for proc in _running():
            signal_group(proc.pid, signal.SIGTERM)
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        try:
            if received:
                end_children()
        finally:
            for sig, handler in previous.items():
                if handler is not None:
                    signal.signal(sig, handler)


class Capture:
    """A pipe's bytes, bounded: the first ``head`` bytes, the last ``tail`` after them, the count.

    ``on_overflow`` is called once, from the pump thread, as soon as more than ``head + tail``
    bytes arrived (say, to kill a child whose output is useless past a cap). Thread-safe.
    """

    def __init__(
        self, head: int, tail: int, *, on_overflow: Callable[[], None] | None = None
    ) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._on_overflow = on_overflow
        self._lock = threading.Lock()

    @property
    def overflowed(self) -> bool:
        return self._total > self._head_limit + self._tail_limit

    def add(self, chunk: bytes) -> None:
        with self._lock:
            was_over = self.overflowed
            self._total += len(chunk)
            room = self._head_limit - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            if chunk and self._tail_limit:
                self._tail += chunk
                if len(self._tail) > 2 * self._tail_limit:  # trim in batches, not per chunk
                    del self._tail[: -self._tail_limit]
            crossed = self.overflowed and not was_over
        if crossed and self._on_overflow is not None:
            self._on_overflow()

    def snapshot(self) -> tuple[bytes, bytes, int]:
        """``(head, tail, total bytes seen)``; the tail starts where the head ended, or later."""
        with self._lock:
            tail = self._tail[-self._tail_limit :] if self._tail_limit else b""
            return bytes(self._head), bytes(tail), self._total


def _pump(stream: IO[bytes], sink: Capture) -> None:
    """Drain ``stream`` to EOF so the child never blocks on a full pipe."""
    fd = stream.fileno()
    with stream:
        while chunk := os.read(fd, _PIPE_CHUNK):
            sink.add(chunk)


def start_pump(stream: IO[bytes] | None, sink: Capture) -> threading.Thread:
    """A daemon thread draining one of a child's pipes into ``sink``."""
    assert stream is not None  # spawn(stdout=PIPE, stderr=PIPE) always creates the pipes
    pump = threading.Thread(target=_pump, args=(stream, sink), daemon=True)
    pump.start()
    return pump


def read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of a child's output file, decoded leniently: a child can print
    gigabytes, and only the end says why it failed."""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit))
        return fh.read().decode("utf-8", "replace")
