"""The live test count the launcher shows while a run is under way (display only).

Why its own small plugin: the count must reach the launcher during the run, while the results
file is written only at the end. Once per test (its teardown report) it adds one; at most
every ``INTERVAL`` seconds it rewrites one fixed-width line, ``"<run> <collected>\\n"``, at the
start of the file the launcher named. That costs a clock read per test and a ``pwrite`` a few
times a second. The launcher trusts the number for nothing but the progress bar.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection

import pytest

__all__ = ["CountWriter"]

INTERVAL = 0.2
_WIDTH = 12


class CountWriter:
    """Counts finished tests on the controller and rewrites the count file now and then."""

    def __init__(self, path: str, skip: Collection[str] = ()) -> None:
        self.skip = skip  # the referee's twins and canaries: not tests the verdict counts
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.done = 0
        self.total: int | None = None
        self.next_write = 0.0

    def _write(self) -> None:
        total = "-" if self.total is None else str(self.total)
        line = f"{self.done:>{_WIDTH}} {total:>{_WIDTH}}\n".encode("ascii")
        os.pwrite(self.fd, line, 0)
        self.next_write = time.monotonic() + INTERVAL

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = sum(1 for item in session.items if item.nodeid not in self.skip)
        self._write()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown" or report.nodeid in self.skip:
            return
        self.done += 1
        if time.monotonic() >= self.next_write:
            self._write()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self._write()
        os.close(self.fd)
        self.fd = -1
