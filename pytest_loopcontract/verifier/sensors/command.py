"""The ``sensor.*`` source: a contract's own command that prints a JSON document.

The command runs confined like the tests (``SensorContext.confine``), without a shell and
with a deadline and an output cap (:mod:`.capped_run`).
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.capped_run import exit_description, run_capped
from pytest_loopcontract.verifier.sensors.common import (
    clip,
    finite_number,
    json_document,
    required_name,
    source_str,
)
from pytest_loopcontract.verifier.sensors.protocol import Observation, SensorContext, Unavailable

__all__ = ["sensor_command"]

_DEFAULT_SENSOR_TIMEOUT = 60.0


def _command(gate: MeasuredGate) -> list[str]:
    argv = gate.source.get("command")
    if (
        not isinstance(argv, (list, tuple))
        or not argv
        or not all(isinstance(arg, str) for arg in argv)
    ):
        raise Unavailable(
            "error", f"gate {gate.id!r}: source.command must be a non-empty list of strings"
        )
    return list(argv)


def _sensor_timeout(gate: MeasuredGate) -> float:
    value = gate.source.get("timeout", _DEFAULT_SENSOR_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise Unavailable("error", f"gate {gate.id!r}: source.timeout must be a positive number")
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
            raise Unavailable(
                "error", f"key {dotted!r} not found in the sensor output (no {part!r})"
            )
    return node


def sensor_command(gate: MeasuredGate, ctx: SensorContext) -> Observation:
    name = required_name(gate)
    argv = _command(gate)
    key = source_str(gate, "key", name)
    label = f"sensor command {shlex.join(argv)}"
    command = ctx.confine(list(argv)) if ctx.confine is not None else list(argv)
    done = run_capped(
        command, cwd=ctx.workdir, env=ctx.env, timeout=_sensor_timeout(gate), label=label
    )
    if done.returncode != 0:
        tail = clip(done.stderr_tail.decode("utf-8", "replace")) or "no stderr"
        raise Unavailable("error", f"{label} {exit_description(done.returncode)}: {tail}")
    document = json_document(done.stdout, f"the output of {label}")
    value = finite_number(_lookup(document, key), f"key {key!r} in the output of {label}")
    return Observation(
        value, "ok", f"key {key!r} printed by {label}", {"command": argv, "key": key}
    )
