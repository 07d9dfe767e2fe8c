"""The ``duration.*`` and ``tests.count`` sources, read off the tests that ran.

A test ran when its outcome is ``passed``, ``failed``, ``error``, ``xfailed`` or ``xpassed``.
Skipped, deselected and missing tests did not run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.plural import plural
from pytest_loopcontract.verifier.results import TestRecord
from pytest_loopcontract.verifier.sensors.common import dispatch
from pytest_loopcontract.verifier.sensors.protocol import (
    MetricSource,
    Observation,
    SensorContext,
    Unavailable,
)

__all__ = ["duration_source", "tests_source"]

_RAN_OUTCOMES = frozenset({"passed", "failed", "error", "xfailed", "xpassed"})


def _ran(tests: Sequence[TestRecord]) -> list[TestRecord]:
    return [test for test in tests if test.outcome in _RAN_OUTCOMES]


def _timed_tests(ctx: SensorContext) -> list[TestRecord]:
    """The tests that ran, each with a usable duration; none is ``missing``, not zero seconds."""
    ran = _ran(ctx.tests)
    if not ran:
        raise Unavailable("missing", "no test ran, so there is no duration to measure")
    for test in ran:
        if not math.isfinite(test.duration) or test.duration < 0:
            raise Unavailable("error", f"{test.nodeid} has an invalid duration {test.duration!r}")
    return ran


def _duration_total(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    ran = _timed_tests(ctx)
    total = math.fsum(test.duration for test in ran)
    return Observation(
        total,
        "ok",
        f"sum of the durations of {plural(len(ran), 'test')} that ran",
        {"tests": len(ran)},
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


def duration_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return dispatch("duration", _DURATION_METRICS, gate, ctx)


def _tests_count(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    ran = len(_ran(ctx.tests))
    outcomes = Counter(test.outcome for test in ctx.tests)
    return Observation(
        float(ran),
        "ok",
        f"{plural(ran, 'test')} ran (passed, failed, error, xfailed or xpassed) of "
        f"{len(ctx.tests)} recorded",
        {"outcomes": dict(sorted(outcomes.items()))},
    )


def tests_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    return dispatch("tests", {"count": _tests_count}, gate, ctx)
