"""The built-in sources by metric prefix, and :func:`observe`, which picks one for a gate.

A source that raises is reported as an ``error`` observation instead of an exception, because
the verdict must still be written and must say which gate broke.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pytest_loopcontract import hooks, hookspecs
from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.benchmark import benchmark_source
from pytest_loopcontract.verifier.sensors.command import sensor_command
from pytest_loopcontract.verifier.sensors.coverage import coverage_source
from pytest_loopcontract.verifier.sensors.durations import duration_source, tests_source
from pytest_loopcontract.verifier.sensors.protocol import (
    MetricSource,
    Observation,
    SensorContext,
    Unavailable,
)
from pytest_loopcontract.verifier.sensors.recorded import recorded_metric

__all__ = ["BUILTIN_SOURCES", "metric_sources", "observe"]


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
    except Unavailable as exc:
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


def _public(source: MetricSource) -> MetricSource:
    """Wrap a built-in so it honours the public source contract: return an Observation.

    Internally the built-ins bail out with :class:`Unavailable`; third-party sources see the
    built-ins through the ``loopcontract_metric_sources`` hook and may call them directly.
    """

    def wrapped(gate: MeasuredGate, ctx: SensorContext) -> Observation:
        try:
            return source(gate, ctx)
        except Unavailable as exc:
            return exc.observation

    wrapped.__name__ = source.__name__
    wrapped.__doc__ = source.__doc__
    return wrapped


BUILTIN_SOURCES: Mapping[str, MetricSource] = MappingProxyType(
    {
        "coverage": _public(coverage_source),
        "duration": _public(duration_source),
        "tests": _public(tests_source),
        "metric": _public(recorded_metric),
        "sensor": _public(sensor_command),
        "benchmark": _public(benchmark_source),
    }
)
"""Metric prefix -> source. Read-only: plugins extend a copy and pass it to :func:`observe`."""


class _BuiltinSources:
    """The built-in metric sources, offered through the public hook like any plugin's."""

    @hookspecs.hookimpl(trylast=True)
    def loopcontract_metric_sources(self) -> Mapping[str, Callable[..., Any]]:
        return BUILTIN_SOURCES


def metric_sources() -> dict[str, Callable[..., Any]]:
    """Every source by prefix. Pluggy calls the built-ins (``trylast``) last, so they come
    first here, reversed, and a plugin's prefix replaces a built-in one."""
    pm = hooks.with_builtin(_BuiltinSources(), "sensors")
    merged: dict[str, Callable[..., Any]] = {}
    for mapping in reversed(pm.hook.loopcontract_metric_sources()):
        merged.update(mapping)
    return merged
