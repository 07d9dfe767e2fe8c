"""Per-test outcomes, markers, metrics and what the run looked like, gathered inside pytest.

This module runs inside the process under test, in the project's own environment, where
pytest-loopcontract need not be installed: the launcher copies this package next to the run
and loads it with ``-p``. So it imports only the standard library and pytest, and it produces
plain JSON-shaped data; the launcher (or the in-process plugin) turns that into typed results.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .names import POLICY_PROPERTY, REBOUND_PROPERTY, REFEREE_PROPERTY
from .watch import WATCH_PROPERTY

__all__ = [
    "ResultCollector",
    "loaded_plugins",
    "loop_metric",
    "metric_recorder",
    "module_origins",
    "outside_imports",
    "tag_dod_items",
]

METRIC_PREFIX = "loop_metric:"
DOD_PROPERTY = "loop_dod"
EGRESS_PROPERTY = "loop_egress"
KIND_PROPERTY = "loop_kind"
MESSAGE_LIMIT = 2000


@pytest.fixture
def loop_metric(request: pytest.FixtureRequest) -> Callable[[str, float], None]:
    """Record a named measurement (for a measured gate ``metric.<name>``).

    Stored on the test's user_properties, so it survives pytest-xdist and reaches the report.
    """
    return metric_recorder(request)


def metric_recorder(request: pytest.FixtureRequest) -> Callable[[str, float], None]:
    """The ``loop_metric`` fixture's value; the installed plugin's fixture returns it too."""

    def record(name: str, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"loop_metric({name!r}, ...) needs a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"loop_metric({name!r}, ...) needs a finite number, got {value!r}")
        request.node.user_properties.append((METRIC_PREFIX + str(name), number))

    return record


def _doctest_digest(item: Any) -> str:
    """SHA-256 of a doctest's examples (source and expected output): the doctest is a test
    living inside the code, so its text is pinned by digest rather than by file."""
    dtest = getattr(item, "dtest", None)
    examples = [[ex.source, ex.want] for ex in getattr(dtest, "examples", None) or ()]
    return hashlib.sha256(json.dumps(examples).encode("utf-8", "surrogatepass")).hexdigest()


def tag_dod_items(items: Iterable[pytest.Item]) -> None:
    """Copy ``dod`` marker ids (and whether an item is a doctest) into user_properties, so
    they reach the controller's reports, from xdist workers too."""
    from _pytest.doctest import DoctestItem

    inherited: dict[int, list[str]] = {}  # a parent's id: the dod ids on it and above it
    for item in items:
        if isinstance(item, DoctestItem):
            item.user_properties.append((KIND_PROPERTY, "doctest:" + _doctest_digest(item)))
        ids = _dod_ids(item.own_markers)
        parent = item.parent
        if parent is not None:
            above = inherited.get(id(parent))
            if above is None:
                above = inherited[id(parent)] = _dod_ids(parent.iter_markers("dod"))
            ids += above
        item.user_properties.extend((DOD_PROPERTY, item_id) for item_id in ids)


def _dod_ids(marks: Iterable[Any]) -> list[str]:
    """The item ids of the ``dod`` marks among ``marks``, in their order. The marks above an
    item, read once per class or module rather than once per test (``iter_markers`` walks
    the whole chain of parents: half of this hook's time on 2,000 tests), come in the order
    ``item.iter_markers`` gives, nearest first."""
    return [str(i) for m in marks if getattr(m, "name", None) == "dod" for i in m.args]


class WorkerMarks:
    """On an xdist worker: only tag the items; outcomes travel to the controller."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        tag_dod_items(items)


class ResultCollector:
    """Collects per-test outcomes on the controller; :meth:`results` gives them as JSON data."""

    def __init__(self, config: pytest.Config, nonce: str | None = None) -> None:
        self.config = config
        # os.urandom is what ``secrets.token_hex`` reads, without loading ``secrets``/``hmac``
        self.nonce = nonce or os.urandom(16).hex()
        # Every test report, in the order they came: turned into one outcome per test only
        # at the end (:meth:`test_records`). The hook runs three times a test, so it only keeps
        # the report (pytest's terminal reporter holds each one anyway: no memory is added).
        self.reports: list[pytest.TestReport] = []
        self.doctests: dict[str, str] = {}
        self.metrics: list[dict[str, Any]] = []
        self.marks: dict[str, list[str]] = {}
        self.collect_errors: list[dict[str, str]] = []
        self.deselected: list[str] = []
        self.egress: list[dict[str, Any]] = []
        self.patches: list[dict[str, str]] = []
        self.collected: list[str] = []
        self.referee_items: list[list[str]] = []
        self.referee_rebound: list[list[str]] = []
        self.policy_uses: list[dict[str, Any]] = []
        self.started = time.monotonic()

    # -- collection -----------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        tag_dod_items(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.nodeid for item in session.items]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(item.nodeid for item in items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(
                {"nodeid": report.nodeid, "message": _short(report.longreprtext)}
            )

    # -- outcomes -------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)

    def test_records(self) -> list[dict[str, Any]]:
        """One outcome record per test, in first-report order, from its last round of phase
        reports (a rerun's earlier rounds are replaced); the reports are let go of here."""
        phases: dict[str, dict[str, pytest.TestReport]] = {}
        subfailures: dict[str, list[pytest.TestReport]] = {}
        for report in self.reports:
            if type(report) is not pytest.TestReport and _is_subtest(report):
                # unittest subTest / the subtests fixture: the parent's own call report can say
                # "passed" while a subtest failed, so failures are kept apart and folded in.
                if report.failed:
                    subfailures.setdefault(report.nodeid, []).append(report)
                continue
            nodeid, when = report.nodeid, report.when
            if when == "setup":  # a test's first round, or a rerun's: an earlier one is dropped
                phases[nodeid] = {"setup": report}  # (a key set again keeps its first place)
                continue
            rounds = phases.get(nodeid)
            if rounds is None:
                rounds = phases[nodeid] = {}
            rounds[when] = report
            if when == "teardown" and report.user_properties:
                self._harvest_properties(report)
        self.reports = []
        return [_combine(nodeid, p, subfailures.get(nodeid, ())) for nodeid, p in phases.items()]

    def _harvest_properties(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == DOD_PROPERTY:
                ids = self.marks.setdefault(str(value), [])
                if report.nodeid not in ids:
                    ids.append(report.nodeid)
            elif key == KIND_PROPERTY and str(value).startswith("doctest:"):
                self.doctests[report.nodeid] = str(value)[len("doctest:") :]
            elif key == REFEREE_PROPERTY and isinstance(value, list):
                self.referee_items.append([str(v) for v in value])
            elif key == REBOUND_PROPERTY and isinstance(value, list):
                self.referee_rebound.append([str(v) for v in value])
            elif key == POLICY_PROPERTY and isinstance(value, dict):
                self.policy_uses.append(value)
            elif key == WATCH_PROPERTY and isinstance(value, dict):
                self.patches.append({str(k): str(v) for k, v in value.items()})
            elif key == EGRESS_PROPERTY and isinstance(value, dict):
                self.egress.append({**value, "test": value.get("test") or report.nodeid})
            elif (
                isinstance(key, str)
                and key.startswith(METRIC_PREFIX)
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
            ):
                name = key[len(METRIC_PREFIX) :]
                self.metrics.append({"nodeid": report.nodeid, "name": name, "value": float(value)})

    # -- the end ---------------------------------------------------------------------------
    def results(
        self,
        session: pytest.Session,
        exitstatus: int,
        egress_left: Sequence[dict[str, Any]] = (),
        *,
        origins: bool = True,
    ) -> dict[str, Any]:
        """Everything the run produced, in the raw-results shape (``RunResults.to_json``).

        ``origins=False`` leaves ``module_origins`` empty: only the launcher's shadow check
        and the baseline read them, and finding them costs 4 to 7 ms on a thousand modules."""
        root = Path(self.config.rootpath)
        return {
            "nonce": self.nonce,
            "tests": self.test_records(),
            "metrics": list(self.metrics),
            "collect_errors": list(self.collect_errors),
            "deselected": list(self.deselected),
            "collected": list(self.collected),
            "plugins": loaded_plugins(self.config),
            "dod_marks": self.marks,
            "egress": [*self.egress, *egress_left],
            "doctests": dict(sorted(self.doctests.items())),
            "outside_imports": outside_imports(root),
            "module_origins": module_origins(root) if origins else {},
            "runtime_patches": list(self.patches),
            "pytest_exitstatus": int(exitstatus),
            "testsfailed": int(session.testsfailed),
            "testscollected": int(session.testscollected),
            "duration": time.monotonic() - self.started,
        }


def write_results(
    path: str, data: dict[str, Any], wrap: Callable[[bytes], bytes] | None = None
) -> None:
    """Write-then-rename; ASCII JSON, so lone surrogates in node ids travel as escapes;
    ``wrap`` (the launcher's signature) is applied to the bytes.

    No fsync: the launcher reads the file after this process has ended, from the same page
    cache, and a machine crash ends the verification anyway."""
    target = Path(path)
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    body = json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    with tmp.open("wb") as fh:
        fh.write(wrap(body) if wrap is not None else body)
    os.replace(tmp, target)


def _is_subtest(report: pytest.TestReport) -> bool:
    return type(report).__name__ in ("SubtestReport", "SubTestReport")


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


def _combine(
    nodeid: str,
    phases: dict[str, pytest.TestReport],
    subfailures: Sequence[pytest.TestReport] = (),
) -> dict[str, Any]:
    """One outcome per test from its setup, call and teardown reports.

    A setup failure is an error; a teardown failure turns a pass into an error; otherwise the
    call phase decides, except that a failed subtest fails a test whose own call passed. A
    test with no call report (skipped in setup) keeps the setup outcome.
    """
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    if (
        setup is not None
        and call is not None
        and teardown is not None
        and setup.outcome == call.outcome == teardown.outcome == "passed"
        and not subfailures
        and not hasattr(call, "wasxfail")
    ):  # most tests of any run: a plain pass, said without the checks below (half the time)
        return {
            "nodeid": nodeid,
            "outcome": "passed",
            "duration": setup.duration + call.duration + teardown.duration,
            "when": "call",
            "message": "",
        }
    duration = sum(r.duration for r in phases.values())
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
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "duration": duration,
        "when": deciding.when or "call",
        "message": message,
    }


def _short(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return "..." + text[-limit:]


def _root_aliases(root: Path) -> list[str]:
    """The run's root and the places the sandbox shows the same tree (the repository's own
    path, where an editable install points)."""
    aliases = [str(root.resolve())]
    extra = os.environ.get("LOOP_CONTRACT_ROOT_ALIASES", "")
    aliases += [os.path.normpath(p) for p in extra.split(os.pathsep) if p]
    return aliases


def _inside(path: str, roots: Sequence[str]) -> str | None:
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return root
    return None


class _RealPaths:
    """``os.path.realpath`` of many module files, each folder resolved once: a file that is
    no symlink itself is its real folder plus its name (one ``lstat`` instead of one per path
    component, for the thousand modules a run imports).

    Strings throughout, never ``Path``: pathlib interns every part it parses, and the parts of
    a run's module paths grew CPython's table of interned strings by about 1 MiB."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def __call__(self, file: str) -> str:
        folder, name = os.path.split(file)
        real = self.folders.get(folder)
        if real is None:
            real = self.folders[folder] = os.path.realpath(folder)
        path = os.path.join(real, name)
        return os.path.realpath(path) if os.path.islink(path) else path


def outside_imports(root: Path) -> list[dict[str, str]]:
    """Top-level modules the run imported from outside ``root`` although ``root`` has code of
    that name: the tests exercised an installed copy, not the tree being verified."""
    found = []
    roots = _root_aliases(root)
    real = _RealPaths()
    local_code = _LocalCode(str(root))
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not file:
            continue
        local = local_code(name)
        if local is None or _inside(real(str(file)), roots) is not None:
            continue
        found.append({"module": name, "imported": str(file), "local": local})
    return sorted(found, key=lambda e: e["module"])


class _LocalCode:
    """Where ``root`` has code named like a module (relative), if it has: ``name``,
    ``src/name`` or ``name.py``. The two folders are listed once, rather than three ``stat``
    calls for each of the hundreds of top-level modules a run imports."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.top = _entries(root)
        self.src = _entries(os.path.join(root, "src"))

    def __call__(self, name: str) -> str | None:
        for rel, listed in (
            (name, name in self.top),
            (os.path.join("src", name), name in self.src),
            (f"{name}.py", f"{name}.py" in self.top),
        ):
            if listed and os.path.exists(os.path.join(self.root, rel)):
                return rel
        return None


def _entries(folder: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def module_origins(root: Path) -> dict[str, str]:
    """Where each of the project's own modules was imported from, relative to the root.

    The baseline records this; a candidate run that imports one of them from another file
    (a copy placed where the tests look first) is shadowing the code under test.
    """
    roots = _root_aliases(root)
    real = _RealPaths()
    origins: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or name == "__main__":
            continue
        path = real(file)
        base = _inside(path, roots)
        if base is None:
            continue
        rel = os.path.relpath(path, base)
        if "__pycache__" not in rel.split(os.sep):
            origins[name] = rel.replace(os.sep, "/")
    return dict(sorted(origins.items()))


def loaded_plugins(config: pytest.Config) -> list[str]:
    """Names of third-party plugins in this run: entry points and non-builtin modules.

    The launcher compares this with the allow-list recorded at baseline; conftest files,
    pytest's own modules and the verifier's are not plugins in that sense.
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
        if module == "pytest" or module.startswith(_OWN_PREFIXES):
            continue
        names.add(name)
    return sorted(names)


_OWN_PREFIXES = ("_pytest.", "pytest_loopcontract", "_loopcontract_inner")
