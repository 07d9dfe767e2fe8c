"""Extension points of the verifier, as pluggy hook specifications.

Third-party packages implement these and advertise the implementation under the entry-point
group ``loopcontract``. The built-in metric sources and the built-in reading of a seat's report
file are registered through the same hooks, so they double as the reference implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pytest_loopcontract.contest.seat_model import Seat, SeatRun

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "loopcontract"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def loopcontract_metric_sources() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Return metric sources keyed by metric prefix (the part before the first dot).

    A source is called as ``source(gate, context)`` with a :class:`~.contract.MeasuredGate`
    and a :class:`~.sensors.protocol.SensorContext`, and returns a
    :class:`~.sensors.protocol.Observation`.
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


@hookspec(firstresult=True)
def loopcontract_seat_result(seat: Seat, run: SeatRun, report_file: Path) -> SeatRun | None:
    """Classify a finished seat run: a seat adapter for a given agent CLI.

    ``run`` carries the process facts only: ``status`` is ``ok``, ``error`` (non-zero exit or
    a signal), ``timeout`` or ``unavailable``, with the command, exit code, seconds, the head
    and tail of stdout and the tail of stderr. ``report_file`` is where the seat was told to
    write its report (it may not exist). Return a new :class:`~.contest.seat_model.SeatRun` (for
    instance with ``status`` ``"refused"``, ``"auth_failed"`` or ``"rate_limited"`` when the
    CLI's output says so, with the ``tokens`` and ``cost_usd`` the CLI printed, and with
    ``reply`` set to the answer text when the CLI wraps it in an envelope), or ``None`` to leave
    the run to the next implementation. The built-in presets (:mod:`~.contest.presets`) answer
    for seats whose contract entry names an ``agent``. The first non-``None`` answer wins; the
    built-in implementation runs last and applies the report file
    (:func:`~.contest.seat_model.apply_report`), so an adapter that answers should call
    ``apply_report(run, read_report(report_file))`` itself if it wants the report honoured too.
    Tokens and cost must be what the agent reported, never an estimate.
    """
