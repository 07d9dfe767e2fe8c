"""The ``metric.*`` source: values the tests recorded with ``loop_metric``, aggregated."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.common import finite_number, required_name
from pytest_loopcontract.verifier.sensors.protocol import Observation, SensorContext, Unavailable

__all__ = ["recorded_metric"]


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


def recorded_metric(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    name = required_name(gate)
    aggregate = _AGGREGATES.get(gate.aggregate)
    if aggregate is None:
        known = ", ".join(_AGGREGATES)
        raise Unavailable("error", f"unknown aggregate {gate.aggregate!r} (known: {known})")
    matching = [metric for metric in ctx.recorded if metric.name == name]
    if not matching:
        raise Unavailable("missing", f"no test recorded a value for {name!r} with loop_metric")
    values = [
        finite_number(metric.value, f"value of {name!r} recorded by {metric.nodeid}")
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
