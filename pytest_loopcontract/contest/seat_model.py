"""The seat and what its runs leave behind: the contract's seats, the record of one run, the
seat's own report file and how a report folds into a run.

No processes here: :mod:`.seats` runs them and reads each run through the seat hooks.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = [
    "DEFAULT_TIMEOUT",
    "KEEP_BYTES",
    "PLACEHOLDERS",
    "REPORT_MAX_BYTES",
    "ROLES",
    "STATUSES",
    "Seat",
    "SeatReport",
    "SeatRun",
    "apply_report",
    "expand_argv",
    "read_report",
    "seats_from_contract",
]

ROLES: tuple[str, ...] = ("candidate", "judge")
STATUSES: tuple[str, ...] = (
    "ok",
    "unavailable",
    "refused",
    "flagged",
    "auth_failed",
    "rate_limited",
    "timeout",
    "error",
)
"""How a seat run can end. ``flagged``: the seat said the task cannot be done as specified
(its report's ``flag``), the honest way out a person then reads. ``auth_failed`` and
``rate_limited`` come from a seat adapter that read them in the agent CLI's own output
(:mod:`.presets`), never from a guess."""

DEFAULT_TIMEOUT = 900.0
"""Seconds a seat may run when the contract does not say."""

KEEP_BYTES = 64 * 1024
"""How much of the start and of the end of each output stream is kept."""

REPORT_MAX_BYTES = 64 * 1024
"""A report larger than this is not a report."""

REASON_MAX_CHARS = 500

PLACEHOLDERS: tuple[str, ...] = (
    "prompt_file",
    "workdir",
    "packet_file",
    "report_file",
    "prompt_dir",
    "packet_dir",
)

_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class Seat:
    """One seat of the contract: who it is, how to run it as author and as judge."""

    name: str
    family: str
    generate: tuple[str, ...] | None = None
    judge: tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT
    scripted: bool = False
    agent: str | None = None

    def command(self, role: str) -> tuple[str, ...]:
        """The argv template for ``role``; ``ValueError`` if the seat has none."""
        if role not in ROLES:
            raise ValueError(f"unknown seat role {role!r}: expected one of {', '.join(ROLES)}")
        argv = self.generate if role == "candidate" else self.judge
        if not argv:
            key = "generate" if role == "candidate" else "judge"
            raise ValueError(f"seat {self.name!r} has no {key!r} command, so it cannot be a {role}")
        return argv


def seats_from_contract(contract: Contract) -> list[Seat]:
    """The contract's seats, in contract order (the schema has already validated them)."""
    return [_seat(raw) for raw in contract.seats]


def _seat(raw: Mapping[str, Any]) -> Seat:
    """A contract seat. With ``agent``, the preset fills what the entry leaves out: the family
    (its vendor) and each role's argv; a hand-written ``generate``/``judge`` overrides that
    role's preset argv, and the preset still reads the output (so an override must keep the
    CLI's output-format flags). The schema has made sure a family is there when the preset
    has none."""
    from pytest_loopcontract.contest.presets import preset

    def argv(key: str) -> tuple[str, ...] | None:
        value = raw.get(key)
        return tuple(str(a) for a in value) if value else None

    agent = str(raw["agent"]) if raw.get("agent") is not None else None
    chosen = preset(agent) if agent is not None else None
    family = raw.get("family") or (chosen.family if chosen else None)
    timeout = raw.get("timeout")
    return Seat(
        name=str(raw["name"]),
        family=str(family),
        generate=argv("generate") or (chosen.generate if chosen else None),
        judge=argv("judge") or (chosen.judge if chosen else None),
        timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
        scripted=bool(raw.get("scripted", False)),
        agent=agent,
    )


def expand_argv(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Replace ``{prompt_file}``, ``{workdir}``, ``{packet_file}`` and ``{report_file}`` (and
    ``{prompt_dir}``/``{packet_dir}``, the folders of those files) inside every argument, also
    where embedded (``--prompt={prompt_file}``).

    One pass per argument: a value that itself contains ``{workdir}`` is not expanded again.
    Unknown braces, and known placeholders without a value, are left as they are.
    """

    def substitute(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return [_PLACEHOLDER.sub(substitute, arg) for arg in argv]


@dataclass(frozen=True)
class SeatRun:
    """What one run of a seat did. ``command`` is the expanded argv; ``reason`` is a human
    sentence (empty when ``ok``); ``notes`` are side remarks (a report field that was ignored).

    ``stdout_head`` is the first 64 KiB of stdout, ``stdout_tail`` the last 64 KiB of what came
    after the head (empty when everything fit in the head), ``stdout_bytes`` the total; both are
    decoded as UTF-8 with replacement. ``stderr_tail`` is the last 64 KiB of stderr.
    """

    seat: str
    family: str
    role: str
    status: str
    command: tuple[str, ...]
    exit_code: int | None
    seconds: float
    tokens: int | None = None
    cost_usd: float | None = None
    reason: str = ""
    stdout_head: str = ""
    stdout_tail: str = ""
    stdout_bytes: int = 0
    stderr_tail: str = ""
    notes: tuple[str, ...] = ()
    reply: str | None = None
    """The agent's answer taken out of its CLI's envelope by a seat adapter (a judge's reply
    inside ``claude --output-format json``), or ``None``: then stdout is the answer."""

    @property
    def stdout_text(self) -> str | None:
        """The whole stdout if it was kept whole (at most 64 KiB), else ``None``."""
        return self.stdout_head if self.stdout_bytes <= KEEP_BYTES else None

    def provenance(self) -> dict[str, Any]:
        """The ``provenance`` object of a candidate in ``result.json``."""
        return {
            "command": list(self.command),
            "exit_code": self.exit_code,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "seconds": self.seconds,
            "reason": self.reason,
        }

    def with_account(
        self,
        status: str,
        reason: str,
        notes: tuple[str, ...],
        tokens: int | None,
        cost_usd: float | None,
    ) -> SeatRun:
        """This run as the seat's own account settles it (its report file, its CLI's output):
        ``status``, ``reason`` and ``notes`` replace the run's, and ``tokens`` and ``cost_usd``
        replace the run's figures only where the account gave them (``None`` keeps the run's).
        One place, so every reader of an account folds its figures the same way."""
        return replace(
            self,
            status=status,
            reason=reason,
            notes=notes,
            tokens=self.tokens if tokens is None else tokens,
            cost_usd=self.cost_usd if cost_usd is None else cost_usd,
        )


@dataclass(frozen=True)
class SeatReport:
    """A seat's report file, field by field; a field that was absent or invalid is ``None``."""

    tokens: int | None = None
    cost_usd: float | None = None
    refused: bool | None = None
    reason: str | None = None
    notes: tuple[str, ...] = ()
    flag: str | None = None


def read_report(path: Path) -> SeatReport:
    """Read a seat's report. A missing file is an empty report; a broken one is ignored with a
    note; each bad field is ignored on its own with a note. Never raises for the file's content.

    The file is opened without following a symbolic link and only read if it is a regular file
    (a FIFO planted by a seat would block a plain read forever).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return SeatReport()
    except OSError as exc:
        if os.path.islink(path):
            return SeatReport(notes=("report file ignored: it is a symbolic link",))
        return SeatReport(notes=(f"report file ignored: cannot open it ({exc.strerror})",))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return SeatReport(notes=("report file ignored: not a regular file",))
        data = fh.read(REPORT_MAX_BYTES + 1)
    if len(data) > REPORT_MAX_BYTES:
        return SeatReport(notes=(f"report file ignored: larger than {REPORT_MAX_BYTES} bytes",))
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return SeatReport(notes=("report file ignored: not JSON",))
    if not isinstance(doc, dict):
        return SeatReport(notes=("report file ignored: not a JSON object",))
    return _report_fields(doc)


def _report_fields(doc: Mapping[str, Any]) -> SeatReport:
    notes: list[str] = []

    def bad(key: str, expected: str) -> None:
        notes.append(f"report field {key!r} ignored: {expected}, got {_short_repr(doc[key])}")

    tokens: int | None = None
    if "tokens" in doc:
        value = doc["tokens"]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            tokens = value
        else:
            bad("tokens", "expected a non-negative integer")
    cost: float | None = None
    if "cost_usd" in doc:
        value = doc["cost_usd"]
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value >= 0
        ):
            cost = float(value)
        else:
            bad("cost_usd", "expected a finite non-negative number")
    refused: bool | None = None
    if "refused" in doc:
        if isinstance(doc["refused"], bool):
            refused = doc["refused"]
        else:
            bad("refused", "expected true or false")
    reason: str | None = None
    if "reason" in doc:
        if isinstance(doc["reason"], str):
            reason = _one_line(doc["reason"])
        else:
            bad("reason", "expected a string")
    flag: str | None = None
    if "flag" in doc:
        if isinstance(doc["flag"], str) and doc["flag"].strip():
            flag = _one_line(doc["flag"])
        else:
            bad("flag", "expected a non-empty string (why the task cannot be done)")
    return SeatReport(tokens, cost, refused, reason, tuple(notes), flag)


def apply_report(run: SeatRun, report: SeatReport) -> SeatRun:
    """Fold a report into a run: tokens and cost as reported, ``refused`` if the report says
    so (a timeout stays a timeout: it outranks a refusal), the report's notes appended.

    This is the built-in ``loopcontract_seat_result`` implementation, public so that a seat
    adapter can combine its own reading with the report file's.
    """
    notes = list(run.notes) + list(report.notes)
    status, reason = run.status, run.reason
    if report.flag and run.status in ("ok", "error"):
        status, reason = "flagged", f"flagged: {report.flag}"
    elif report.refused and run.status in ("ok", "error"):
        status = "refused"
        reason = f"refused: {report.reason}" if report.reason else "refused (no reason given)"
    elif report.reason:
        notes.append(f"report reason: {report.reason}")
    if report.refused and run.status == "timeout":
        notes.append("the report says refused, but the seat timed out first")
    return run.with_account(status, reason, tuple(notes), report.tokens, report.cost_usd)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > REASON_MAX_CHARS:
        return flat[: REASON_MAX_CHARS - 1] + "…"
    return flat


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
