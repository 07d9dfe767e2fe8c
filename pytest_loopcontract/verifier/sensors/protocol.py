"""The source protocol: what a metric source is given and what it must answer.

Every source answers with an :class:`Observation` that says where the value came from, or why
there is none. A gate that passes on a value nobody measured is worse than no gate, so the
invariants live on the observation itself, for built-in and plugin sources alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.verifier.results import RecordedMetric, TestRecord

__all__ = ["MetricSource", "Observation", "SensorContext", "Unavailable"]

_STATUSES = frozenset({"ok", "missing", "not_measurable", "error"})


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


class Unavailable(LoopContractError):
    """Ends a source early with a non-"ok" observation, from however deep the reason is found."""

    def __init__(self, status: str, detail: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.observation = Observation(None, status, detail, extra or {})
