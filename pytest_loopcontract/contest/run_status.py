"""Live progress of a contest run: one line per change, and an atomic ``run_status.json``.

Why both: a person at the terminal wants to see which seat is generating, verifying or judging
right now; a dashboard, a CI step or the GitHub Action wants a file it can poll without ever
reading half a write. The snapshot is rewritten whole (write-then-rename) on every change, so a
reader sees the previous state or the next one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytest_loopcontract.fsio import utc_now, write_json_atomic

__all__ = ["SEAT_STATES", "RunProgress"]

SEAT_STATES = frozenset(
    {
        "queued",
        "probing",
        "probed",
        "generating",
        "generated",
        "verifying",
        "verified",
        "judging",
        "judged",
        "eliminated",
        "survived",
        "unavailable",
        "done",
    }
)


class RunProgress:
    """Thread-safe seat states and phase; every change prints one line and rewrites the file."""

    def __init__(
        self,
        path: Path,
        *,
        run_id: str,
        contract_id: str,
        seats: Iterable[str],
        emit: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self._emit = emit
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._doc: dict[str, Any] = {
            "run_id": run_id,
            "contract_id": contract_id,
            "phase": "starting",
            "attempt": 1,
            "seats": {name: {"state": "queued", "detail": ""} for name in seats},
            "started": utc_now(),
            "updated": utc_now(),
            "finished": None,
        }
        self._write()

    def phase(self, phase: str, *, attempt: int | None = None) -> None:
        with self._lock:
            self._doc["phase"] = phase
            if attempt is not None:
                self._doc["attempt"] = attempt
            self._write()
        self._say(f"phase: {phase}" + (f" (attempt {attempt})" if attempt else ""))

    def seat(self, name: str, state: str, detail: str = "") -> None:
        if state not in SEAT_STATES:
            raise ValueError(f"unknown seat state {state!r}")
        with self._lock:
            self._doc["seats"].setdefault(name, {})
            self._doc["seats"][name] = {"state": state, "detail": detail}
            self._write()
        self._say(f"{name}: {state}" + (f" - {detail}" if detail else ""))

    def finish(self, status: str) -> None:
        with self._lock:
            self._doc["phase"] = "finished"
            self._doc["status"] = status
            self._doc["finished"] = utc_now()
            self._write()
        self._say(f"finished: {status}")

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {**self._doc, "seats": {k: dict(v) for k, v in self._doc["seats"].items()}}

    def _write(self) -> None:
        self._doc["updated"] = utc_now()
        write_json_atomic(self.path, self._doc)

    def _say(self, text: str) -> None:
        if self._emit is not None:
            self._emit(f"[{time.monotonic() - self._t0:6.1f}s] {text}")
