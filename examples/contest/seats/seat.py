"""A scripted contest seat: a deterministic local program standing in for a coding model.

Usage: ``python seat.py STYLE PROMPT_FILE WORKDIR`` (STYLE: ``deque``, ``ring`` or ``resync``).

It writes ``rolling/samplers.py`` in WORKDIR and nothing else. What it writes depends on the
prompt only through :data:`LESSON`, which matches what the verifier says after the
``tick-arithmetic`` gate failed: a lesson's rule (``keep metric.ops_per_tick <= 4 ops ...``),
a lesson's or a retry note's evidence (``metric.ops_per_tick observed 50.3875 ...``). The gate
line every contest prompt carries (``metric.ops_per_tick <= 4 ops``) does not match.

* Without it, every style writes the same naive RollingMean (correct, but it re-sums the
  window on every read: about 50 operations a tick for a window of 50).
* With it, each style writes its own incremental version (about 3 operations a tick):
  ``deque`` a running sum over a deque, ``ring`` a running sum over a fixed ring buffer,
  ``resync`` a running sum re-summed from the window every 256 ticks to bound float drift.

It writes ``{"tokens": 0, "cost_usd": 0.0}`` to ``$LOOP_CONTRACT_REPORT``: no model is used,
so nothing is spent. Standard library only, so any Python 3.9+ runs it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

LESSON = re.compile(r"\bkeep metric\.ops_per_tick\b|\bmetric\.ops_per_tick`? observed\b")
STYLES = ("deque", "ring", "resync")
TARGET = Path("rolling") / "samplers.py"

HEADER = '''"""Samplers read on every tick: push one value, then read ``value``."""

from __future__ import annotations
'''

EXPONENTIAL = '''

class ExponentialMean:
    """Exponentially weighted mean: each new value counts ``alpha``, the past ``1 - alpha``."""

    def __init__(self, alpha: float) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        self.alpha = alpha
        self._value: float | None = None

    def push(self, x: float) -> None:
        if self._value is None:
            self._value = x
        else:
            self._value = self._value + self.alpha * (x - self._value)

    @property
    def value(self) -> float | None:
        """The current mean, or None before the first push."""
        return self._value
'''

CHECK_WINDOW = """        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive whole number, got {window!r}")
        self.window = window
"""

NAIVE = (
    '''

class RollingMean:
    """Mean of the last ``window`` values pushed (fewer while the window is filling)."""

    def __init__(self, window: int) -> None:
'''
    + CHECK_WINDOW
    + '''        self._values: deque[float] = deque(maxlen=window)

    def push(self, x: float) -> None:
        self._values.append(x)

    @property
    def value(self) -> float | None:
        """The mean of the values in the window, or None before the first push."""
        if not self._values:
            return None
        return sum(self._values) / len(self._values)
'''
)

DEQUE = (
    '''

class RollingMean:
    """Mean of the last ``window`` values pushed (fewer while the window is filling).

    A running sum makes a tick cost two or three operations whatever the window size.
    """

    def __init__(self, window: int) -> None:
'''
    + CHECK_WINDOW
    + '''        self._values: deque[float] = deque()
        self._total = 0.0

    def push(self, x: float) -> None:
        self._values.append(x)
        self._total = self._total + x
        if len(self._values) > self.window:
            self._total = self._total - self._values.popleft()

    @property
    def value(self) -> float | None:
        """The mean of the values in the window, or None before the first push."""
        if not self._values:
            return None
        return self._total / len(self._values)
'''
)

RING = (
    '''

class RollingMean:
    """Mean of the last ``window`` values pushed (fewer while the window is filling).

    The window is a fixed ring buffer: ``_slots`` never grows, ``_next`` is where the next
    value goes (overwriting the oldest once the window is full), and ``_total`` is the
    running sum of the values in the window, so a tick costs at most three operations.
    """

    def __init__(self, window: int) -> None:
'''
    + CHECK_WINDOW
    + '''        self._slots: list[float] = [0.0] * window
        self._next = 0
        self._count = 0
        self._total = 0.0

    def push(self, x: float) -> None:
        """Add ``x``; once the window is full, the oldest value leaves it."""
        if self._count == self.window:
            self._total = self._total - self._slots[self._next]
        else:
            self._count += 1
        self._slots[self._next] = x
        self._total = self._total + x
        self._next = (self._next + 1) % self.window

    @property
    def value(self) -> float | None:
        """The mean of the values in the window, or None before the first push."""
        if self._count == 0:
            return None
        return self._total / self._count
'''
)

RESYNC = (
    '''

RESYNC_EVERY = 256
"""Re-sum the window from scratch this often: a running sum of floats drifts (each add and
subtract rounds), and re-summing bounds the drift at the cost of ``window`` adds per
``RESYNC_EVERY`` ticks, well under one extra operation a tick."""


class RollingMean:
    """Mean of the last ``window`` values pushed (fewer while the window is filling).

    A running sum keeps a tick at about three operations whatever the window size; see
    :data:`RESYNC_EVERY` for how its rounding error is kept in check.
    """

    def __init__(self, window: int) -> None:
'''
    + CHECK_WINDOW
    + '''        self._values: deque[float] = deque()
        self._total = 0.0
        self._since_resync = 0

    def push(self, x: float) -> None:
        """Add ``x``; once the window is full, the oldest value leaves it."""
        self._values.append(x)
        if len(self._values) > self.window:
            # Subtract the leaving value before adding the new one: the sum stays closer to
            # the size of the window's values, which loses less precision.
            self._total = self._total - self._values.popleft()
        self._total = self._total + x
        self._since_resync += 1
        if self._since_resync >= RESYNC_EVERY:
            # Re-sum from the window: no rounding error outlives RESYNC_EVERY ticks.
            self._total = sum(self._values)
            self._since_resync = 0

    @property
    def value(self) -> float | None:
        """The mean of the values in the window, or None before the first push."""
        if not self._values:
            return None
        return self._total / len(self._values)
'''
)

INCREMENTAL = {"deque": DEQUE, "ring": RING, "resync": RESYNC}


def source(style: str, learned: bool) -> str:
    """The full text of ``rolling/samplers.py`` this seat writes."""
    rolling_mean = INCREMENTAL[style] if learned else NAIVE
    imports = "" if style == "ring" and learned else "\nfrom collections import deque\n"
    return HEADER + imports + EXPONENTIAL + rolling_mean


def write_report() -> None:
    report = os.environ.get("LOOP_CONTRACT_REPORT")
    if report:
        Path(report).write_text(json.dumps({"tokens": 0, "cost_usd": 0.0}) + "\n", "utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in STYLES:
        print(f"usage: seat.py {{{','.join(STYLES)}}} PROMPT_FILE WORKDIR", file=sys.stderr)
        return 2
    style, prompt_file, workdir = argv
    prompt = Path(prompt_file).read_text("utf-8")
    learned = LESSON.search(prompt) is not None
    target = Path(workdir) / TARGET
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source(style, learned), "utf-8")
    write_report()
    version = f"incremental ({style})" if learned else "naive (re-sums the window each tick)"
    print(f"scripted seat {style}: a deterministic program, not a model; wrote {TARGET} {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
