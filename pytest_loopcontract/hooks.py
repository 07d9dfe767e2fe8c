"""The pluggy plugin manager: built-ins plus whatever the ``loopcontract`` entry points add."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from pytest_loopcontract import hookspecs

if TYPE_CHECKING:
    from pytest_loopcontract.contest.seat_model import Seat, SeatRun

__all__ = ["metric_sources", "plugin_manager", "seat_result"]


class _Builtins:
    """The built-in metric sources and seat reading, registered through the public hooks like
    any plugin."""

    @hookspecs.hookimpl
    def loopcontract_metric_sources(self) -> Mapping[str, Callable[..., Any]]:
        from pytest_loopcontract.verifier.sensors.registry import BUILTIN_SOURCES

        return BUILTIN_SOURCES

    @hookspecs.hookimpl(trylast=True)
    def loopcontract_seat_result(self, run: SeatRun, report_file: Path) -> SeatRun:
        from pytest_loopcontract.contest.seat_model import apply_report, read_report

        return apply_report(run, read_report(report_file))


class _Presets:
    """The agent presets' seat adapter, imported when a seat's run is first read.

    Why not register :class:`~.contest.presets.adapter.PresetAdapter` itself: the plugin
    manager also serves the verdict hook of every ``pytest --loop-contract`` run, which must
    not load five agent presets and the seat model to call it."""

    @hookspecs.hookimpl
    def loopcontract_seat_result(
        self, seat: Seat, run: SeatRun, report_file: Path
    ) -> SeatRun | None:
        from pytest_loopcontract.contest.presets.adapter import PresetAdapter

        return PresetAdapter().loopcontract_seat_result(seat, run, report_file)


@cache
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(_Builtins(), "builtins")
    pm.register(_Presets(), "presets")
    if _group_declared(hookspecs.PROJECT):
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    return pm


def _group_declared(group: str) -> bool:
    """Whether an installed distribution's ``entry_points.txt`` has a ``[group]`` section.

    Read as text: pluggy's loader parses every distribution's entry points to find the few in
    the group (2 to 3 ms for 76 distributions, at every in-process verdict); this costs a
    third of that, and a false alarm only sends it to pluggy's full reading."""
    import importlib.metadata

    header = f"[{group}]"
    return any(
        header in (dist.read_text("entry_points.txt") or "")
        for dist in importlib.metadata.distributions()
    )


def metric_sources() -> dict[str, Callable[..., Any]]:
    """Merged sources by prefix; pluggy calls later-registered plugins first, so reverse."""
    merged: dict[str, Callable[..., Any]] = {}
    for mapping in reversed(plugin_manager().hook.loopcontract_metric_sources()):
        merged.update(mapping)
    return merged


def seat_result(seat: Seat, run: SeatRun, report_file: Path) -> SeatRun:
    """The classified run: the first seat adapter's answer, else the built-in report reading.

    A contest must not crash because an adapter did: if one raises or answers with something
    that is not a ``SeatRun``, the built-in reading is used and a note says why.
    """
    from pytest_loopcontract.contest.seat_model import SeatRun, apply_report, read_report

    hook = plugin_manager().hook.loopcontract_seat_result
    try:
        result = hook(seat=seat, run=run, report_file=report_file)
    except Exception as exc:
        problem = f"seat adapter failed ({type(exc).__name__}: {exc})"
    else:
        if isinstance(result, SeatRun):
            return result
        if result is None:
            return run
        problem = f"seat adapter answered {type(result).__name__}, not a SeatRun"
    fallback = apply_report(run, read_report(report_file))
    return replace(fallback, notes=(*fallback.notes, f"{problem}; built-in reading used"))
