"""The in-process verdict writer: the collector that ``pytest --loop-contract`` registers.

Its own module so that :mod:`pytest_loopcontract.plugin`, which every pytest run loads, imports
it (and with it the collector, the contract model and the verdict code) only when the option
turns the plugin on.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.fsio import sync_file, utc_now, write_json_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import render_checklist
from pytest_loopcontract.verifier.inner import leftover_egress
from pytest_loopcontract.verifier.inner.collector import ResultCollector
from pytest_loopcontract.verifier.inprocess import (
    incomplete_verdict,
    session_baseline,
    verdict_in_process,
)
from pytest_loopcontract.verifier.repo_evidence import (
    Pending,
    PendingEvidence,
    StartingPoint,
    starting_point,
)
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.workspace import pinned_environment

__all__ = ["VerdictWriter"]


class VerdictWriter(ResultCollector):
    """Collects the run like the launcher's collector, then writes the in-process verdict."""

    def __init__(self, config: pytest.Config, contract: Contract) -> None:
        super().__init__(config)
        self.contract = contract
        self.started_at = ""
        self.verdict: dict[str, Any] | None = None
        self._environ: dict[str, str] | None = None
        self._start: Pending[StartingPoint] | None = None
        self._sync: Pending[None] | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started_at = utc_now()
        self._start = self._read_start(dict(os.environ))
        self._write_provisional()

    def _read_start(self, environ: dict[str, str]) -> Pending[StartingPoint]:
        """Which repository and commit, and the snapshot's index, made while the tests are
        collected: off the session's end, where the snapshot alone is left for git."""
        root = Path(self.config.rootpath)
        return Pending(partial(starting_point, root), environ, "loopcontract-start")

    def _write_provisional(self) -> None:
        """Leave an ``error`` verdict on disk until the real one replaces it, so a run that
        dies half-way (os._exit, a kill) never leaves an older ``pass`` looking current."""
        self._write_verdict(
            incomplete_verdict(self.config, self.contract, self.nonce, self.started_at)
        )

    def _write_verdict(self, verdict: dict[str, Any]) -> None:
        """The verdict is in place when this returns (a test that ends the process finds it
        there); its fsyncs, two waits for the disk, run on a thread while pytest goes on. The
        next write waits for them, and so does the session's end (``pytest_unconfigure``)."""
        self._wait_for_disk()
        path = self.verdict_path()
        write_json_atomic(path, verdict, sync=False)
        self._sync = Pending(partial(sync_file, path), {}, "loopcontract-sync")

    def _wait_for_disk(self) -> None:
        if self._sync is not None:
            sync, self._sync = self._sync, None
            sync.result()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._wait_for_disk()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Keep the environment as it is before any test runs: git reads the tree at the
        session's end with it, so a test that empties ``PATH`` or points ``GIT_DIR`` elsewhere
        cannot blind the pin check. (Git does not run beside the tests: a file they are
        writing, such as pytest-cov's ``.coverage``, makes ``git add`` fail on unstable data.)
        """
        super().pytest_collection_finish(session)
        self._environ = dict(os.environ)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        root = Path(self.config.rootpath)
        environ = self._environ or dict(os.environ)
        self.verdict = self._verdict(session, exitstatus, root, environ)
        self._write_verdict(self.verdict)
        session.exitstatus = int(self.verdict["exit_code"])

    def _verdict(
        self, session: pytest.Session, exitstatus: int, root: Path, environ: dict[str, str]
    ) -> dict[str, Any]:
        """Git's snapshot in its process while this thread converts the records (see
        :mod:`.repo_evidence`), then the verdict of both."""
        start = self._start or self._read_start(environ)
        baseline = session_baseline(self.config, root)
        git = PendingEvidence(start, self.contract, baseline, environ)
        # The raw records are dropped as soon as they are converted rather than held through
        # evaluate() beside their converted copy (0.4 MiB of peak memory on 2,000 tests).
        raw = self.results(session, exitstatus, leftover_egress(self.config), origins=False)
        results = RunResults.from_json(raw)
        del raw
        with pinned_environment(environ):
            return verdict_in_process(
                self.config, self.contract, results, self.started_at, self.started, git
            )

    def verdict_path(self) -> Path:
        configured = self.config.getoption("loop_contract_verdict") or self.config.getini(
            "loop_contract_verdict"
        )
        path = Path(configured) if configured else StateDir.of(".").verdict
        if not path.is_absolute():
            path = Path(self.config.rootpath) / path
        return path

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        terminalreporter.section("loop contract")
        for line in render_checklist(self.verdict):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"  verdict written to {self.verdict_path()}")
