"""Live progress of ``baseline`` and ``verify`` on stderr: phases and the count of tests run.

Why on stderr and in two shapes: stdout carries the result (``--json`` a machine parses), so
progress never touches it. On a terminal one line is redrawn in place (a bar when the number
of tests is known); in a log (CI, an agent capturing output) redrawing would leave a mess, so
there it is one line per phase and a count line at most every :data:`PLAIN_INTERVAL` seconds,
never a line per test. ``-q`` shows nothing. Colour only on a terminal, never with
``NO_COLOR`` set to anything (https://no-color.org) or ``TERM=dumb``.

The numbers come from :mod:`pytest_loopcontract.verifier.phases` and are display only.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TextIO

from pytest_loopcontract.verifier import phases

__all__ = ["StderrProgress", "bar_line", "showing_progress", "wants_colour"]

PLAIN_INTERVAL = 5.0
BAR_WIDTH = 24
_BOLD, _GREEN, _DIM, _RESET = "\x1b[1m", "\x1b[32m", "\x1b[2m", "\x1b[0m"
_ESCAPE = re.compile("\x1b\\[[0-9;]*m")


def wants_colour(env: Mapping[str, str], tty: bool) -> bool:
    """Colour on a terminal, unless ``NO_COLOR`` is set non-empty or ``TERM`` is ``dumb``."""
    return tty and not env.get("NO_COLOR") and env.get("TERM", "") != "dumb"


def count_text(done: int | None, total: int | None) -> str:
    if done is None:
        return ""
    return f"{done}/{total} tests" if total is not None else f"{done} tests"


def bar_line(
    command: str, phase: str, done: int | None, total: int | None, *, width: int, colour: bool
) -> str:
    """The one redrawn line: command, phase, and a bar when the total is known, cut to fit
    ``width`` (a line that wraps cannot be redrawn in place): the phase gives way first."""
    counted = count_text(done, total)
    filled = min(BAR_WIDTH, BAR_WIDTH * done // total) if done is not None and total else None
    head = f"loop-contract {command}: "
    tail_length = len(counted) + (BAR_WIDTH + 3 if filled is not None else 0)
    room = width - len(head) - 2 - tail_length
    if len(phase) > room:
        phase = phase[: max(0, room - 3)] + "..."
    bar = ""
    if filled is not None:
        full, empty = "#" * filled, "-" * (BAR_WIDTH - filled)
        if colour:
            full = f"{_GREEN}{full}{_RESET}" if full else ""
            empty = f"{_DIM}{empty}{_RESET}" if empty else ""
        bar = f"[{full}{empty}] "
    if colour:
        head = f"{_BOLD}{head}{_RESET}"
    return f"{head}{phase}  {bar}{counted}".rstrip()


def visible_length(line: str) -> int:
    """How many columns ``line`` takes: its length without the colour codes."""
    return len(_ESCAPE.sub("", line))


class StderrProgress:
    """An :class:`phases.Listener` drawing on ``stream`` (redrawn on a tty, plain lines else)."""

    def __init__(
        self,
        stream: TextIO,
        command: str,
        *,
        tty: bool,
        colour: bool,
        width: int = 80,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.command = stream, command
        self.tty, self.colour, self.width, self.clock = tty, colour, width, clock
        self.current = ""
        self.done: int | None = None
        self.total: int | None = None
        self.printed_count: tuple[int | None, int | None] = (None, None)
        self.last_plain = float("-inf")
        self.drawn = 0  # visible length of the line on screen (tty)

    def phase(self, name: str) -> None:
        if not self.tty:
            self._plain_count(force=True)
        self.current, self.done, self.total = name, None, None
        self.last_plain = self.clock()  # a count line comes PLAIN_INTERVAL after the phase's
        if self.tty:
            self._redraw()
        else:
            self._write(f"loop-contract {self.command}: {name}\n")

    def tests(self, done: int, total: int | None) -> None:
        self.done, self.total = done, total
        if self.tty:
            self._redraw()
        else:
            self._plain_count(force=False)

    def close(self) -> None:
        """Wipe the bar (a terminal) or print the last count (a log) before the result."""
        if self.tty and self.drawn:
            self._write("\r" + " " * self.drawn + "\r")
            self.drawn = 0
        elif not self.tty:
            self._plain_count(force=True)

    def _plain_count(self, *, force: bool) -> None:
        now = self.clock()
        unchanged = self.printed_count == (self.done, self.total)
        if self.done is None or unchanged or (not force and now - self.last_plain < PLAIN_INTERVAL):
            return
        self.printed_count, self.last_plain = (self.done, self.total), now
        self._write(f"loop-contract {self.command}: {count_text(self.done, self.total)} run\n")

    def _redraw(self) -> None:
        line = bar_line(
            self.command, self.current, self.done, self.total, width=self.width, colour=self.colour
        )
        visible = visible_length(line)
        pad = " " * max(0, self.drawn - visible)
        self._write(f"\r{line}{pad}")
        self.drawn = visible

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr: no progress
            self.stream.write(text)
            self.stream.flush()


def _width(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        columns = 0
    return max(20, columns - 1) if columns else 79  # 0: a terminal that does not say


@contextlib.contextmanager
def showing_progress(command: str, *, quiet: bool) -> Iterator[None]:
    """Draw this command's verification progress on stderr while the block runs (not with
    ``quiet``); the bar is wiped before the block's caller prints its result."""
    if quiet:
        yield
        return
    stream = sys.stderr
    try:
        tty = stream.isatty()
    except (OSError, ValueError):
        tty = False
    shown = StderrProgress(
        stream, command, tty=tty, colour=wants_colour(os.environ, tty), width=_width(stream)
    )
    try:
        with phases.listening(shown):
            yield
    finally:
        shown.close()
