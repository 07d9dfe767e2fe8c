"""The verifier's part inside the test process: a pytest plugin with no dependencies.

The isolated launcher copies this package beside the run (as ``_loopcontract_inner``), puts it
on the child's ``PYTHONPATH`` and loads it with ``-p``, so the project's test environment needs
only pytest, not pytest-loopcontract. Its settings (where to write the raw results, the nonce,
the egress policy) come in a JSON file named by ``$LOOP_CONTRACT_INNER``; without that it only
registers the ``dod`` marker and the ``loop_metric`` fixture. The in-process plugin
(``pytest --loop-contract``) builds on the same collector.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

from .collector import ResultCollector, WorkerMarks, loop_metric, write_results
from .progress import CountWriter
from .watch import PatchWatch

__all__ = ["CONFIG_ENV", "EgressReporter", "ResultCollector", "loop_metric", "settings"]

CONFIG_ENV = "LOOP_CONTRACT_INNER"
EGRESS_PROPERTY = "loop_egress"
DOD_MARKER = "dod(item_id): ties this test to a Definition-of-Done item of the contract"

# Taken at import, which ``-p`` makes happen before any conftest or test module loads; only
# when a launcher started the run (the in-process plugin imports this module too).
_watch = PatchWatch() if os.environ.get(CONFIG_ENV) else None


def settings() -> dict[str, Any] | None:
    """The launcher's settings for this run, or None when no launcher started it."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return None
    with open(path, encoding="utf-8") as fh:
        loaded = json.load(fh)
    return loaded if isinstance(loaded, dict) else None


class EgressReporter:
    """Moves the attempts seen during each test phase onto the test's user_properties, so
    they reach the controller's reports even from an xdist worker."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, object, object]:
        for attempt in self.policy.take_attempts():
            item.user_properties.append((EGRESS_PROPERTY, attempt))
        return (yield)


def install_egress(config: pytest.Config, allow: list[str]) -> None:
    from . import egress

    config.pluginmanager.register(EgressReporter(egress.install(allow)), "loopcontract-egress")


def leftover_egress(config: pytest.Config) -> list[dict[str, Any]]:
    """Attempts made outside any test (imports, collection) in this process."""
    reporter = config.pluginmanager.get_plugin("loopcontract-egress")
    return reporter.policy.take_attempts() if reporter is not None else []


class LauncherCollector(ResultCollector):
    """Writes the raw results where the launcher asked; the launcher decides the verdict."""

    def __init__(self, config: pytest.Config, raw_path: str, nonce: str) -> None:
        super().__init__(config, nonce)
        self.raw_path = raw_path

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        data = self.results(session, exitstatus, leftover_egress(self.config))
        write_results(self.raw_path, data)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", DOD_MARKER)
    launcher = settings()
    if launcher is None or _watch is None or config.pluginmanager.has_plugin("loopcontract-watch"):
        return
    config.pluginmanager.register(_watch, "loopcontract-watch")
    if launcher.get("egress") is not None:
        install_egress(config, [str(h) for h in launcher["egress"]])
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerMarks(), "loopcontract-worker")
        return
    collector = LauncherCollector(config, str(launcher["raw"]), str(launcher["nonce"]))
    config.pluginmanager.register(collector, "loopcontract-collector")
    if launcher.get("count"):  # someone watches: the live count (display only)
        config.pluginmanager.register(CountWriter(str(launcher["count"])), "loopcontract-count")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("loopcontract-egress"):
        from . import egress

        egress.uninstall()
