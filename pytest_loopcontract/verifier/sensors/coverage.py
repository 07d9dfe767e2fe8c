"""The ``coverage.*`` source: total coverage, diff coverage and uncovered changed lines.

* Percentages use coverage.py's display rule (:func:`coverage_percent_display`) with
  ``source.precision``, else the precision coverage's own configuration shows (when it sets a
  non-zero one), else 2 digits: coverage's default of 0 would round 79.6 up to a passing 80.
* Diff coverage counts only changed lines that coverage.py calls executable statements, and
  only in files it measured. Changed Python files it has no data for are listed in
  ``extra["unmeasured_changed_files"]`` (configure ``[run] source`` to have never-imported
  files reported as uncovered). No measurable line means ``not_measurable``, never 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.common import dispatch
from pytest_loopcontract.verifier.sensors.coverage_report import (
    CoverageReport,
    load_coverage_report,
)
from pytest_loopcontract.verifier.sensors.protocol import (
    MetricSource,
    Observation,
    SensorContext,
    Unavailable,
)

__all__ = ["coverage_percent_display", "coverage_source", "missed_lines_text"]

_DEFAULT_PRECISION = 2


def _precision(gate: MeasuredGate, report: CoverageReport) -> int:
    """``source.precision``, else the coverage config's non-zero precision, else 2."""
    explicit = gate.source.get("precision")
    if explicit is None:
        return report.precision or _DEFAULT_PRECISION
    if isinstance(explicit, bool) or not isinstance(explicit, int) or not 0 <= explicit <= 10:
        raise Unavailable(
            "error", f"gate {gate.id!r}: source.precision must be an integer from 0 to 10"
        )
    return explicit


def _coverage_percent(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    report = load_coverage_report(gate, ctx)
    if report.statements == 0:
        raise Unavailable("not_measurable", f"{report.origin} measured no executable statements")
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
            "where": _not_run(self),
        }


def _ranges(lines: list[int]) -> str:
    """``[3, 4, 5, 9]`` as ``3-5, 9``."""
    spans: list[list[int]] = []
    for line in lines:
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def missed_lines_text(uncovered: Mapping[str, list[int]], files: int = 3) -> str:
    """Where the changed lines that never ran are, for the gate's message: the first
    ``files`` files with their line ranges, and how many more files there are."""
    paths = sorted(uncovered)
    shown = "; ".join(f"{path}:{_ranges(uncovered[path])}" for path in paths[:files])
    more = len(paths) - files
    return shown + (f"; and {more} more file{'s' if more > 1 else ''}" if more > 0 else "")


def _not_run(diff: _DiffCoverage) -> str:
    return f"not run: {missed_lines_text(diff.uncovered)}" if diff.uncovered else ""


def _intersect(changed: Mapping[str, frozenset[int]], report: CoverageReport) -> _DiffCoverage:
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


def _measured_diff(gate: MeasuredGate, ctx: SensorContext) -> tuple[_DiffCoverage, CoverageReport]:
    """Diff coverage, or ``missing``/``not_measurable`` when it cannot honestly be computed."""
    if ctx.changed_lines is None:
        raise Unavailable("missing", "no baseline: run 'loop-contract baseline'")
    report = load_coverage_report(gate, ctx)
    diff = _intersect(ctx.changed_lines, report)
    if diff.measurable == 0:
        changed = sum(len(lines) for lines in ctx.changed_lines.values())
        raise Unavailable(
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


def coverage_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return dispatch("coverage", _COVERAGE_METRICS, gate, ctx)


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
