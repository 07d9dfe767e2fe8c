"""Helpers every built-in source shares: reading a gate's ``source`` options, numbers, files
and JSON, each refusing bad input with an :class:`Unavailable` that names the reason."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.protocol import (
    MetricSource,
    Observation,
    SensorContext,
    Unavailable,
)

__all__ = [
    "clip",
    "dispatch",
    "finite_number",
    "json_document",
    "metric_name",
    "read_capped",
    "required_name",
    "shown_path",
    "source_str",
]

_MAX_FILE_BYTES = 64 << 20
_DETAIL_TAIL_CHARS = 300


def metric_name(gate: MeasuredGate) -> str:
    """The part after the prefix: ``coverage.percent`` -> ``percent``."""
    return gate.metric.partition(".")[2]


def required_name(gate: MeasuredGate) -> str:
    name = metric_name(gate)
    if not name:
        raise Unavailable("error", f"metric {gate.metric!r} needs a name after the dot")
    return name


def dispatch(
    prefix: str, table: Mapping[str, MetricSource], gate: MeasuredGate, ctx: SensorContext
) -> Observation:
    """Route a prefix's metrics to their handlers, naming the valid ones on a typo."""
    handler = table.get(metric_name(gate))
    if handler is None:
        known = ", ".join(f"{prefix}.{name}" for name in sorted(table))
        raise Unavailable("error", f"unknown metric {gate.metric!r} (known: {known})")
    return handler(gate, ctx)


def source_str(gate: MeasuredGate, key: str, default: str | None = None) -> str:
    value = gate.source.get(key, default)
    if not isinstance(value, str) or not value:
        raise Unavailable("error", f"gate {gate.id!r}: source.{key} must be a non-empty string")
    return value


def finite_number(value: Any, what: str) -> float:
    """A JSON number as a finite float; strings, booleans, NaN and infinities are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unavailable("error", f"{what} is not a number: {clip(repr(value))}")
    try:
        number = float(value)
    except OverflowError:
        raise Unavailable("error", f"{what} is too large for a float") from None
    if not math.isfinite(number):
        raise Unavailable("error", f"{what} is not finite: {number!r}")
    return number


def clip(text: str) -> str:
    """The last few hundred characters of ``text``, on one line, for a detail message."""
    flat = " ".join(text.split())
    if len(flat) <= _DETAIL_TAIL_CHARS:
        return flat
    return "..." + flat[-_DETAIL_TAIL_CHARS:]


def shown_path(path: Path, workdir: Path) -> str:
    """``path`` relative to the work directory when it lies inside it, for readable details."""
    return path.relative_to(workdir).as_posix() if path.is_relative_to(workdir) else str(path)


def read_capped(path: Path, shown: str) -> bytes:
    """Read a file the run produced, refusing sizes that would exhaust the verifier's memory."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise Unavailable("missing", f"{shown} not found") from None
    if len(data) > _MAX_FILE_BYTES:
        raise Unavailable("error", f"{shown} is larger than {_MAX_FILE_BYTES} bytes")
    return data


def json_document(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Unavailable("error", f"{what} is not valid JSON: {clip(str(exc))}") from None
