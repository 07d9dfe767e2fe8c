"""The verifier's part inside the test process: a pytest plugin with no dependencies.

The isolated launcher copies this package beside the run (as ``_loopcontract_inner``), puts it
on the child's ``PYTHONPATH`` and loads it with ``-p``, so the project's test environment needs
only pytest, not pytest-loopcontract. Its settings (where to write the raw results, the nonce,
the key that signs them, the referee's items, the egress policy) come in a JSON file named by
``$LOOP_CONTRACT_INNER``. They are read when ``-p`` imports this module, before any conftest or
test module loads, and then the file is deleted: nothing the code under test can read later
holds the key or the plan (an xdist worker receives them from the controller). Without
settings it only registers the ``dod`` marker and the ``loop_metric`` fixture. The in-process
plugin (``pytest --loop-contract``) builds on the same collector.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Callable, Generator
from hashlib import sha256
from typing import Any

import pytest

from .collector import ResultCollector, WorkerMarks, loop_metric, write_results
from .live_count import CountWriter
from .names import POLICY_PROPERTY
from .policy import Policy, install
from .referee import Referee
from .watch import PatchWatch

__all__ = ["CONFIG_ENV", "EgressReporter", "ResultCollector", "loop_metric", "settings"]

CONFIG_ENV = "LOOP_CONTRACT_INNER"
EGRESS_PROPERTY = "loop_egress"
DOD_MARKER = "dod(item_id): ties this test to a Definition-of-Done item of the contract"

WORKER_KEY = "loopcontract_inner"


def _take_settings() -> dict[str, Any] | None:
    """The launcher's settings, read once and the file deleted (the variable stays: it names a
    file that no longer exists); None when no launcher started the run."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            loaded = json.load(fh)
        os.unlink(path)
    except (OSError, ValueError):  # an xdist worker: the controller has taken them
        return None
    return loaded if isinstance(loaded, dict) else None


# Taken at import, which ``-p`` makes happen before any conftest or test module loads; only
# when a launcher started the run (the in-process plugin imports this module too).
_launched = bool(os.environ.get(CONFIG_ENV))
_watch = PatchWatch() if _launched else None
_settings: list[dict[str, Any] | None] = [_take_settings()]
_policy = Policy(os.environ.get("LOOP_CONTRACT_ROOT_ALIASES", "").split(os.pathsep))
if _launched:
    install(_policy)  # before any conftest: what it sees early is judged once configured


def settings(config: pytest.Config | None = None) -> dict[str, Any] | None:
    """The launcher's settings for this run (on an xdist worker, what the controller passed
    on), or None when no launcher started it. Handed out once: later calls get None."""
    if config is not None and hasattr(config, "workerinput"):
        given = config.workerinput.pop(WORKER_KEY, None)
        return given if isinstance(given, dict) else None
    taken, _settings[0] = _settings[0], None
    return taken


def sign(key: bytes, body: bytes) -> bytes:
    """The results file: the body's HMAC (hex) on the first line, then the body."""
    return hmac.new(key, body, sha256).hexdigest().encode("ascii") + b"\n" + body


class WorkerSettings:
    """On the controller: hands the settings (minus the results path) to each xdist worker."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = {k: v for k, v in data.items() if k not in ("raw", "count")}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_KEY] = self.data


class ReportCarrier:
    """Moves what ``take`` returns during each test phase onto the test's user_properties
    under ``key``, so it reaches the controller's reports even from an xdist worker."""

    def __init__(self, key: str, take: Callable[[], list[Any]]) -> None:
        self.key, self.take = key, take

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, object, object]:
        for entry in self.take():
            item.user_properties.append((self.key, entry))
        return (yield)


class EgressReporter(ReportCarrier):
    """The egress policy's blocked attempts, carried on the tests' reports."""

    def __init__(self, policy: Any) -> None:
        super().__init__(EGRESS_PROPERTY, policy.take_attempts)
        self.policy = policy


def _configure_policy(config: pytest.Config, launcher: dict[str, Any]) -> None:
    given = launcher.get("policy")
    if not isinstance(given, dict):
        _policy.disable()
        return
    _policy.configure(given)
    carrier = ReportCarrier(POLICY_PROPERTY, _policy.take)
    config.pluginmanager.register(carrier, "loopcontract-policy")


def install_egress(config: pytest.Config, allow: list[str]) -> None:
    from . import egress

    config.pluginmanager.register(EgressReporter(egress.install(allow)), "loopcontract-egress")


def leftover_egress(config: pytest.Config) -> list[dict[str, Any]]:
    """Attempts made outside any test (imports, collection) in this process."""
    reporter = config.pluginmanager.get_plugin("loopcontract-egress")
    return reporter.policy.take_attempts() if reporter is not None else []


class LauncherCollector(ResultCollector):
    """Writes the signed raw results where the launcher asked; the launcher decides."""

    def __init__(self, config: pytest.Config, raw_path: str, nonce: str, key: bytes) -> None:
        super().__init__(config, nonce)
        self.raw_path = raw_path
        self._sign = lambda body: sign(key, body)
        self.referee: Referee | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        data = self.results(session, exitstatus, leftover_egress(self.config))
        data["policy"] = [*self.policy_uses, *_policy.take()]
        if self.referee is not None:
            data["referee"] = self.referee.report(self.referee_items, self.referee_rebound)
        write_results(self.raw_path, data, self._sign)


def _register_referee(config: pytest.Config, launcher: dict[str, Any]) -> Referee | None:
    plan = launcher.get("referee")
    if not isinstance(plan, dict):
        return None
    referee = Referee(plan, bytes.fromhex(str(launcher["key"])))
    config.pluginmanager.register(referee, "loopcontract-referee")
    # twins fail by design, and the verdict needs every outcome: -x or --maxfail would stop
    # the run at the first twin (read by pytest's session and by xdist's, after this hook)
    config.option.maxfail = 0
    return referee


def _limit_to(config: pytest.Config, only: object) -> None:
    """A rerun of some node ids: they replace every path pytest took from its arguments, so
    a contract's ``pytest.args`` that names whole files (the suite a project runs) does not
    run those files again around the ids (on an xdist worker too)."""
    if isinstance(only, list) and only:
        config.args = [str(nodeid) for nodeid in only]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", DOD_MARKER)
    if _watch is None or config.pluginmanager.has_plugin("loopcontract-watch"):
        return
    launcher = settings(config)
    if launcher is None:
        _policy.disable()
        return
    config.pluginmanager.register(_watch, "loopcontract-watch")
    _limit_to(config, launcher.get("only"))
    _configure_policy(config, launcher)
    if launcher.get("egress") is not None:
        install_egress(config, [str(h) for h in launcher["egress"]])
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerMarks(), "loopcontract-worker")
        _register_referee(config, launcher)
        return
    config.pluginmanager.register(WorkerSettings(launcher), "loopcontract-workers")
    key = bytes.fromhex(str(launcher["key"]))
    collector = LauncherCollector(config, str(launcher["raw"]), str(launcher["nonce"]), key)
    config.pluginmanager.register(collector, "loopcontract-collector")
    collector.referee = _register_referee(config, launcher)
    if launcher.get("count"):  # someone watches: the live count (display only)
        extra = collector.referee.extra if collector.referee is not None else set()
        writer = CountWriter(str(launcher["count"]), extra)
        config.pluginmanager.register(writer, "loopcontract-count")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("loopcontract-egress"):
        from . import egress

        egress.uninstall()
