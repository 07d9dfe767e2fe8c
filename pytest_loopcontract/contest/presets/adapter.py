"""The presets as a seat adapter: the built-in ``loopcontract_seat_result`` implementation for
seats whose contract entry names an ``agent``.

Registered in :mod:`pytest_loopcontract.hooks` like any plugin, so a third-party adapter
registered through the ``loopcontract`` entry points is asked first and can replace a preset.
For a seat without ``agent`` it answers ``None`` and the built-in report reading applies.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import replace
from functools import cache
from pathlib import Path

from pytest_loopcontract import hookspecs
from pytest_loopcontract.contest.presets import preset
from pytest_loopcontract.contest.presets.model import Output, Preset, Reading
from pytest_loopcontract.contest.seat_model import Seat, SeatRun, apply_report, read_report

__all__ = ["PresetAdapter", "apply_reading", "installed_version", "version_note"]

_READ_STATUSES = frozenset({"ok", "error"})
"""Only a run that ran to its end has output worth reading (a timeout stays a timeout; a
missing binary stays ``unavailable``)."""


class PresetAdapter:
    """Reads a preset seat's run with its CLI's documented output format."""

    @hookspecs.hookimpl
    def loopcontract_seat_result(
        self, seat: Seat, run: SeatRun, report_file: Path
    ) -> SeatRun | None:
        if seat.agent is None:
            return None
        chosen = preset(seat.agent)
        reading = Reading()
        if run.status in _READ_STATUSES:
            reading = chosen.read(_output(run))
            note = version_note(chosen, run.command[0]) if run.command else None
            reading = replace(reading, notes=(*reading.notes, *([note] if note else [])))
        elif run.status == "unavailable":
            reading = Reading(notes=(f"the {chosen.name} preset runs {run.command[0]!r}",))
        return apply_reading(apply_report(run, read_report(report_file)), reading)


def installed_version(program: str) -> str:
    """What ``program --version`` prints (first line), asked once per installed file; ""
    when it says nothing usable within ten seconds."""
    return _version_of(shutil.which(program) or program)


@cache
def _version_of(found: str) -> str:
    try:
        done = subprocess.run(
            [found, "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout.strip().splitlines() or [""])[0][:200]


def version_note(chosen: Preset, program: str) -> str | None:
    """A note when the installed CLI is not the release the preset was proven on: its flags
    and its output format may have moved since (Codex 0.171 removed ``--full-auto``)."""
    if not chosen.proven:
        return None
    version = installed_version(program)
    if chosen.proven in version:
        return None
    shown = version or "no version"
    return (
        f"the {chosen.name} preset was proven on release {chosen.proven} of {program}; this "
        f"one says {shown!r}: check its flags and output if the seat misbehaves"
    )


def _output(run: SeatRun) -> Output:
    """The run's stdout whole when it was kept whole, else its head and tail (a JSON Lines
    stream still yields its complete lines; a cut JSON object simply does not parse)."""
    stdout = run.stdout_text
    if stdout is None:
        stdout = run.stdout_head + "\n" + run.stdout_tail
    return Output(run.status, run.exit_code, stdout, run.stderr_tail)


def apply_reading(run: SeatRun, reading: Reading) -> SeatRun:
    """Fold a preset's reading into a run (after its report file was applied).

    The CLI's own figures win over the report's; the preset's outcome (refused, auth failed,
    rate limited) replaces ``ok``/``error`` but never a timeout; a refusal the report file
    declared stays a refusal.
    """
    status, reason = run.status, run.reason
    if reading.outcome is not None and run.status in _READ_STATUSES:
        status, reason = reading.outcome, reading.reason
    notes = (*run.notes, *reading.notes)
    folded = run.with_account(status, reason, notes, reading.tokens, reading.cost_usd)
    return replace(folded, reply=reading.reply)
