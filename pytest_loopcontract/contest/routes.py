"""The route table: which seats to try first for a task category, learned from failures.

Why: when a seat's candidate fails a gate on a kind of task, the next contest on that kind of
task should not give it the first slot. The table keeps, per dotted domain and seat, how often
that seat was the first to fail a gate (``demotions``), and :meth:`RouteTable.order` puts the
least-demoted seats first. Nothing is ever removed from a contest this way; only the order in
which seats are dispatched (and, when capacity is short, who goes first) changes.

A demotion is **held** instead of applied when the panel that judged the run was degraded
(too few independent judges): the failure is recorded under ``held`` for a person to see, but
it does not move the seat, because a degraded panel is weak evidence.

The file is JSON, small and reviewable on the data branch::

    {"python.numeric.rolling": {"alpha": {"demotions": 2, "held": 1, "last_run": "..."}}}

Writes are atomic (temp file, ``fsync``, ``os.replace``, folder ``fsync``), so a crash leaves
the old table or the new one. :meth:`RouteTable.demote` re-reads the file under an exclusive
``flock`` on its folder before changing it, so two contests finishing at once do not lose a
demotion. A file that is not a valid table is never overwritten: every operation that would
write it raises :class:`RouteTableError` naming the path first.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.lessons.model import DOMAIN_PATTERN
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import write_bytes_atomic

__all__ = ["SEAT_PATTERN", "RouteTable", "RouteTableError"]

SEAT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENTRY_KEYS = frozenset({"demotions", "held", "last_run"})

Table = dict[str, dict[str, dict[str, Any]]]


class RouteTableError(LoopContractError):
    """The route table file cannot be used; the message names the file and what is wrong."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _validate(path: Path, data: Any) -> Table:
    if not isinstance(data, dict):
        raise RouteTableError(f"{path}: a route table must be a JSON object of domains")
    for domain, seats in data.items():
        if not DOMAIN_PATTERN.fullmatch(domain):
            raise RouteTableError(f"{path}: {domain!r} is not a dotted lower-case domain")
        if not isinstance(seats, dict):
            raise RouteTableError(f"{path}: domain {domain!r} must map seats to entries")
        for seat, entry in seats.items():
            where = f"{path}: {domain} / {seat}"
            if not SEAT_PATTERN.fullmatch(seat):
                raise RouteTableError(f"{where}: not a valid seat name")
            if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
                raise RouteTableError(
                    f"{where}: an entry must have exactly {', '.join(sorted(_ENTRY_KEYS))}"
                )
            if not _count(entry["demotions"]) or not _count(entry["held"]):
                raise RouteTableError(f"{where}: demotions and held must be integers >= 0")
            if not isinstance(entry["last_run"], str):
                raise RouteTableError(f"{where}: last_run must be a string")
    return data


class RouteTable:
    """``RouteTable(path)``: loads the file (a missing file is an empty table)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._table: Table = {}
        self.load()

    def load(self) -> RouteTable:
        """(Re-)read the file; raises :class:`RouteTableError` on a malformed one."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            self._table = {}
            return self
        except OSError as exc:
            raise RouteTableError(f"cannot read route table {self.path}: {exc}") from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RouteTableError(f"{self.path} is not valid JSON: {exc}") from None
        self._table = _validate(self.path, data)
        return self

    def save(self) -> None:
        """Write the table atomically (sorted keys, indented, one trailing newline)."""
        text = json.dumps(self._table, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        try:
            write_bytes_atomic(self.path, text.encode("utf-8"))
        except OSError as exc:
            raise RouteTableError(f"cannot write route table {self.path}: {exc}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive ``flock`` on the table's folder (the file itself is replaced)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError as exc:
            raise RouteTableError(f"cannot lock route table {self.path}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def demote(self, domain: str, seat: str, *, run_id: str, held: bool) -> dict[str, Any]:
        """Record that ``seat`` was the first to fail a gate in ``run_id`` on ``domain``.

        ``held=True`` (the panel was degraded) counts it under ``held`` and leaves the order
        alone; otherwise ``demotions`` grows. Re-reads the file under a lock, changes it and
        writes it back atomically; returns a copy of the seat's new entry.
        """
        if not isinstance(domain, str) or not DOMAIN_PATTERN.fullmatch(domain):
            raise ValueError(f"domain {domain!r} is not a dotted lower-case domain")
        if not isinstance(seat, str) or not SEAT_PATTERN.fullmatch(seat):
            raise ValueError(f"seat {seat!r} is not a valid seat name")
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("a demotion needs the run id")
        with self._locked():
            self.load()
            entry = self._table.setdefault(domain, {}).setdefault(
                seat, {"demotions": 0, "held": 0, "last_run": ""}
            )
            entry["held" if held else "demotions"] += 1
            entry["last_run"] = run_id
            self.save()
            return dict(entry)

    def order(self, domain: str, seats: Sequence[str]) -> list[str]:
        """``seats`` with the fewest applied demotions on ``domain`` first, else as given.

        Held demotions do not count. The sort is stable: seats with equal demotions keep the
        order they were given in.
        """
        counts = self._table.get(domain, {})
        return sorted(seats, key=lambda s: int(counts.get(s, {}).get("demotions", 0)))

    def entry(self, domain: str, seat: str) -> dict[str, Any] | None:
        """A copy of one seat's entry on one domain, or ``None``."""
        found = self._table.get(domain, {}).get(seat)
        return dict(found) if found is not None else None

    def to_json(self) -> dict[str, Any]:
        """A deep copy of the whole table, in the file's shape."""
        return copy.deepcopy(self._table)
