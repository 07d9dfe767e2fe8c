"""One judge, start to finish: packet out, reply in, cells or a recorded reason back.

The orchestrator decides *how* a judge runs (which program, which timeout, which sandbox) and
hands that in as ``ask``; this module decides *what* the judge sees and what counts from its
answer. Keeping the two apart means the judging rules are tested with real judge programs
without the rest of the contest, and a seat runner can change without touching them.

Why it works this way:

* **One repair, then discard.** Models sometimes answer in prose. One repair request, with the
  reason and the start of the bad reply, fixes most of that; a second failure is recorded and
  the judge's reply is discarded, never guessed at.
* **Same labels on the repair.** The repair packet is built from the same inputs, so the labels
  (and their order) are the same ones the judge already saw; a changed order would invite a
  fixed-up reply that scores the wrong candidates.
* **Nothing to judge, nothing asked.** A judge whose family made every candidate gets no packet
  at all (``no_candidates``): asking it would only invite self-scoring.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.matrix_model import Cell
from pytest_loopcontract.contest.packets import JudgeBrief, build_packet, write_packet
from pytest_loopcontract.contest.redaction import redact_secrets
from pytest_loopcontract.contest.replies import DiscardedCell, ParsedReply, parse_reply
from pytest_loopcontract.contest.seat_model import STATUSES
from pytest_loopcontract.plural import plural

__all__ = [
    "ASK_STATUSES",
    "JUDGE_STATUSES",
    "AskResult",
    "JudgeOutcome",
    "run_judge",
]

ASK_STATUSES = STATUSES
"""How running a judge program can end (the seat protocol's outcomes)."""

JUDGE_STATUSES = ("ok", "repaired", "discarded", *STATUSES[1:], "no_candidates")
"""How judging can end for one judge, as ``result.json`` reports it."""

_REPLY_HEAD_CHARS = 200
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class AskResult:
    """What running a judge program on one packet gave.

    ``stdout`` is the judge's reply, or ``None`` when there is none to read (the program did
    not run, or its output was too large to keep whole). ``reason`` says why, for the record.
    """

    status: str
    stdout: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in ASK_STATUSES:
            raise ValueError(f"ask status {self.status!r} is not one of {', '.join(ASK_STATUSES)}")


@dataclass(frozen=True)
class JudgeOutcome:
    """Everything one judge contributed, and how it went.

    ``cells`` are the matrix cells that count; ``discarded_cells`` those that did not and why;
    ``labels`` (label -> seat) is the blind map the judge was given; ``attempts`` records each
    request (``{"attempt", "status", "error", "reply_head"}``, the reply head redacted).
    """

    seat: str
    family: str
    status: str
    cells: tuple[Cell, ...]
    discarded_cells: tuple[DiscardedCell, ...]
    labels: Mapping[str, str]
    attempts: tuple[Mapping[str, Any], ...]
    note: str = ""

    def __post_init__(self) -> None:
        if self.status not in JUDGE_STATUSES:
            raise ValueError(
                f"judge status {self.status!r} is not one of {', '.join(JUDGE_STATUSES)}"
            )


def run_judge(
    brief: JudgeBrief, *, packet_dir: Path, ask: Callable[[Path], AskResult]
) -> JudgeOutcome:
    """Build and write the packet for the brief's judge, ask the judge, parse its reply.

    A reply that is not a JSON object with a ``scores`` list gets one repair request (same
    labels, ``repair`` filled in); if that fails too the judge is ``discarded`` with the reason.
    A non-``ok`` ask ends the judge with that status. Packets are written to
    ``packet_dir/<judge>.packet.json`` and ``packet_dir/<judge>.repair.json``.
    """
    packet, labels = build_packet(brief)
    judge = _Judging(brief, labels, packet_dir, ask)
    if not labels:
        return judge.outcome("no_candidates", "every candidate is the judge's own seat or family")
    error: str | None = None
    previous = ""
    for number, suffix in ((1, "packet"), (2, "repair")):
        if number == 2:
            packet, repair_labels = build_packet(
                brief, {"error": error or "", "previous_reply": previous}
            )
            if repair_labels != labels:  # pragma: no cover - build_packet is deterministic
                raise AssertionError("the repair packet changed the labels")
        result = judge.ask_once(suffix, packet)
        if result.status != "ok":
            judge.attempt(number, result.status, result.reason or None, result.stdout)
            return judge.outcome(result.status, result.reason)
        parsed, error = judge.parse(result)
        judge.attempt(number, "ok", error, result.stdout)
        if parsed is not None and parsed.error is None:
            note = f"{plural(len(parsed.discarded), 'cell')} discarded" if parsed.discarded else ""
            status = "ok" if number == 1 else "repaired"
            return judge.outcome(status, note, parsed.cells, parsed.discarded)
        previous = result.stdout or ""
    return judge.outcome("discarded", f"reply unusable after one repair: {error}")


@dataclass
class _Judging:
    """One judge's run in progress: its brief, its blind labels and the attempts so far."""

    brief: JudgeBrief
    labels: Mapping[str, str]
    packet_dir: Path
    ask: Callable[[Path], AskResult]
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def ask_once(self, suffix: str, packet: Mapping[str, Any]) -> AskResult:
        name = _UNSAFE_NAME.sub("_", self.brief.judge_seat) or "judge"
        path = self.packet_dir / f"{name}.{suffix}.json"
        write_packet(path, packet)
        return self.ask(path)

    def parse(self, result: AskResult) -> tuple[ParsedReply | None, str | None]:
        """The parsed reply (``None`` when there is nothing to read) and what is wrong with it."""
        if result.stdout is None:
            return None, "no readable reply" + (f" ({result.reason})" if result.reason else "")
        parsed = parse_reply(
            result.stdout,
            labels=self.labels,
            judge_seat=self.brief.judge_seat,
            judge_family=self.brief.judge_family,
            rows=self.brief.rows,
            seat_families={view.seat: view.family for view in self.brief.candidates},
        )
        return parsed, parsed.error

    def attempt(self, number: int, status: str, error: str | None, stdout: str | None) -> None:
        head = None if stdout is None else redact_secrets(stdout[:_REPLY_HEAD_CHARS])
        self.attempts.append(
            {"attempt": number, "status": status, "error": error, "reply_head": head}
        )

    def outcome(
        self,
        status: str,
        note: str = "",
        cells: tuple[Cell, ...] = (),
        discarded: tuple[DiscardedCell, ...] = (),
    ) -> JudgeOutcome:
        return JudgeOutcome(
            seat=self.brief.judge_seat,
            family=self.brief.judge_family,
            status=status,
            cells=cells,
            discarded_cells=discarded,
            labels=dict(self.labels),
            attempts=tuple(self.attempts),
            note=note,
        )
