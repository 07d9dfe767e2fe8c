"""The contest ledger: an append-only, hash-chained SQLite record of what every run did.

Why a ledger at all: a contest spends money on several agents, scores them blind by each other
and picks one. Afterwards a human (or the next run's calibration) must be able to ask what was
dispatched, what it cost, who scored whom and why the winner won, and trust the answer. So every
fact goes in as one row, rows are never changed, and each row seals the one before it.

Storage choices, and why:

* **SQLite in WAL mode** is the embedded default: one file, in the standard library, safe for
  several processes (judges, seats, the orchestrator) writing at once, and readers never block
  writers. Writers take ``BEGIN IMMEDIATE``, so "read the chain tail, insert the next row" is
  serialized across processes and the chain never forks.
* **``synchronous=NORMAL``**: in WAL mode a commit is then safe against a crash of the process
  (the row is in the WAL) and the file can never be corrupted, but a power cut may lose the
  last few commits. Those are lost whole, from the tail, so the chain stays valid; it is only
  shorter. ``FULL`` would ``fsync`` on every commit, which a contest writing hundreds of score
  rows does not need. Before anything leaves the machine that names the chain head (a
  certificate), call :meth:`Ledger.sync` so the head is on disk.
* **One table, ``rows``**, in the column order below. ``row_hash`` is the SHA-256 (hex) of
  ``prev_hash`` followed by the canonical JSON (``separators=(",", ":")``, ASCII, no NaN) of the
  list ``[seq, run_id, kind, contract_id, seat, family, payload, tokens, cost_usd,
  created_at]``; ``payload`` is itself canonical JSON text (sorted keys). The first row's
  ``prev_hash`` is :data:`ZERO_HASH`. ``seq`` is in the hash, so a gap (a deleted row) or a
  swap shows, and so does a changed column type (``12`` versus ``"12"``).
* **Triggers**: ``BEFORE UPDATE`` and ``BEFORE DELETE`` triggers raise, so a program that edits
  a row by mistake fails loudly at once. They are a seat belt, not the lock: anyone with the
  ``sqlite3`` shell can drop them. :meth:`Ledger.verify` is the real check; it names the first
  row that does not seal and warns when the triggers are gone. Opening the ledger for writing
  puts missing triggers back and says so in :attr:`Ledger.notices`.
* **Only reported figures**: ``tokens`` and ``cost_usd`` are NULL unless the agent reported
  them. Nothing here estimates; a total over a run is "not reported" (``None``) as soon as one
  of its dispatches did not report.

What the chain cannot see: rows cut off the *end*. A certificate carries the chain head it was
issued on, so :func:`pytest_loopcontract.contest.certificate.verify` catches a truncated or
rewritten ledger.

Row kinds and their payloads (``seat``/``family`` are columns, not payload keys). Keys marked
*checked* are validated by :meth:`Ledger.append`, because the queries below rely on them; other
keys are free-form and shown as a convention.

``run_started``
    ``{"contract": {"id", "sha256"}, "seats": [{"seat", "family"}, ...], "mode"}``.
``dispatch`` (``seat``, ``family`` required)
    One agent invocation. *checked*: ``role`` is ``"candidate"`` or ``"judge"``. Convention:
    ``attempt`` (1-based), ``target`` (a judge's candidate seat), ``command``. The ``tokens``
    and ``cost_usd`` columns carry what the agent reported, or NULL.
``outcome`` (``seat``, ``family`` required)
    A candidate's gate result. *checked*: ``verdict`` in ``pass`` / ``fail`` / ``error``.
    Convention: ``exit_code``, ``attempt``, ``reasons``. A seat "took part" in a run when it
    has an outcome row there.
``score`` (``seat``, ``family`` = the judge)
    One cell of the validity matrix. *checked*: ``target`` (the candidate seat, a string),
    ``validity`` (points, a finite number >= 0), ``call`` (``pass`` / ``fail``: the judge's
    own verdict on the candidate). Convention: ``rows`` = ``{"question_fidelity",
    "completeness", "evidence", "test_agreement"}``.
``decision`` (``seat``, ``family`` = the winner, or NULL when there is none)
    *checked*: ``winner`` (seat or ``null``; the ``seat`` column is filled from it),
    ``outcomes`` = ``{candidate seat: "pass" | "fail"}``, the decided outcome for every
    candidate. The latest decision row of a run is the run's decision (a human gate may
    overturn the bracket).
``event``
    *checked*: ``event`` is one of :data:`EVENT_NAMES`. Convention: ``spread_over_threshold``
    ``{"target", "spread", "threshold"}``; ``budget_exhausted`` ``{"budget", "limit", "spent"}``;
    ``retry_cap`` ``{"attempts", "cap"}``; ``human_gate`` ``{"by", "decision", "sha"}``;
    ``ledger_tampered`` ``{"first_bad_seq", "reason"}``; ``run_lock_recovered`` ``{"holder"}``;
    ``escalation`` ``{"code", "message"}``; ``outside_write`` ``{"paths"}``; ``identical_trees``
    ``{"seats", "tree"}``; ``judge_reply_discarded`` ``{"judge", "status", "discarded_cells",
    "note"}``; ``dissent_rerun`` ``{"target"}``; ``bracket`` ``{"rounds", "proposed_winner"}``;
    ``lesson_written`` ``{"lesson", "gate", "kind"}``; ``route_demoted`` ``{"seat", "domain",
    "held"}``; ``merge`` ``{"seat", "branch", "commit", "into"}``.
``run_finished``
    ``{"status": "winner" | "no_winner" | "stopped", "winner": seat | null}``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from pytest_loopcontract.errors import LoopContractError

__all__ = [
    "EVENT_NAMES",
    "KINDS",
    "NOT_REPORTED",
    "SCHEMA_VERSION",
    "ZERO_HASH",
    "Agreement",
    "Entry",
    "Ledger",
    "LedgerError",
    "Row",
    "RunBusy",
    "RunHolder",
    "RunLock",
    "Totals",
    "VerifyResult",
    "WinRate",
    "canonical_json",
    "row_hash",
    "verify_file",
]

ZERO_HASH = "0" * 64
NOT_REPORTED = "not reported"
SCHEMA_VERSION = 1
KINDS = frozenset(
    {"run_started", "dispatch", "outcome", "score", "decision", "event", "run_finished"}
)
EVENT_NAMES = frozenset(
    {
        "spread_over_threshold",
        "budget_exhausted",
        "retry_cap",
        "human_gate",
        "ledger_tampered",
        "run_lock_recovered",
        "escalation",
        "outside_write",
        "identical_trees",
        "judge_reply_discarded",
        "dissent_rerun",
        "bracket",
        "lesson_written",
        "route_demoted",
        "merge",
    }
)
_ROLES = frozenset({"candidate", "judge"})
_VERDICTS = frozenset({"pass", "fail", "error"})
_CALLS = frozenset({"pass", "fail"})
_MAX_TOKENS = 2**63 - 1  # SQLite's INTEGER range
_BUSY_TIMEOUT_S = 30.0

_COLUMNS = (
    "seq",
    "run_id",
    "kind",
    "contract_id",
    "seat",
    "family",
    "payload",
    "tokens",
    "cost_usd",
    "created_at",
    "prev_hash",
    "row_hash",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM rows"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    contract_id TEXT NOT NULL,
    seat TEXT,
    family TEXT,
    payload TEXT NOT NULL,
    tokens INTEGER,
    cost_usd REAL,
    created_at TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    row_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rows_run ON rows (run_id, kind);
CREATE INDEX IF NOT EXISTS rows_seat ON rows (seat, kind);
CREATE INDEX IF NOT EXISTS rows_family ON rows (family, kind);
"""
_TRIGGERS = {
    "rows_append_only_update": (
        "CREATE TRIGGER IF NOT EXISTS rows_append_only_update BEFORE UPDATE ON rows "
        "BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END"
    ),
    "rows_append_only_delete": (
        "CREATE TRIGGER IF NOT EXISTS rows_append_only_delete BEFORE DELETE ON rows "
        "BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END"
    ),
}


class LedgerError(LoopContractError):
    """The ledger cannot be used as asked; the message says why in words a person can act on."""


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` that is hashed and signed: sorted keys, no spaces, ASCII.

    Why one spelling: a hash or a signature covers bytes, so two writers (or a writer and a
    verifier years later) must turn the same value into the same bytes.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def row_hash(
    prev_hash: str,
    seq: int,
    run_id: str,
    kind: str,
    contract_id: str,
    seat: str | None,
    family: str | None,
    payload: str,
    tokens: int | None,
    cost_usd: float | None,
    created_at: str,
) -> str:
    """SHA-256 of ``prev_hash`` + the canonical JSON list of the row's other columns.

    Spelled out by hand rather than through :func:`json.dumps`: for these column types the
    result is byte-for-byte ``canonical_json([...])`` (a property test holds it to that), and
    it is several times faster. :meth:`Ledger.verify` inlines this same expression in its hot
    loop; the tests hold both to the same bytes.
    """
    text = "%s[%d,%s,%s,%s,%s,%s,%s,%s,%s,%s]" % (  # noqa: UP031 - fastest spelling here
        prev_hash,
        seq,
        _quote(run_id),
        _quote(kind),
        _quote(contract_id),
        "null" if seat is None else _quote(seat),
        "null" if family is None else _quote(family),
        _quote(payload),
        "null" if tokens is None else int.__repr__(tokens),
        "null" if cost_usd is None else float.__repr__(cost_usd),
        _quote(created_at),
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One row to append, before the ledger gives it a place (``seq``) and a seal."""

    kind: str
    run_id: str
    contract_id: str
    payload: Mapping[str, Any]
    seat: str | None = None
    family: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """One stored row, exactly as sealed; ``payload`` is the canonical JSON text."""

    seq: int
    run_id: str
    kind: str
    contract_id: str
    seat: str | None
    family: str | None
    payload: str
    tokens: int | None
    cost_usd: float | None
    created_at: str
    prev_hash: str
    row_hash: str

    @property
    def data(self) -> dict[str, Any]:
        """The payload as a dict (parsed on each access; rows stay immutable)."""
        value = json.loads(self.payload)
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """What :meth:`Ledger.verify` found.

    ``rows_checked`` counts the rows that sealed before the first bad one (all rows when
    ``ok``). ``first_bad_seq`` names the first row that does not seal, or None. ``head`` is the
    ``row_hash`` of the last good row. ``warnings`` never make the ledger invalid (for example,
    missing append-only triggers: the chain is the proof, the triggers only a seat belt).
    """

    ok: bool
    rows_checked: int
    first_bad_seq: int | None
    reason: str
    head: str = ZERO_HASH
    warnings: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = self.reason
        for warning in self.warnings:
            text += f"\nwarning: {warning}"
        return text


@dataclass(frozen=True, slots=True)
class Totals:
    """Tokens and cost of a run's dispatches; None means "not reported", never zero.

    A figure is None unless *every* dispatch of the run reported it, and also when the run had
    no dispatch at all (pull-request seats, say): a sum over partial reports would understate
    the cost while looking exact, and nothing here estimates.
    """

    tokens: int | None
    cost_usd: float | None
    dispatches: int

    def as_payload(self) -> dict[str, Any]:
        """The certificate's ``totals``: numbers, or the string "not reported"."""
        return {
            "tokens": NOT_REPORTED if self.tokens is None else self.tokens,
            "cost_usd": NOT_REPORTED if self.cost_usd is None else self.cost_usd,
        }


class WinRate(NamedTuple):
    """Decided runs won and decided runs taken part in; ``rate`` is None before any."""

    wins: int
    runs: int

    @property
    def rate(self) -> float | None:
        return self.wins / self.runs if self.runs else None


class Agreement(NamedTuple):
    """Judge cells whose pass/fail call matched the decided outcome, out of those decided."""

    agree: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.agree / self.total if self.total else None


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(name: str, value: object, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise LedgerError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise LedgerError(f"{name} is not valid Unicode text: {value!r}") from None
    return value


def _required(name: str, value: object) -> str:
    text = _text(name, value)
    assert text is not None  # _text raises for None unless optional
    return text


def _check_payload(kind: str, payload: Mapping[str, Any], seat: str | None) -> None:
    """Reject payloads the queries could not read: better a loud error now than a silent skip."""

    def fail(why: str) -> LedgerError:
        return LedgerError(f"{kind} row: {why}; payload was {dict(payload)!r}")

    if kind == "dispatch":
        if payload.get("role") not in _ROLES:
            raise fail(f"payload 'role' must be one of {sorted(_ROLES)}")
    elif kind == "outcome":
        if payload.get("verdict") not in _VERDICTS:
            raise fail(f"payload 'verdict' must be one of {sorted(_VERDICTS)}")
    elif kind == "score":
        target, validity = payload.get("target"), payload.get("validity")
        if not isinstance(target, str) or not target:
            raise fail("payload 'target' must name the candidate seat")
        if (
            isinstance(validity, bool)
            or not isinstance(validity, (int, float))
            or not math.isfinite(validity)
            or validity < 0
        ):
            raise fail("payload 'validity' must be a finite number >= 0")
        if payload.get("call") not in _CALLS:
            raise fail(f"payload 'call' must be one of {sorted(_CALLS)}")
    elif kind == "decision":
        winner, outcomes = payload.get("winner"), payload.get("outcomes")
        if winner is not None and (not isinstance(winner, str) or not winner):
            raise fail("payload 'winner' must be a seat name or null")
        if seat != winner:
            raise fail(f"the seat column ({seat!r}) must be the winner ({winner!r})")
        if not isinstance(outcomes, Mapping) or not all(
            isinstance(k, str) and v in _CALLS for k, v in outcomes.items()
        ):
            raise fail("payload 'outcomes' must map each candidate seat to 'pass' or 'fail'")
    elif kind == "event" and payload.get("event") not in EVENT_NAMES:
        raise fail(f"payload 'event' must be one of {sorted(EVENT_NAMES)}")


_Values = tuple[str, str, str, str | None, str | None, str, int | None, float | None]


def _prepare(entry: Entry) -> _Values:
    """Validate one entry and return its column values (without seq, time and hashes)."""
    if entry.kind not in KINDS:
        raise LedgerError(f"unknown row kind {entry.kind!r}; expected one of {sorted(KINDS)}")
    run_id = _required("run_id", entry.run_id)
    contract_id = _required("contract_id", entry.contract_id)
    family = _text("family", entry.family, optional=True)
    seat = entry.seat
    if entry.kind == "decision" and seat is None and isinstance(entry.payload, Mapping):
        winner = entry.payload.get("winner")
        seat = winner if isinstance(winner, str) else None
    seat = _text("seat", seat, optional=True)
    if entry.kind in ("dispatch", "outcome", "score") and (seat is None or family is None):
        raise LedgerError(f"{entry.kind} row needs both seat and family")
    if not isinstance(entry.payload, Mapping):
        raise LedgerError(f"payload must be a mapping, got {type(entry.payload).__name__}")
    _check_payload(entry.kind, entry.payload, seat)
    try:
        payload = canonical_json(dict(entry.payload))
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{entry.kind} payload is not plain JSON: {exc}") from None
    tokens = entry.tokens
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= _MAX_TOKENS
    ):
        raise LedgerError(f"tokens must be a whole number >= 0 or None, got {tokens!r}")
    cost = entry.cost_usd
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, (int, float)):
            raise LedgerError(f"cost_usd must be a number or None, got {cost!r}")
        # SQLite's REAL column hands back a float, so the hash must be taken over a float too.
        cost = float(cost)
        if not math.isfinite(cost) or cost < 0:
            raise LedgerError(f"cost_usd must be finite and >= 0, got {cost!r}")
    return (run_id, entry.kind, contract_id, seat, family, payload, tokens, cost)


class Ledger:
    """The ledger file: ``with Ledger(path) as ledger: ledger.append(...)``.

    ``create=False`` opens an existing ledger without touching its schema (what ``loop-contract
    ledger verify`` wants: inspecting a file must not repair it). A connection belongs to one
    thread; open one ``Ledger`` per thread or process.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        self.notices: list[str] = []
        self._write_lock = threading.Lock()
        if not create and not self.path.is_file():
            raise LedgerError(f"no ledger at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Threads of one contest (seats and judges finishing at once) share this connection;
            # ``append_many`` serializes them with ``_write_lock``, so no two use it at once.
            self._db = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {self.path}: {exc}") from None
        try:
            self._setup(create)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise LedgerError(f"{self.path} is not a usable SQLite ledger: {exc}") from None
        except LedgerError:
            self._db.close()
            raise

    def _setup(self, create: bool) -> None:
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"{self.path} was written by a newer loop-contract (ledger schema {version}, "
                f"this one knows {SCHEMA_VERSION}); upgrade to read it"
            )
        if self._has_table():
            columns = {str(r[1]) for r in db.execute("PRAGMA table_info(rows)")}
            if set(_COLUMNS) - columns:
                raise LedgerError(
                    f"{self.path}: table 'rows' lacks columns "
                    f"{sorted(set(_COLUMNS) - columns)}; not a loop-contract ledger"
                )
        if create:
            mode = str(db.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            if mode != "wal":
                self.notices.append(f"journal mode is {mode!r}, not WAL (file system limits?)")
            db.execute("PRAGMA synchronous = NORMAL")
            missing = set(_TRIGGERS) - self._triggers()
            existed = self._has_table()
            db.executescript(_SCHEMA)
            for sql in _TRIGGERS.values():
                db.execute(sql)
            if version == 0:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if existed and missing:
                self.notices.append(
                    "append-only triggers were missing (dropped by hand?) and were restored: "
                    + ", ".join(sorted(missing))
                    + "; run `loop-contract ledger verify` to check the chain"
                )
        elif not self._has_table():
            raise LedgerError(f"{self.path} has no ledger table 'rows'")

    def _has_table(self) -> bool:
        found = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rows'"
        ).fetchone()
        return found is not None

    def _triggers(self) -> set[str]:
        return {
            str(r[0])
            for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'rows'"
            )
        }

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def settings(self) -> dict[str, str]:
        """The durability settings in force: ``journal_mode`` and ``synchronous``, as names.

        Why expose them: the durability argument in the module docstring holds only for
        ``wal`` + ``normal``, and a file system that cannot do WAL silently falls back.
        """
        mode = str(self._db.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        level = int(self._db.execute("PRAGMA synchronous").fetchone()[0])
        names = {0: "off", 1: "normal", 2: "full", 3: "extra"}
        return {"journal_mode": mode, "synchronous": names.get(level, str(level))}

    def sync(self) -> None:
        """Make every committed row durable (a full WAL checkpoint, which ``fsync``\\ s).

        Why: with ``synchronous=NORMAL`` a power cut may drop the last commits. Call this before
        handing out anything that names the chain head, such as a certificate.
        """
        self._db.execute("PRAGMA wal_checkpoint(FULL)").fetchall()

    # -- writing --------------------------------------------------------------------------

    def append(
        self,
        kind: str,
        *,
        run_id: str,
        contract_id: str,
        payload: Mapping[str, Any],
        seat: str | None = None,
        family: str | None = None,
        tokens: int | None = None,
        cost_usd: float | None = None,
    ) -> Row:
        """Append one row and return it sealed. Raises :class:`LedgerError` on a bad entry."""
        entry = Entry(kind, run_id, contract_id, payload, seat, family, tokens, cost_usd)
        return self.append_many([entry])[0]

    def append_many(self, entries: Iterable[Entry]) -> list[Row]:
        """Append several rows in one transaction: all of them, in order, or none.

        Why ``BEGIN IMMEDIATE``: it takes the write lock before reading the tail, so two
        processes cannot both chain onto the same row; the second waits (busy timeout) and
        then chains onto the first one's last row.
        """
        prepared = [_prepare(e) for e in entries]
        if not prepared:
            return []
        with self._write_lock:
            return self._append_prepared(prepared)

    def _append_prepared(self, prepared: list[_Values]) -> list[Row]:
        db = self._db
        rows: list[Row] = []
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise LedgerError(f"ledger {self.path} is busy or read-only: {exc}") from None
        try:
            tail = db.execute("SELECT seq, row_hash FROM rows ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (0, ZERO_HASH) if tail is None else (int(tail[0]), str(tail[1]))
            created_at = _utc_now()
            for values in prepared:
                seq += 1
                sealed = row_hash(prev, seq, *values, created_at)
                row = Row(seq, *values, created_at, prev, sealed)
                rows.append(row)
                prev = sealed
            db.executemany(
                f"INSERT INTO rows ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * 12)})",
                [
                    (
                        r.seq,
                        r.run_id,
                        r.kind,
                        r.contract_id,
                        r.seat,
                        r.family,
                        r.payload,
                        r.tokens,
                        r.cost_usd,
                        r.created_at,
                        r.prev_hash,
                        r.row_hash,
                    )
                    for r in rows
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        return rows

    def record_event(
        self,
        event: str,
        *,
        run_id: str,
        contract_id: str,
        details: Mapping[str, Any] | None = None,
        seat: str | None = None,
        family: str | None = None,
    ) -> Row:
        """Append an ``event`` row: ``{"event": event, **details}``."""
        payload = {**(details or {}), "event": event}
        return self.append(
            "event",
            run_id=run_id,
            contract_id=contract_id,
            payload=payload,
            seat=seat,
            family=family,
        )

    # -- reading --------------------------------------------------------------------------

    def rows(self, *, run_id: str | None = None, kind: str | None = None) -> Iterator[Row]:
        """Rows in chain order, optionally of one run and/or one kind."""
        where, args = _where(run_id=run_id, kind=kind)
        for values in self._db.execute(f"{_SELECT}{where} ORDER BY seq", args):
            yield Row(*values)

    def row(self, seq: int) -> Row | None:
        """The row at ``seq``, or None."""
        values = self._db.execute(f"{_SELECT} WHERE seq = ?", (seq,)).fetchone()
        return None if values is None else Row(*values)

    def count(self) -> int:
        """How many rows the ledger holds."""
        return int(self._db.execute("SELECT count(*) FROM rows").fetchone()[0])

    def head(self) -> tuple[int, str]:
        """``(seq, row_hash)`` of the last row; ``(0, ZERO_HASH)`` for an empty ledger."""
        tail = self._db.execute("SELECT seq, row_hash FROM rows ORDER BY seq DESC LIMIT 1")
        found = tail.fetchone()
        return (0, ZERO_HASH) if found is None else (int(found[0]), str(found[1]))

    def find_hash(self, digest: str) -> int | None:
        """The ``seq`` of the row whose ``row_hash`` is ``digest``, or None."""
        found = self._db.execute(
            "SELECT seq FROM rows WHERE row_hash = ? ORDER BY seq LIMIT 1", (digest,)
        ).fetchone()
        return None if found is None else int(found[0])

    # -- queries --------------------------------------------------------------------------

    def totals(self, run_id: str, *, upto_seq: int | None = None) -> Totals:
        """Tokens and cost over the run's dispatches (None = not reported; see :class:`Totals`).

        ``upto_seq`` limits the sum to rows at or before that place in the chain (a
        certificate's totals are checked against the chain head it was issued on).
        """
        sql = (
            "SELECT count(*), count(tokens), sum(tokens), count(cost_usd) FROM rows "
            "WHERE run_id = ? AND kind = 'dispatch' AND seq <= ?"
        )
        limit = _MAX_TOKENS if upto_seq is None else upto_seq
        n, n_tokens, tokens, n_cost = self._db.execute(sql, (run_id, limit)).fetchone()
        cost: float | None = None
        if n and n_cost == n:
            # fsum: the total must not depend on the order the rows come back in.
            cost = math.fsum(
                float(r[0])
                for r in self._db.execute(
                    "SELECT cost_usd FROM rows WHERE run_id = ? AND kind = 'dispatch' AND seq <= ?",
                    (run_id, limit),
                )
            )
        return Totals(
            tokens=int(tokens) if n and n_tokens == n else None,
            cost_usd=cost,
            dispatches=int(n),
        )

    def _decisions(self) -> dict[str, tuple[str | None, str | None, dict[str, Any]]]:
        """Each run's latest decision: ``run_id -> (winner seat, winner family, payload)``."""
        latest: dict[str, tuple[str | None, str | None, dict[str, Any]]] = {}
        for run_id, seat, family, payload in self._db.execute(
            "SELECT run_id, seat, family, payload FROM rows WHERE kind = 'decision' ORDER BY seq"
        ):
            latest[run_id] = (seat, family, _loads(payload))
        return latest

    def win_rate(self, *, seat: str | None = None, family: str | None = None) -> WinRate:
        """Decided runs a seat (or any seat of a family) won, out of decided runs it was in.

        "In" means it has an outcome row in the run; a run counts once it has a decision.
        """
        if (seat is None) == (family is None):
            raise LedgerError("win_rate needs exactly one of seat= or family=")
        column, value = ("seat", seat) if seat is not None else ("family", family)
        joined = {
            str(r[0])
            for r in self._db.execute(
                f"SELECT DISTINCT run_id FROM rows WHERE kind = 'outcome' AND {column} = ?",
                (value,),
            )
        }
        decisions = self._decisions()
        decided = joined & decisions.keys()
        index = 0 if seat is not None else 1
        wins = sum(1 for run in decided if decisions[run][index] == value)
        return WinRate(wins=wins, runs=len(decided))

    def cost_per_validity_point(self, seat: str) -> float | None:
        """Dollars the seat's candidate work cost per validity point it earned; None = not reported.

        Cost: every ``dispatch`` row of the seat with role ``candidate``, in every run (failed
        attempts cost money too). None when there is none or one did not report its cost.
        Points: per run, the mean ``validity`` the judges gave the seat (so more judges do not
        mean more points), summed over runs. None when no judge scored it, or it scored zero
        (a cost per point is undefined there, and reporting infinity helps nobody).
        """
        costs: list[float] = []
        for payload, cost in self._db.execute(
            "SELECT payload, cost_usd FROM rows WHERE kind = 'dispatch' AND seat = ?", (seat,)
        ):
            if _loads(payload).get("role") != "candidate":
                continue
            if cost is None:
                return None
            costs.append(float(cost))
        if not costs:
            return None
        per_run: dict[str, list[float]] = {}
        for run_id, payload in self._db.execute(
            "SELECT run_id, payload FROM rows WHERE kind = 'score'"
        ):
            data = _loads(payload)
            validity = data.get("validity")
            if data.get("target") == seat and isinstance(validity, (int, float)):
                per_run.setdefault(str(run_id), []).append(float(validity))
        points = math.fsum(math.fsum(v) / len(v) for v in per_run.values())
        if not per_run or points <= 0:
            return None
        return math.fsum(costs) / points

    def family_agreement(self, family: str) -> Agreement:
        """How often judges of ``family`` called pass/fail the way the run was decided.

        For calibration: every ``score`` row by a judge of the family whose run has a decision
        that names the cell's target in ``outcomes`` counts; it agrees when ``call`` equals
        that outcome. Cells of undecided runs, or targets the decision does not name, are left
        out rather than guessed.
        """
        decisions = self._decisions()
        agree = total = 0
        for run_id, payload in self._db.execute(
            "SELECT run_id, payload FROM rows WHERE kind = 'score' AND family = ?", (family,)
        ):
            decision = decisions.get(str(run_id))
            if decision is None:
                continue
            outcomes = decision[2].get("outcomes")
            data = _loads(payload)
            if not isinstance(outcomes, dict) or data.get("target") not in outcomes:
                continue
            total += 1
            agree += outcomes[data["target"]] == data.get("call")
        return Agreement(agree=agree, total=total)

    # -- verification ---------------------------------------------------------------------

    def verify(self) -> VerifyResult:
        """Walk the chain and name the first row that does not seal.

        Checked per row, in this order: ``seq`` follows the previous one (else rows were
        deleted), ``prev_hash`` is the previous row's ``row_hash`` (else rows were reordered
        or re-chained), and ``row_hash`` matches the contents (else the row was edited).
        A column whose type changed (``"12"`` for ``12``) fails the seal too. Reading happens in
        one read transaction, so a concurrent writer neither blocks nor confuses it. Never
        raises for a damaged file.
        """
        db = self._db
        try:
            db.execute("BEGIN")
        except sqlite3.Error as exc:
            return VerifyResult(False, 0, None, f"cannot read the ledger: {exc}")
        try:
            return self._verify(db)
        except sqlite3.Error as exc:
            return VerifyResult(False, 0, None, f"cannot read the ledger: {exc}")
        finally:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")

    def _verify(self, db: sqlite3.Connection) -> VerifyResult:
        warnings: list[str] = []
        missing = set(_TRIGGERS) - self._triggers()
        if missing:
            warnings.append(
                "append-only triggers are missing (dropped by hand?): " + ", ".join(sorted(missing))
            )
        prev, expected = ZERO_HASH, 1
        # Hot loop: 100,000 rows must verify well inside a second, so the seal is computed
        # inline (this is row_hash(), spelled out; a test holds the two to the same bytes) with
        # everything bound to locals, and diagnosis happens only after the loop stops. The
        # formatting doubles as the type check: int.__repr__, float.__repr__ and the JSON
        # string quoter raise TypeError on any other type, so a hand edit that changes a
        # column's type is caught without a second pass.
        sha256, quote = hashlib.sha256, _quote
        int_repr, float_repr = int.__repr__, float.__repr__
        seq = 0
        problem = ""
        try:
            for seq, run, kind, cid, seat, fam, payload, tok, cost, at, link, sealed in db.execute(
                f"{_SELECT} ORDER BY seq"
            ):
                if seq != expected or link != prev:
                    break
                text = "%s[%d,%s,%s,%s,%s,%s,%s,%s,%s,%s]" % (  # noqa: UP031 - fastest
                    prev,
                    seq,
                    quote(run),
                    quote(kind),
                    quote(cid),
                    "null" if seat is None else quote(seat),
                    "null" if fam is None else quote(fam),
                    quote(payload),
                    "null" if tok is None else int_repr(tok),
                    "null" if cost is None else float_repr(cost),
                    quote(at),
                )
                if sha256(text.encode()).hexdigest() != sealed:
                    problem = "its contents do not match its row_hash (edited after it was written)"
                    break
                prev = sealed
                expected += 1
            else:
                n = expected - 1
                reason = f"ok: {n} rows seal" + (f", head {prev[:16]}" if n else "")
                return VerifyResult(True, n, None, reason, prev, tuple(warnings))
        except (TypeError, ValueError, UnicodeError):
            problem = "a column holds a value of the wrong type (edited after it was written)"
        except sqlite3.Error as exc:
            # A hand edit can store bytes that are not UTF-8 text; the driver fails on that row
            # before handing it over, so find its seq with a query that reads only seq.
            found = db.execute(
                "SELECT seq FROM rows WHERE seq >= ? ORDER BY seq LIMIT 1", (expected,)
            ).fetchone()
            seq = expected if found is None else int(found[0])
            problem = f"it cannot be read ({exc})"
        if not problem and seq < expected:
            problem = f"its seq is out of place (expected {expected}; seq counts up from 1)"
        elif not problem and seq != expected:
            gone = (
                f"row {expected} is" if seq == expected + 1 else f"rows {expected}..{seq - 1} are"
            )
            problem = f"{gone} missing (deleted?)"
        elif not problem:
            where = "the start of the chain" if seq == 1 else f"row {seq - 1}"
            problem = (
                f"its prev_hash does not link to {where} (rows reordered, inserted or re-chained)"
            )
        reason = f"row {seq} does not seal: {problem}"
        return VerifyResult(False, expected - 1, seq, reason, prev, tuple(warnings))

    # -- run lock -------------------------------------------------------------------------

    def lock_dir(self) -> Path:
        """The folder of run-lock files, next to the ledger file."""
        return self.path.parent / f"{self.path.name}.locks"

    def acquire_run(self, contract_id: str, run_id: str) -> RunLock:
        """Take the run lock of ``contract_id`` for ``run_id``, or raise :class:`RunBusy`.

        Why: two contests on one contract at once would interleave their rows, double-spend
        and race to certify. Use as ``with ledger.acquire_run(cid, rid) as lock: ...``.
        """
        return RunLock.acquire(self.lock_dir(), contract_id, run_id)

    def run_holder(self, contract_id: str) -> RunHolder | None:
        """Who runs a contest on ``contract_id`` now, or None (a dead holder counts as none)."""
        return RunLock.holder_of(self.lock_dir(), contract_id)


def verify_file(path: str | os.PathLike[str]) -> VerifyResult:
    """Verify the ledger at ``path`` without changing it; never raises for a bad file."""
    try:
        ledger = Ledger(path, create=False)
    except LedgerError as exc:
        return VerifyResult(False, 0, None, str(exc))
    with ledger:
        return ledger.verify()


def _loads(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _where(**filters: str | None) -> tuple[str, tuple[str, ...]]:
    pairs = [(k, v) for k, v in filters.items() if v is not None]
    if not pairs:
        return "", ()
    return " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs), tuple(v for _, v in pairs)


# -- run lock ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunHolder:
    """Who holds (or last held) a contract's run lock, as it wrote about itself."""

    contract_id: str
    run_id: str
    pid: int
    host: str
    started_at: str

    def alive(self) -> bool | None:
        """Whether the holder's process exists; None when it ran on another host."""
        if self.host != socket.gethostname():
            return None
        return _pid_alive(self.pid)

    def describe(self) -> str:
        return f"run {self.run_id!r} (pid {self.pid} on {self.host}, since {self.started_at})"


class RunBusy(LedgerError):
    """Another run holds the contract's run lock; ``holder`` names it when it could be read."""

    def __init__(self, contract_id: str, holder: RunHolder | None, path: Path) -> None:
        self.contract_id = contract_id
        self.holder = holder
        self.path = path
        if holder is None:
            who = "another run that has not said who it is yet"
            advice = "try again in a moment"
        else:
            who = holder.describe()
            advice = f"wait for it to finish or stop it (kill {holder.pid})"
            if holder.alive() is False:
                advice = (
                    f"pid {holder.pid} has exited but a process it started still holds "
                    f"{path}; stop that process"
                )
        super().__init__(
            f"contract {contract_id!r} is already being run by {who}; two contests on one "
            f"contract at once would interleave and double-spend, so this one did not start: "
            f"{advice}"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _lock_name(contract_id: str) -> str:
    """A file name per contract id: readable, and unique even when the id has odd characters."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", contract_id)[:48].strip("._") or "contract"
    return f"{slug}-{hashlib.sha256(contract_id.encode()).hexdigest()[:12]}.lock"


def _read_holder(fd: int) -> RunHolder | None:
    try:
        raw = os.pread(fd, 65536, 0)
        doc = json.loads(raw) if raw.strip() else None
        if not isinstance(doc, dict):
            return None
        return RunHolder(
            contract_id=str(doc["contract_id"]),
            run_id=str(doc["run_id"]),
            pid=int(doc["pid"]),
            host=str(doc["host"]),
            started_at=str(doc["started_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _holder_of_locked(fd: int) -> RunHolder | None:
    """The holder's self-description; it writes it just after locking, so allow a moment."""
    for _ in range(20):
        holder = _read_holder(fd)
        if holder is not None:
            return holder
        time.sleep(0.01)
    return None


def _busy(exc: OSError) -> bool:
    return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


class RunLock:
    """An exclusive run lock per contract id: an ``flock`` on a file that says who holds it.

    Why ``flock``: the kernel drops it when the holder dies, even under ``kill -9``, so a
    crashed contest never blocks the next one. The file keeps the dead holder's note; the next
    run finds it, checks that the pid is gone, and exposes it as :attr:`recovered` so the
    orchestrator can record a ``run_lock_recovered`` event. The descriptor is not inherited by
    child processes (Python's default), so an agent left running cannot keep the lock alive.
    """

    def __init__(self, path: Path, holder: RunHolder, fd: int, recovered: RunHolder | None):
        self.path = path
        self.holder = holder
        self.recovered = recovered
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, lock_dir: Path, contract_id: str, run_id: str) -> RunLock:
        """Take the lock now or raise :class:`RunBusy`; it never waits."""
        _text("contract_id", contract_id)
        _text("run_id", run_id)
        lock_dir.mkdir(parents=True, exist_ok=True)
        path = lock_dir / _lock_name(contract_id)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if not _busy(exc):
                os.close(fd)
                raise
            holder = _holder_of_locked(fd)
            os.close(fd)
            raise RunBusy(contract_id, holder, path) from None
        try:
            previous = _read_holder(fd)
            recovered = previous if previous is not None and previous.alive() is not True else None
            holder = RunHolder(contract_id, run_id, os.getpid(), socket.gethostname(), _utc_now())
            note = canonical_json(
                {
                    "contract_id": holder.contract_id,
                    "run_id": holder.run_id,
                    "pid": holder.pid,
                    "host": holder.host,
                    "started_at": holder.started_at,
                }
            ).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, note + b"\n", 0)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, holder, fd, recovered)

    @staticmethod
    def holder_of(lock_dir: Path, contract_id: str) -> RunHolder | None:
        """The live holder of the contract's lock, or None."""
        path = lock_dir / _lock_name(contract_id)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as exc:
                if not _busy(exc):
                    raise
                return _holder_of_locked(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (idempotent). The file stays: deleting it would race a new holder."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
