"""Extension points of the verifier, as pluggy hook specifications.

Third-party packages implement these and advertise the implementation under the entry-point
group ``loopcontract``. The built-in metric sources are registered through the same hook, so
they double as the reference implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pluggy

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "loopcontract"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def loopcontract_metric_sources() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Return metric sources keyed by metric prefix (the part before the first dot).

    A source is called as ``source(gate, context)`` with a :class:`~.contract.MeasuredGate`
    and a :class:`~.sensors.SensorContext`, and returns a :class:`~.sensors.Observation`.
    A source must never report ``ok`` for a value it did not read. Later registrations win
    over earlier ones for the same prefix, so a plugin can replace a built-in.
    """


@hookspec
def loopcontract_verdict(verdict: Mapping[str, Any]) -> None:
    """Look at a finished verdict before it is written (for logging, metrics, notifications).

    The document is read-only by convention: the verdict's outcome belongs to the gates.
    """


@hookspec
def loopcontract_checkpoint_patterns() -> Sequence[Any]:  # type: ignore[empty-body]
    """Return extra checkpoint patterns (:class:`~.checkpoints.Pattern`) to apply everywhere:
    command checks, diff scans of ``verify``, the pre-push hook and agent hooks."""
