"""The ``benchmark.*`` source: one stat of one benchmark in a pytest-benchmark JSON file."""

from __future__ import annotations

from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.common import (
    finite_number,
    json_document,
    read_capped,
    required_name,
    source_str,
)
from pytest_loopcontract.verifier.sensors.protocol import Observation, SensorContext, Unavailable

__all__ = ["benchmark_source"]


def _benchmarks(document: Any, origin: str) -> list[dict[str, Any]]:
    entries = document.get("benchmarks") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise Unavailable("error", f"{origin} is not a pytest-benchmark JSON file")
    return entries


def _select_benchmark(entries: list[dict[str, Any]], wanted: Any, origin: str) -> dict[str, Any]:
    """The benchmark named by ``source.name`` (name or fullname), or the only one there is."""
    if wanted is None:
        if len(entries) == 1:
            return entries[0]
        if not entries:
            raise Unavailable("missing", f"{origin} holds no benchmarks")
        raise Unavailable(
            "error", f"{origin} holds {len(entries)} benchmarks; set source.name to pick one"
        )
    matches = [e for e in entries if wanted in (e.get("name"), e.get("fullname"))]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        names = ", ".join(sorted(str(e.get("fullname", e.get("name"))) for e in entries))
        raise Unavailable("missing", f"no benchmark {wanted!r} in {origin} (found: {names})")
    raise Unavailable(
        "error", f"{len(matches)} benchmarks named {wanted!r} in {origin}; use the fullname"
    )


def benchmark_source(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    stat = required_name(gate)
    shown = source_str(gate, "file")
    origin = f"benchmark file {shown}"
    document = json_document(read_capped(ctx.workdir / shown, origin), origin)
    bench = _select_benchmark(_benchmarks(document, origin), gate.source.get("name"), origin)
    label = str(bench.get("fullname", bench.get("name")))
    stats = bench.get("stats")
    if not isinstance(stats, dict) or stat not in stats:
        raise Unavailable("error", f"benchmark {label} in {origin} has no stat {stat!r}")
    value = finite_number(stats[stat], f"stat {stat!r} of benchmark {label}")
    return Observation(
        value, "ok", f"{stat} of benchmark {label} in {origin}", {"benchmark": label, "stat": stat}
    )
