"""Metric sources for measured gates.

A measured gate compares one number with a threshold; this module finds that number. Every
source answers with an :class:`Observation` that says where the value came from, or why there
is none. A gate that passes on a value nobody measured is worse than no gate, so a missing
report, a broken sensor command or a diff without executable lines never turns into a number.

Decisions that shape the results:

* Coverage is analysed by coverage.py itself, in a child interpreter started with ``-I`` in
  ``workdir``. Settings that coverage resolves against the current directory (``omit =
  tests/*``, ``relative_files``, the search for ``.coveragerc``/``setup.cfg``/``tox.ini``/
  ``pyproject.toml``) then mean what they mean for ``coverage report`` run there; the child
  cannot import candidate code from the working directory; ``COVERAGE_*`` variables are
  dropped so the environment cannot swap the configuration; and coverage's process-global
  state in the verifier is left alone. The child writes a ``coverage json`` report, the same
  format a contract may name directly, so both routes share one parser.
* Percentages use coverage.py's display rule (:func:`coverage_percent_display`) with
  ``source.precision``, else the precision coverage's own configuration shows (when it sets a
  non-zero one), else 2 digits: coverage's default of 0 would round 79.6 up to a passing 80.
* Diff coverage counts only changed lines that coverage.py calls executable statements, and
  only in files it measured. Changed Python files it has no data for are listed in
  ``extra["unmeasured_changed_files"]`` (configure ``[run] source`` to have never-imported
  files reported as uncovered). No measurable line means ``not_measurable``, never 100.
* ``tests.count`` and ``duration.*`` use the tests that ran: outcomes ``passed``, ``failed``,
  ``error``, ``xfailed`` and ``xpassed``. Skipped, deselected and missing tests did not run.
* Sensor commands and the coverage child run without a shell, in their own session, with a
  deadline; on timeout the whole process group is killed. At most 1 MiB of stdout is read
  (more is an error) and only the tail of stderr is kept, so a runaway command cannot exhaust
  the verifier's memory.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.processes import Capture, kill_group, signal_group, spawn, start_pump
from pytest_loopcontract.verifier.results import RecordedMetric, TestRecord

__all__ = [
    "BUILTIN_SOURCES",
    "MetricSource",
    "Observation",
    "SensorContext",
    "added_lines_from_diff",
    "coverage_percent_display",
    "observe",
]

_STATUSES = frozenset({"ok", "missing", "not_measurable", "error"})
_RAN_OUTCOMES = frozenset({"passed", "failed", "error", "xfailed", "xpassed"})
_DEFAULT_PRECISION = 2
_DEFAULT_SENSOR_TIMEOUT = 60.0
_COVERAGE_TIMEOUT = 300.0
_MAX_STDOUT_BYTES = 1 << 20
_MAX_FILE_BYTES = 64 << 20
_STDERR_TAIL_BYTES = 4096
_DETAIL_TAIL_CHARS = 300
_PIPE_GRACE_SECONDS = 5.0
_PIPE_DRAIN_SECONDS = 0.5
_SQLITE_MAGIC = b"SQLite format 3\x00"

# Run by ``python -I -c`` in the work directory: argv[1] is the data file, argv[2] the JSON
# report to write. Exit code _NO_DATA_EXIT means coverage.py found nothing to report.
_NO_DATA_EXIT = 3
_COVERAGE_PROBE = f"""\
import sys
import coverage
from coverage.exceptions import NoDataError
try:
    cov = coverage.Coverage(data_file=sys.argv[1], config_file=True)
    cov.load()
    cov.json_report(outfile=sys.argv[2])
except NoDataError:
    sys.exit({_NO_DATA_EXIT})
"""


@dataclass(frozen=True)
class Observation:
    """What a source saw: a value only when ``status`` is ``"ok"``, and always the reason.

    The invariants are enforced here, for built-in and plugin sources alike, so no caller can
    receive a number attached to a failure or an "ok" without a finite number.
    """

    value: float | None
    status: str
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"unknown observation status {self.status!r}")
        if self.status == "ok":
            object.__setattr__(self, "value", _ok_value(self.value))
        elif self.value is not None:
            raise ValueError(f"an observation with status {self.status!r} carries no value")
        object.__setattr__(self, "detail", " ".join(self.detail.split()))


def _ok_value(value: object) -> float:
    """The float an "ok" observation carries; booleans and non-finite numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"an ok observation needs a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"an ok observation needs a finite number, not {number!r}")
    return number


@dataclass(frozen=True)
class SensorContext:
    """Everything a source may look at; sources read, never write."""

    workdir: Path
    tests: Sequence[TestRecord]
    recorded: Sequence[RecordedMetric]
    coverage_data: Path | None = None
    changed_lines: Mapping[str, frozenset[int]] | None = None
    env: Mapping[str, str] | None = None
    # Wraps a command that runs candidate code (a sensor) so that it runs confined, like the
    # tests; identity when there is no sandbox.
    confine: Callable[[list[str]], list[str]] | None = None


MetricSource = Callable[[MeasuredGate, SensorContext], Observation]


class _Unavailable(LoopContractError):
    """Ends a source early with a non-"ok" observation, from however deep the reason is found."""

    def __init__(self, status: str, detail: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.observation = Observation(None, status, detail, extra or {})


def observe(
    gate: MeasuredGate, ctx: SensorContext, sources: Mapping[str, MetricSource] | None = None
) -> Observation:
    """Measure ``gate.metric`` with the source registered for its prefix.

    ``sources`` defaults to :data:`BUILTIN_SOURCES`; plugins pass a registry extended with
    their own prefixes. A source that raises is reported as an ``error`` observation instead of
    an exception, because the verdict must still be written and must say which gate broke.
    """
    registry = BUILTIN_SOURCES if sources is None else sources
    prefix = gate.metric.partition(".")[0]
    source = registry.get(prefix)
    if source is None:
        known = ", ".join(sorted(registry))
        return Observation(
            None, "error", f"unknown metric {gate.metric!r} (known prefixes: {known})"
        )
    try:
        observation = source(gate, ctx)
    except _Unavailable as exc:
        return exc.observation
    except Exception as exc:
        return Observation(
            None, "error", f"sensor for {gate.metric!r} failed: {type(exc).__name__}: {exc}"
        )
    if not isinstance(observation, Observation):
        return Observation(
            None, "error", f"sensor for {gate.metric!r} returned {type(observation).__name__}"
        )
    return observation


# --- small shared helpers -------------------------------------------------------------------


def _metric_name(gate: MeasuredGate) -> str:
    """The part after the prefix: ``coverage.percent`` -> ``percent``."""
    return gate.metric.partition(".")[2]


def _required_name(gate: MeasuredGate) -> str:
    name = _metric_name(gate)
    if not name:
        raise _Unavailable("error", f"metric {gate.metric!r} needs a name after the dot")
    return name


def _dispatch(
    prefix: str, table: Mapping[str, MetricSource], gate: MeasuredGate, ctx: SensorContext
) -> Observation:
    """Route a prefix's metrics to their handlers, naming the valid ones on a typo."""
    handler = table.get(_metric_name(gate))
    if handler is None:
        known = ", ".join(f"{prefix}.{name}" for name in sorted(table))
        raise _Unavailable("error", f"unknown metric {gate.metric!r} (known: {known})")
    return handler(gate, ctx)


def _source_str(gate: MeasuredGate, key: str, default: str | None = None) -> str:
    value = gate.source.get(key, default)
    if not isinstance(value, str) or not value:
        raise _Unavailable("error", f"gate {gate.id!r}: source.{key} must be a non-empty string")
    return value


def _finite_number(value: Any, what: str) -> float:
    """A JSON number as a finite float; strings, booleans, NaN and infinities are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Unavailable("error", f"{what} is not a number: {_clip(repr(value))}")
    try:
        number = float(value)
    except OverflowError:
        raise _Unavailable("error", f"{what} is too large for a float") from None
    if not math.isfinite(number):
        raise _Unavailable("error", f"{what} is not finite: {number!r}")
    return number


def _clip(text: str) -> str:
    """The last few hundred characters of ``text``, on one line, for a detail message."""
    flat = " ".join(text.split())
    if len(flat) <= _DETAIL_TAIL_CHARS:
        return flat
    return "..." + flat[-_DETAIL_TAIL_CHARS:]


def _shown_path(path: Path, workdir: Path) -> str:
    """``path`` relative to the work directory when it lies inside it, for readable details."""
    return path.relative_to(workdir).as_posix() if path.is_relative_to(workdir) else str(path)


def _read_capped(path: Path, shown: str) -> bytes:
    """Read a file the run produced, refusing sizes that would exhaust the verifier's memory."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise _Unavailable("missing", f"{shown} not found") from None
    if len(data) > _MAX_FILE_BYTES:
        raise _Unavailable("error", f"{shown} is larger than {_MAX_FILE_BYTES} bytes")
    return data


def _json_document(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _Unavailable("error", f"{what} is not valid JSON: {_clip(str(exc))}") from None


# --- running commands with a deadline and an output cap -------------------------------------


@dataclass(frozen=True)
class _Finished:
    returncode: int
    stdout: bytes
    stderr_tail: bytes


def _finished_in_time(
    proc: subprocess.Popen[bytes], pumps: Sequence[threading.Thread], deadline: float
) -> bool:
    """Wait for the child and for its pipes to close; a grandchild holding them open counts."""
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    for pump in pumps:  # output written just before exit still needs a moment to drain
        pump.join(max(_PIPE_DRAIN_SECONDS, deadline - time.monotonic()))
    return not any(pump.is_alive() for pump in pumps)


def _run_capped(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    label: str,
) -> _Finished:
    """Run ``argv`` (no shell) within ``timeout`` seconds, reading at most 1 MiB of stdout."""
    try:
        proc = spawn(argv, cwd=cwd, env=env)
    except OSError as exc:
        raise _Unavailable("error", f"cannot start {label}: {exc}") from None
    stdout = Capture(
        _MAX_STDOUT_BYTES, 0, on_overflow=lambda: signal_group(proc.pid, signal.SIGKILL)
    )
    stderr = Capture(0, _STDERR_TAIL_BYTES)
    pumps = [start_pump(proc.stdout, stdout), start_pump(proc.stderr, stderr)]
    in_time = _finished_in_time(proc, pumps, time.monotonic() + timeout)
    if not in_time:
        kill_group(proc)
        for pump in pumps:
            pump.join(_PIPE_GRACE_SECONDS)
    if stdout.overflowed:
        raise _Unavailable("error", f"{label} printed more than {_MAX_STDOUT_BYTES} bytes")
    if not in_time:
        raise _Unavailable("error", f"{label} timed out after {timeout:g} s (killed)")
    return _Finished(proc.returncode, stdout.snapshot()[0], stderr.snapshot()[1])


def _exit_description(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return _clip(lines[-1]) if lines else "no error output"


# --- coverage --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FileLines:
    statements: frozenset[int]
    missing: frozenset[int]


@dataclass(frozen=True)
class _CoverageReport:
    """The parts of a ``coverage json`` report the gates need, keyed by repo-relative path."""

    origin: str
    percent: float
    statements: int
    branch: bool
    precision: int | None
    files: Mapping[str, _FileLines]


def _coverage_file(gate: MeasuredGate, ctx: SensorContext) -> Path:
    """The report or data file to read: the gate's, else the run's, else the usual names."""
    if "file" in gate.source:
        candidates = [ctx.workdir / _source_str(gate, "file")]
    elif ctx.coverage_data is not None:
        candidates = [ctx.workdir / ctx.coverage_data]
    else:
        candidates = [ctx.workdir / "coverage.json", ctx.workdir / ".coverage"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " or ".join(_shown_path(c, ctx.workdir) for c in candidates)
    raise _Unavailable("missing", f"no coverage data: {looked} not found")


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC


def _coverage_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The child's environment without ``COVERAGE_*``, which could replace the pinned rc."""
    base = os.environ if env is None else env
    return {key: value for key, value in base.items() if not key.startswith("COVERAGE_")}


def _json_report_from_data(data_file: Path, origin: str, ctx: SensorContext) -> bytes:
    """Have coverage.py turn a data file into a JSON report, as if run in ``workdir``.

    coverage.py reads a copy: opening a database without its schema would add the schema.
    """
    with tempfile.TemporaryDirectory(prefix="loopcontract-coverage-") as scratch:
        data_copy = Path(scratch) / "coverage.data"
        shutil.copyfile(data_file, data_copy)
        report = Path(scratch) / "coverage.json"
        done = _run_capped(
            [sys.executable, "-I", "-c", _COVERAGE_PROBE, str(data_copy), str(report)],
            cwd=ctx.workdir,
            env=_coverage_env(ctx.env),
            timeout=_COVERAGE_TIMEOUT,
            label="coverage.py",
        )
        if done.returncode == _NO_DATA_EXIT:
            raise _Unavailable("not_measurable", f"{origin} has no measured files to report")
        if done.returncode != 0:
            detail = _last_line(done.stderr_tail)
            raise _Unavailable("error", f"coverage.py could not report {origin}: {detail}")
        return _read_capped(report, f"coverage.py's JSON report of {origin}")


def _repo_relative(name: str, roots: Sequence[Path]) -> str:
    """Map a report's file name (relative, or absolute inside the scratch dir) to a repo path."""
    path = Path(name)
    if path.is_absolute():
        for root in roots:
            if path.is_relative_to(root):
                return path.relative_to(root).as_posix()
    return path.as_posix()


def _line_numbers(value: Any, what: str) -> frozenset[int]:
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in value
    ):
        raise _Unavailable("error", f"{what} is not a list of line numbers")
    return frozenset(value)


def _file_lines(entry: Any, what: str) -> _FileLines:
    if not isinstance(entry, dict):
        raise _Unavailable("error", f"{what} is not an object")
    executed = _line_numbers(entry.get("executed_lines"), f"{what}.executed_lines")
    missing = _line_numbers(entry.get("missing_lines"), f"{what}.missing_lines")
    return _FileLines(statements=executed | missing, missing=missing)


def _display_precision(display: Any) -> int | None:
    """The precision coverage's configuration used, read off ``percent_covered_display``."""
    if not isinstance(display, str):
        return None
    _, dot, decimals = display.partition(".")
    return len(decimals) if dot else 0


def _parse_coverage_json(raw: bytes, origin: str, ctx: SensorContext) -> _CoverageReport:
    document = _json_document(raw, origin)
    totals = document.get("totals") if isinstance(document, dict) else None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(totals, dict) or not isinstance(files, dict):
        raise _Unavailable("error", f"{origin} is not a coverage.py JSON report")
    statements = totals.get("num_statements")
    if isinstance(statements, bool) or not isinstance(statements, int):
        raise _Unavailable("error", f"{origin}: totals.num_statements is not an integer")
    meta = document.get("meta")
    roots = (ctx.workdir, ctx.workdir.resolve())
    return _CoverageReport(
        origin=origin,
        percent=_finite_number(totals.get("percent_covered"), f"{origin}: totals.percent_covered"),
        statements=statements,
        branch=isinstance(meta, dict) and meta.get("branch_coverage") is True,
        precision=_display_precision(totals.get("percent_covered_display")),
        files={
            _repo_relative(str(name), roots): _file_lines(entry, f"{origin}: files[{name!r}]")
            for name, entry in files.items()
        },
    )


def _coverage_report(gate: MeasuredGate, ctx: SensorContext) -> _CoverageReport:
    path = _coverage_file(gate, ctx)
    shown = _shown_path(path, ctx.workdir)
    if _is_sqlite(path):
        origin = f"coverage data {shown}"
        return _parse_coverage_json(_json_report_from_data(path, origin, ctx), origin, ctx)
    origin = f"coverage report {shown}"
    return _parse_coverage_json(_read_capped(path, shown), origin, ctx)


def _precision(gate: MeasuredGate, report: _CoverageReport) -> int:
    """``source.precision``, else the coverage config's non-zero precision, else 2."""
    explicit = gate.source.get("precision")
    if explicit is None:
        return report.precision or _DEFAULT_PRECISION
    if isinstance(explicit, bool) or not isinstance(explicit, int) or not 0 <= explicit <= 10:
        raise _Unavailable(
            "error", f"gate {gate.id!r}: source.precision must be an integer from 0 to 10"
        )
    return explicit


def _coverage_percent(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    report = _coverage_report(gate, ctx)
    if report.statements == 0:
        raise _Unavailable("not_measurable", f"{report.origin} measured no executable statements")
    precision = _precision(gate, report)
    value = coverage_percent_display(report.percent, precision)
    branches = ", with branches" if report.branch else ""
    return Observation(
        value,
        "ok",
        f"{value:.{precision}f}% coverage ({report.statements} statements{branches}) from "
        f"{report.origin}",
        {
            "percent_unrounded": report.percent,
            "precision": precision,
            "statements": report.statements,
            "branch": report.branch,
        },
    )


@dataclass(frozen=True)
class _DiffCoverage:
    covered: int
    uncovered: Mapping[str, list[int]]
    unmeasured_files: list[str]

    @property
    def measurable(self) -> int:
        return self.covered + sum(len(lines) for lines in self.uncovered.values())

    def extra(self) -> dict[str, Any]:
        return {
            "measurable_lines": self.measurable,
            "covered_lines": self.covered,
            "uncovered": dict(self.uncovered),
            "unmeasured_changed_files": list(self.unmeasured_files),
        }


def _intersect(changed: Mapping[str, frozenset[int]], report: _CoverageReport) -> _DiffCoverage:
    """Changed lines that are executable statements, split into run and not run."""
    covered = 0
    uncovered: dict[str, list[int]] = {}
    unmeasured: list[str] = []
    for path in sorted(changed):
        lines = report.files.get(path)
        if lines is None:
            if path.endswith(".py"):
                unmeasured.append(path)
            continue
        measurable = changed[path] & lines.statements
        missed = measurable & lines.missing
        covered += len(measurable) - len(missed)
        if missed:
            uncovered[path] = sorted(missed)
    return _DiffCoverage(covered, uncovered, unmeasured)


def _measured_diff(gate: MeasuredGate, ctx: SensorContext) -> tuple[_DiffCoverage, _CoverageReport]:
    """Diff coverage, or ``missing``/``not_measurable`` when it cannot honestly be computed."""
    if ctx.changed_lines is None:
        raise _Unavailable("missing", "no baseline: run 'loop-contract baseline'")
    report = _coverage_report(gate, ctx)
    diff = _intersect(ctx.changed_lines, report)
    if diff.measurable == 0:
        changed = sum(len(lines) for lines in ctx.changed_lines.values())
        raise _Unavailable(
            "not_measurable",
            f"none of the {changed} changed lines is an executable statement measured in "
            f"{report.origin}",
            diff.extra(),
        )
    return diff, report


def _coverage_diff_percent(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    diff, report = _measured_diff(gate, ctx)
    precision = _precision(gate, report)
    unrounded = diff.covered / diff.measurable * 100.0
    value = coverage_percent_display(unrounded, precision)
    return Observation(
        value,
        "ok",
        f"{value:.{precision}f}%: {diff.covered} of {diff.measurable} changed executable lines "
        f"ran ({report.origin})",
        {**diff.extra(), "percent_unrounded": unrounded, "precision": precision},
    )


def _coverage_uncovered_changed(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    diff, report = _measured_diff(gate, ctx)
    missed = diff.measurable - diff.covered
    return Observation(
        float(missed),
        "ok",
        f"{missed} of {diff.measurable} changed executable lines never ran ({report.origin})",
        diff.extra(),
    )


_COVERAGE_METRICS: Mapping[str, MetricSource] = {
    "percent": _coverage_percent,
    "diff_percent": _coverage_diff_percent,
    "uncovered_changed_lines": _coverage_uncovered_changed,
}


def _coverage_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return _dispatch("coverage", _COVERAGE_METRICS, gate, ctx)


# --- durations and counts --------------------------------------------------------------------


def _ran(tests: Sequence[TestRecord]) -> list[TestRecord]:
    return [test for test in tests if test.outcome in _RAN_OUTCOMES]


def _timed_tests(ctx: SensorContext) -> list[TestRecord]:
    """The tests that ran, each with a usable duration; none is ``missing``, not zero seconds."""
    ran = _ran(ctx.tests)
    if not ran:
        raise _Unavailable("missing", "no test ran, so there is no duration to measure")
    for test in ran:
        if not math.isfinite(test.duration) or test.duration < 0:
            raise _Unavailable("error", f"{test.nodeid} has an invalid duration {test.duration!r}")
    return ran


def _duration_total(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    ran = _timed_tests(ctx)
    total = math.fsum(test.duration for test in ran)
    return Observation(
        total, "ok", f"sum of the durations of {len(ran)} tests that ran", {"tests": len(ran)}
    )


def _duration_max_test(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    slowest = max(_timed_tests(ctx), key=lambda test: test.duration)
    return Observation(
        slowest.duration,
        "ok",
        f"slowest test: {slowest.nodeid}",
        {"test": slowest.nodeid},
    )


_DURATION_METRICS: Mapping[str, MetricSource] = {
    "total": _duration_total,
    "max_test": _duration_max_test,
}


def _duration_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return _dispatch("duration", _DURATION_METRICS, gate, ctx)


def _tests_count(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    ran = len(_ran(ctx.tests))
    outcomes = Counter(test.outcome for test in ctx.tests)
    return Observation(
        float(ran),
        "ok",
        f"{ran} tests ran (passed, failed, error, xfailed or xpassed) of {len(ctx.tests)} recorded",
        {"outcomes": dict(sorted(outcomes.items()))},
    )


def _tests_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return _dispatch("tests", {"count": _tests_count}, gate, ctx)


# --- values recorded by tests ----------------------------------------------------------------


def _last(values: Sequence[float]) -> float:
    return values[-1]


def _minimum(values: Sequence[float]) -> float:
    return min(values)


def _maximum(values: Sequence[float]) -> float:
    return max(values)


_AGGREGATES: Mapping[str, Callable[[Sequence[float]], float]] = {
    "last": _last,
    "min": _minimum,
    "max": _maximum,
    "mean": statistics.fmean,
}


def _recorded_metric(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    name = _required_name(gate)
    aggregate = _AGGREGATES.get(gate.aggregate)
    if aggregate is None:
        known = ", ".join(_AGGREGATES)
        raise _Unavailable("error", f"unknown aggregate {gate.aggregate!r} (known: {known})")
    matching = [metric for metric in ctx.recorded if metric.name == name]
    if not matching:
        raise _Unavailable("missing", f"no test recorded a value for {name!r} with loop_metric")
    values = [
        _finite_number(metric.value, f"value of {name!r} recorded by {metric.nodeid}")
        for metric in matching
    ]
    return Observation(
        aggregate(values),
        "ok",
        f"{gate.aggregate} of {len(values)} values recorded as {name!r}",
        {
            "aggregate": gate.aggregate,
            "count": len(values),
            "tests": sorted({metric.nodeid for metric in matching}),
        },
    )


# --- sensor commands -------------------------------------------------------------------------


def _command(gate: MeasuredGate) -> list[str]:
    argv = gate.source.get("command")
    if (
        not isinstance(argv, (list, tuple))
        or not argv
        or not all(isinstance(arg, str) for arg in argv)
    ):
        raise _Unavailable(
            "error", f"gate {gate.id!r}: source.command must be a non-empty list of strings"
        )
    return list(argv)


def _sensor_timeout(gate: MeasuredGate) -> float:
    value = gate.source.get("timeout", _DEFAULT_SENSOR_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise _Unavailable("error", f"gate {gate.id!r}: source.timeout must be a positive number")
    return float(value)


def _lookup(document: Any, dotted: str) -> Any:
    """Follow ``a.b.0.c`` through objects (by key) and arrays (by decimal index)."""
    node = document
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isascii() and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _Unavailable(
                "error", f"key {dotted!r} not found in the sensor output (no {part!r})"
            )
    return node


def _sensor_command(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    name = _required_name(gate)
    argv = _command(gate)
    key = _source_str(gate, "key", name)
    label = f"sensor command {shlex.join(argv)}"
    command = ctx.confine(list(argv)) if ctx.confine is not None else list(argv)
    done = _run_capped(
        command, cwd=ctx.workdir, env=ctx.env, timeout=_sensor_timeout(gate), label=label
    )
    if done.returncode != 0:
        tail = _clip(done.stderr_tail.decode("utf-8", "replace")) or "no stderr"
        raise _Unavailable("error", f"{label} {_exit_description(done.returncode)}: {tail}")
    document = _json_document(done.stdout, f"the output of {label}")
    value = _finite_number(_lookup(document, key), f"key {key!r} in the output of {label}")
    return Observation(
        value, "ok", f"key {key!r} printed by {label}", {"command": argv, "key": key}
    )


# --- pytest-benchmark ------------------------------------------------------------------------


def _benchmarks(document: Any, origin: str) -> list[dict[str, Any]]:
    entries = document.get("benchmarks") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise _Unavailable("error", f"{origin} is not a pytest-benchmark JSON file")
    return entries


def _select_benchmark(entries: list[dict[str, Any]], wanted: Any, origin: str) -> dict[str, Any]:
    """The benchmark named by ``source.name`` (name or fullname), or the only one there is."""
    if wanted is None:
        if len(entries) == 1:
            return entries[0]
        if not entries:
            raise _Unavailable("missing", f"{origin} holds no benchmarks")
        raise _Unavailable(
            "error", f"{origin} holds {len(entries)} benchmarks; set source.name to pick one"
        )
    matches = [e for e in entries if wanted in (e.get("name"), e.get("fullname"))]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        names = ", ".join(sorted(str(e.get("fullname", e.get("name"))) for e in entries))
        raise _Unavailable("missing", f"no benchmark {wanted!r} in {origin} (found: {names})")
    raise _Unavailable(
        "error", f"{len(matches)} benchmarks named {wanted!r} in {origin}; use the fullname"
    )


def _benchmark_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    stat = _required_name(gate)
    shown = _source_str(gate, "file")
    origin = f"benchmark file {shown}"
    document = _json_document(_read_capped(ctx.workdir / shown, origin), origin)
    bench = _select_benchmark(_benchmarks(document, origin), gate.source.get("name"), origin)
    label = str(bench.get("fullname", bench.get("name")))
    stats = bench.get("stats")
    if not isinstance(stats, dict) or stat not in stats:
        raise _Unavailable("error", f"benchmark {label} in {origin} has no stat {stat!r}")
    value = _finite_number(stats[stat], f"stat {stat!r} of benchmark {label}")
    return Observation(
        value, "ok", f"{stat} of benchmark {label} in {origin}", {"benchmark": label, "stat": stat}
    )


# --- registry --------------------------------------------------------------------------------


def _public(source: MetricSource) -> MetricSource:
    """Wrap a built-in so it honours the public source contract: return an Observation.

    Internally the built-ins bail out with :class:`_Unavailable`; third-party sources see the
    built-ins through the ``loopcontract_metric_sources`` hook and may call them directly.
    """

    def wrapped(gate: MeasuredGate, ctx: SensorContext) -> Observation:
        try:
            return source(gate, ctx)
        except _Unavailable as exc:
            return exc.observation

    wrapped.__name__ = source.__name__
    wrapped.__doc__ = source.__doc__
    return wrapped


BUILTIN_SOURCES: Mapping[str, MetricSource] = MappingProxyType(
    {
        "coverage": _public(_coverage_source),
        "duration": _public(_duration_source),
        "tests": _public(_tests_source),
        "metric": _public(_recorded_metric),
        "sensor": _public(_sensor_command),
        "benchmark": _public(_benchmark_source),
    }
)
"""Metric prefix -> source. Read-only: plugins extend a copy and pass it to :func:`observe`."""


# --- pure helpers ----------------------------------------------------------------------------


def coverage_percent_display(pc: float, precision: int) -> float:
    """``pc`` as coverage.py displays it with ``precision`` decimals, as a float.

    Rounding never produces 0 or 100 unless the value is exactly that, so a gate such as
    ``coverage.percent == 100`` cannot pass on 99.996%. The result is parsed back from the
    formatted text, so it equals what ``coverage report`` prints, digit for digit.
    """
    if precision < 0:
        raise ValueError(f"precision must not be negative, got {precision}")
    near0 = 1.0 / 10**precision
    if 0 < pc < near0:
        shown = near0
    elif 100.0 - near0 < pc < 100:
        shown = 100.0 - near0
    else:
        shown = round(pc, precision)
    return float(f"{shown:.{precision}f}")


_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def added_lines_from_diff(diff_text: str) -> dict[str, frozenset[int]]:
    """New-side numbers of added lines per file, from ``git diff -U0 --no-renames`` output.

    Only files with at least one added line appear: deleted files, binary files and pure
    deletions have no new line that tests could cover. Hunk bodies are consumed by their line
    counts, so an added line that itself starts with ``++ `` is never mistaken for a header.
    The diff must use git's default ``a/`` ``b/`` prefixes. Raises ``ValueError`` on a
    malformed hunk or quoted path.
    """
    added: dict[str, set[int]] = {}
    lines = iter(diff_text.split("\n"))
    path: str | None = None
    for line in lines:
        if line.startswith("diff "):
            path = None
        elif line.startswith("+++ "):
            path = _new_side_path(line[4:])
        elif line.startswith("@@ "):
            numbers = _hunk_added_lines(line, lines)
            if path is not None and numbers:
                added.setdefault(path, set()).update(numbers)
    return {name: frozenset(numbers) for name, numbers in added.items()}


def _new_side_path(spec: str) -> str | None:
    """The repo path on a ``+++`` line; ``None`` for ``/dev/null`` (a deleted file)."""
    spec = spec.rstrip("\r")
    if spec.endswith("\t"):  # git appends a tab to names that contain a space
        spec = spec[:-1]
    name = _unquote_c_style(spec) if spec.startswith('"') else spec
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith("b/") else name


def _unquote_c_style(quoted: str) -> str:
    """Undo git's quoting of unusual path names: ``"b/caf\\303\\251.py"`` -> ``b/café.py``."""
    if len(quoted) < 2 or not quoted.endswith('"'):
        raise ValueError(f"malformed quoted path: {quoted!r}")
    body = quoted[1:-1]
    out = bytearray()
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        escape = body[index + 1 : index + 4]
        if escape[:1] in _C_ESCAPES:
            out.append(_C_ESCAPES[escape[:1]])
            index += 2
        elif len(escape) == 3 and all(c in "01234567" for c in escape):
            out.append(int(escape, 8))
            index += 4
        else:
            raise ValueError(f"malformed escape in quoted path: {quoted!r}")
    return out.decode("utf-8", "surrogateescape")


def _hunk_added_lines(header: str, lines: Iterator[str]) -> list[int]:
    """Consume one hunk body from ``lines``; return the new-side numbers of its ``+`` lines."""
    match = _HUNK_HEADER.match(header)
    if match is None:
        raise ValueError(f"malformed hunk header: {header!r}")
    old_left = 1 if match[2] is None else int(match[2])
    new_line = int(match[3])
    new_left = 1 if match[4] is None else int(match[4])
    numbers: list[int] = []
    while old_left > 0 or new_left > 0:
        body = next(lines, None)
        if body is None:
            raise ValueError(f"diff ends inside the hunk {header!r}")
        tag = body[:1]
        if tag == "+":
            numbers.append(new_line)
            new_line += 1
            new_left -= 1
        elif tag == "-":
            old_left -= 1
        elif tag == " ":
            new_line += 1
            new_left -= 1
            old_left -= 1
        elif tag != "\\":  # "\ No newline at end of file" belongs to the line before it
            raise ValueError(f"unexpected line in the hunk {header!r}: {body!r}")
    return numbers
