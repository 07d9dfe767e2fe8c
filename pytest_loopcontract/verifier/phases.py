"""What a verification is doing right now, for whoever watches: phases and a live test count.

Why a listener rather than printing: the verifier is a library (the loop, the contest and the
GitHub modes call it too) and decides nothing about terminals; the command line sets a
listener for the duration of one ``baseline`` or ``verify`` (:func:`listening`) and draws it.
Without one, nothing is counted and the test process is started exactly as before.

The count is display only. The injected collector writes it to a small file of its own in the
run's private folder (:data:`COUNT_FORMAT`, rewritten in place, at most every
``COUNT_INTERVAL`` seconds); the launcher polls that file while it waits. A candidate can make
the number say anything, and nothing but the bar reads it: the verdict still comes from the
verified records the launcher checks after the run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

__all__ = [
    "COUNT_INTERVAL",
    "Listener",
    "active",
    "listening",
    "parse_count",
    "phase",
    "read_count",
]

# How often the collector rewrites the count, and how often the launcher looks at it.
COUNT_INTERVAL = 0.2
COUNT_LIMIT = 64  # bytes; the file holds one short line, anything longer is not ours


class Listener(Protocol):
    """Receives a verification's progress; both calls come from the verifying thread."""

    def phase(self, name: str) -> None: ...

    def tests(self, done: int, total: int | None) -> None: ...


_listener: ContextVar[Listener | None] = ContextVar("loopcontract_listener", default=None)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """Send this thread's verification progress to ``listener`` until the block ends."""
    token = _listener.set(listener)
    try:
        yield listener
    finally:
        _listener.reset(token)


def active() -> Listener | None:
    """The listener of this thread's verification, or None when nobody watches."""
    return _listener.get()


def phase(name: str) -> None:
    """Tell the listener (if any) that the verification entered ``name``."""
    listener = _listener.get()
    if listener is not None:
        listener.phase(name)


def parse_count(data: bytes) -> tuple[int, int | None] | None:
    """``(tests run, tests collected or None)`` from the collector's line, or None when the
    bytes are not one (not written yet, half written, or written by something else)."""
    parts = data.decode("ascii", "replace").split()
    if len(parts) != 2 or not parts[0].isdigit():
        return None
    done = int(parts[0])
    total = int(parts[1]) if parts[1].isdigit() else None
    return done, total


def read_count(path: Path) -> tuple[int, int | None] | None:
    """The count the collector last wrote to ``path`` (None when there is none yet).

    The run can write in that folder, so no symlink is followed, a pipe does not block, at
    most :data:`COUNT_LIMIT` bytes are read, and only two numbers come out."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return parse_count(os.read(fd, COUNT_LIMIT))
    except OSError:  # a pipe or some other oddity put there by the run: no count
        return None
    finally:
        os.close(fd)
