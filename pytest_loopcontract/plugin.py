"""pytest hooks only: options, the ``dod`` marker, the ``loop_metric`` fixture, result collection.

Two modes. ``--loop-contract`` computes the verdict here, in the process under test (trust
``in-process``: quick and local, but candidate code runs beside it). The launcher instead passes
``--loop-contract-raw`` and computes the verdict itself from what this plugin records.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .contract import Contract
from .results import RecordedMetric, RunResults, TestRecord

__all__ = ["ResultCollector"]

METRIC_PREFIX = "loop_metric:"
DOD_PROPERTY = "loop_dod"
EGRESS_PROPERTY = "loop_egress"
KIND_PROPERTY = "loop_kind"
DEFAULT_VERDICT = ".loop-contract/verdict.json"
_CONTRACT_DEFAULT = "loopcontract.yml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loopcontract", "loop contract (external verifier)")
    group.addoption(
        "--loop-contract",
        action="store",
        nargs="?",
        const=_CONTRACT_DEFAULT,
        default=None,
        metavar="PATH",
        dest="loop_contract",
        help=f"check the run against a loop contract (default path: {_CONTRACT_DEFAULT})",
    )
    group.addoption(
        "--loop-contract-verdict",
        action="store",
        default=None,
        metavar="PATH",
        dest="loop_contract_verdict",
        help=f"where to write the verdict JSON (default: {DEFAULT_VERDICT})",
    )
    group.addoption(
        "--loop-contract-raw",
        action="store",
        default=None,
        metavar="PATH",
        dest="loop_contract_raw",
        help="(launcher) write raw results here instead of a verdict",
    )
    group.addoption(
        "--loop-contract-nonce",
        action="store",
        default=None,
        dest="loop_contract_nonce",
        help="(launcher) nonce to echo in the raw results",
    )
    group.addoption(
        "--loop-contract-egress",
        action="store",
        default=None,
        dest="loop_contract_egress",
        help="(launcher) JSON list of hosts the tests may connect to; others are blocked",
    )
    parser.addini("loop_contract", "path of the loop contract; enables the plugin", default="")
    parser.addini("loop_contract_verdict", "where to write the verdict JSON", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "dod(item_id): ties this test to a Definition-of-Done item of the contract"
    )
    raw = config.getoption("loop_contract_raw")
    contract = config.getoption("loop_contract") or config.getini("loop_contract")
    if not raw and not contract:
        return
    loaded = None
    if not raw:
        from .contract import ContractError
        from .inprocess import load_for_session

        try:
            loaded = load_for_session(config, str(contract))
        except ContractError as exc:
            pytest.exit(f"loop-contract: contract invalid: {exc}", returncode=26)
    allow = _egress_allow(config, loaded)
    if allow is not None:
        from . import egress

        config.pluginmanager.register(_EgressReporter(egress.install(allow)), "loopcontract-egress")
    if hasattr(config, "workerinput"):
        # xdist worker: outcomes travel to the controller through the report stream.
        config.pluginmanager.register(_WorkerMarks(), "loopcontract-worker")
        return
    collector = ResultCollector(config, raw_path=raw, contract=loaded)
    config.pluginmanager.register(collector, "loopcontract-collector")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("loopcontract-egress"):
        from . import egress

        egress.uninstall()


def _egress_allow(config: pytest.Config, contract: Contract | None) -> list[str] | None:
    option = config.getoption("loop_contract_egress")
    if option:
        import json

        hosts = json.loads(option)
        if not isinstance(hosts, list):
            raise pytest.UsageError("--loop-contract-egress takes a JSON list of host names")
        return [str(h) for h in hosts]
    if contract is not None and contract.egress_allow is not None:
        return list(contract.egress_allow)
    return None


class _EgressReporter:
    """Moves the attempts seen during each test phase onto the test's user_properties, so
    they reach the controller's reports even from an xdist worker."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Any:
        for attempt in self.policy.take_attempts():
            item.user_properties.append((EGRESS_PROPERTY, attempt))
        return (yield)


class _WorkerMarks:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        _tag_dod_items(items)


def _doctest_digest(item: Any) -> str:
    """SHA-256 of a doctest's examples (source and expected output): the doctest is a test
    living inside the code, so its text is pinned by digest rather than by file."""
    import hashlib
    import json

    dtest = getattr(item, "dtest", None)
    examples = [[ex.source, ex.want] for ex in getattr(dtest, "examples", None) or ()]
    return hashlib.sha256(json.dumps(examples).encode("utf-8")).hexdigest()


def _tag_dod_items(items: list[pytest.Item]) -> None:
    """Copy ``dod`` marker ids (and whether an item is a doctest) into user_properties, so
    they reach the controller's reports, from xdist workers too."""
    from _pytest.doctest import DoctestItem

    for item in items:
        if isinstance(item, DoctestItem):
            item.user_properties.append((KIND_PROPERTY, "doctest:" + _doctest_digest(item)))
        for mark in item.iter_markers("dod"):
            for item_id in mark.args:
                item.user_properties.append((DOD_PROPERTY, str(item_id)))


@pytest.fixture
def loop_metric(request: pytest.FixtureRequest) -> Callable[[str, float], None]:
    """Record a named measurement (for a measured gate ``metric.<name>``).

    Stored on the test's user_properties, so it survives pytest-xdist and reaches the report.
    """

    def record(name: str, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"loop_metric({name!r}, ...) needs a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"loop_metric({name!r}, ...) needs a finite number, got {value!r}")
        request.node.user_properties.append((METRIC_PREFIX + str(name), number))

    return record


def _outcome(report: pytest.TestReport) -> str:
    was_xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if was_xfail else "passed"
        if report.skipped:
            return "xfailed" if was_xfail else "skipped"
        return "failed"
    if report.failed:
        return "error"
    if report.skipped:
        return "xfailed" if was_xfail else "skipped"
    return "passed"


class ResultCollector:
    """Collects per-test outcomes on the controller and writes the verdict or raw results."""

    def __init__(self, config: pytest.Config, *, raw_path: str | None, contract: Contract | None):
        self.config = config
        self.raw_path = raw_path
        self.contract = contract
        self.nonce = config.getoption("loop_contract_nonce") or secrets.token_hex(16)
        self.phases: dict[str, dict[str, pytest.TestReport]] = {}
        self.subfailures: dict[str, list[pytest.TestReport]] = {}
        self.doctests: dict[str, str] = {}
        self.metrics: list[RecordedMetric] = []
        self.marks: dict[str, list[str]] = {}
        self.collect_errors: list[dict[str, str]] = []
        self.deselected: list[str] = []
        self.egress: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.started_at = ""
        self.verdict: dict[str, Any] | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from .evaluate import utc_now

        self.started_at = utc_now()
        if self.contract is not None:
            self._write_provisional()

    def _write_provisional(self) -> None:
        """Leave an ``error`` verdict on disk until the real one replaces it, so a run that
        dies half-way (os._exit, a kill) never leaves an older ``pass`` looking current."""
        from .inprocess import incomplete_verdict
        from .verdict import write_json_atomic

        assert self.contract is not None
        write_json_atomic(
            self.verdict_path(),
            incomplete_verdict(self.config, self.contract, self.nonce, self.started_at),
        )

    # -- collection -----------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        _tag_dod_items(items)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(item.nodeid for item in items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(
                {"nodeid": report.nodeid, "message": _short(report.longreprtext)}
            )

    # -- outcomes -------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_subtest(report):
            # unittest subTest / the subtests fixture: the parent's own call report can say
            # "passed" while a subtest failed, so failures are kept apart and folded in later.
            if report.failed:
                self.subfailures.setdefault(report.nodeid, []).append(report)
            return
        phases = self.phases.setdefault(report.nodeid, {})
        phases[report.when] = report
        if report.when == "teardown":
            self._harvest_properties(report)

    def _final_records(self) -> list[TestRecord]:
        return [
            _combine(nodeid, phases, self.subfailures.get(nodeid, ()))
            for nodeid, phases in self.phases.items()
        ]

    def _harvest_properties(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == DOD_PROPERTY:
                ids = self.marks.setdefault(str(value), [])
                if report.nodeid not in ids:
                    ids.append(report.nodeid)
            elif key == KIND_PROPERTY and str(value).startswith("doctest:"):
                self.doctests[report.nodeid] = str(value)[len("doctest:") :]
            elif key == EGRESS_PROPERTY and isinstance(value, dict):
                self.egress.append({**value, "test": value.get("test") or report.nodeid})
            elif isinstance(key, str) and key.startswith(METRIC_PREFIX):
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                number = float(value)
                self.metrics.append(
                    RecordedMetric(report.nodeid, key[len(METRIC_PREFIX) :], number)
                )

    # -- the end ---------------------------------------------------------------------------
    def results(self, session: pytest.Session, exitstatus: int) -> RunResults:
        return RunResults(
            nonce=self.nonce,
            tests=self._final_records(),
            metrics=list(self.metrics),
            collect_errors=list(self.collect_errors),
            deselected=list(self.deselected),
            plugins=loaded_plugins(self.config),
            dod_marks=self.marks,
            egress=self.egress + self._leftover_egress(),
            doctests=dict(sorted(self.doctests.items())),
            outside_imports=outside_imports(Path(self.config.rootpath)),
            pytest_exitstatus=int(exitstatus),
            testsfailed=int(session.testsfailed),
            testscollected=int(session.testscollected),
            duration=time.monotonic() - self.started,
        )

    def _leftover_egress(self) -> list[dict[str, Any]]:
        """Attempts made outside any test (imports, collection) in this process."""
        reporter = self.config.pluginmanager.get_plugin("loopcontract-egress")
        return reporter.policy.take_attempts() if reporter is not None else []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from .verdict import write_json_atomic

        results = self.results(session, exitstatus)
        if self.raw_path:
            write_json_atomic(self.raw_path, results.to_json())
            return
        from .inprocess import verdict_in_process

        assert self.contract is not None
        self.verdict = verdict_in_process(
            self.config, self.contract, results, self.started_at, self.started
        )
        write_json_atomic(self.verdict_path(), self.verdict)
        session.exitstatus = int(self.verdict["exit_code"])

    def verdict_path(self) -> Path:
        configured = self.config.getoption("loop_contract_verdict") or self.config.getini(
            "loop_contract_verdict"
        )
        path = Path(configured or DEFAULT_VERDICT)
        if not path.is_absolute():
            path = Path(self.config.rootpath) / path
        return path

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        from .verdict import render_checklist

        terminalreporter.section("loop contract")
        for line in render_checklist(self.verdict):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"  verdict written to {self.verdict_path()}")


def _is_subtest(report: pytest.TestReport) -> bool:
    return type(report).__name__ in ("SubtestReport", "SubTestReport")


def _combine(
    nodeid: str,
    phases: dict[str, pytest.TestReport],
    subfailures: Sequence[pytest.TestReport] = (),
) -> TestRecord:
    """One outcome per test from its setup, call and teardown reports.

    A setup failure is an error; a teardown failure turns a pass into an error; otherwise the
    call phase decides, except that a failed subtest fails a test whose own call passed. A
    test with no call report (skipped in setup) keeps the setup outcome.
    """
    duration = sum(r.duration for r in phases.values())
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    deciding = call
    if setup is not None and not setup.passed:
        deciding = setup
    elif call is None:
        deciding = teardown or setup
    assert deciding is not None
    outcome = _outcome(deciding)
    if teardown is not None and teardown.failed and outcome in ("passed", "xpassed"):
        deciding, outcome = teardown, "error"
    message = "" if outcome == "passed" else _short(deciding.longreprtext)
    if subfailures and outcome in ("passed", "xpassed"):
        outcome = "failed"
        message = _short(
            f"{len(subfailures)} subtest(s) failed:\n"
            + "\n".join(r.longreprtext for r in subfailures[:3])
        )
    return TestRecord(nodeid, outcome, duration, deciding.when or "call", message)


def _short(text: str, limit: int = 2000) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return "..." + text[-limit:]


def outside_imports(root: Path) -> list[dict[str, str]]:
    """Top-level modules the run imported from outside ``root`` although ``root`` has code of
    that name: the tests exercised an installed copy, not the checkout being verified."""
    import sys

    found = []
    resolved_root = root.resolve()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not file:
            continue
        local = next(
            (c for c in (root / name, root / "src" / name, root / f"{name}.py") if c.exists()),
            None,
        )
        if local is None:
            continue
        path = Path(file).resolve()
        if path == resolved_root or resolved_root in path.parents:
            continue
        found.append({"module": name, "imported": str(path), "local": str(local.relative_to(root))})
    return sorted(found, key=lambda e: e["module"])


def loaded_plugins(config: pytest.Config) -> list[str]:
    """Names of third-party plugins in this run: entry points and non-builtin modules.

    The launcher compares this with the allow-list recorded at baseline; conftest files and
    pytest's own modules are not plugins in that sense.
    """
    names: set[str] = set()
    pm = config.pluginmanager
    for plugin, dist in pm.list_plugin_distinfo():
        name = pm.get_name(plugin)
        if name and dist.project_name != "pytest-loopcontract":
            names.add(name)
    for name, plugin in pm.list_name_plugin():
        module = getattr(plugin, "__name__", None)
        file = str(getattr(plugin, "__file__", None) or "")
        if not isinstance(module, str) or name != module or file.endswith("conftest.py"):
            continue
        if module.startswith(("_pytest.", "pytest_loopcontract")) or module == "pytest":
            continue
        names.add(name)
    return sorted(names)
