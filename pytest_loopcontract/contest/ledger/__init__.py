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

The rows themselves (kinds, payload checks, the seal) are
:mod:`pytest_loopcontract.contest.ledger.rows`; the questions asked of them
:mod:`pytest_loopcontract.contest.ledger.queries`; the run lock
:mod:`pytest_loopcontract.contest.run_lock`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.contest.ledger.integrity import VerifyResult, link_problem, walk_chain
from pytest_loopcontract.contest.ledger.queries import LedgerQueries
from pytest_loopcontract.contest.ledger.rows import (
    Entry,
    LedgerError,
    Row,
    Values,
    prepare,
    row_hash,
)
from pytest_loopcontract.contest.run_lock import RunHolder, RunLock
from pytest_loopcontract.contest.sqlite_file import SqliteFile, immediate
from pytest_loopcontract.fsio import utc_stamp
from pytest_loopcontract.plural import plural

__all__ = ["SCHEMA_VERSION", "Ledger", "verify_file"]

SCHEMA_VERSION = 1

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


class Ledger(LedgerQueries, SqliteFile):
    """The ledger file: ``with Ledger(path) as ledger: ledger.append(...)``.

    ``create=False`` opens an existing ledger without touching its schema (what ``loop-contract
    ledger verify`` wants: inspecting a file must not repair it). A connection belongs to one
    thread; open one ``Ledger`` per thread or process.
    """

    error = LedgerError
    what = "SQLite ledger"

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self._write_lock = threading.Lock()
        if not create and not Path(path).is_file():
            raise LedgerError(f"no ledger at {path}")
        # Threads of one contest (seats and judges finishing at once) share this connection;
        # ``append_many`` serializes them with ``_write_lock``, so no two use it at once.
        super().__init__(path, create=create, shared=True)

    def _setup(self, create: bool) -> None:
        db = self._db
        version = self._user_version(SCHEMA_VERSION, "ledger schema")
        missing_columns = self._columns_missing("rows", _COLUMNS) if self._has_table() else []
        if missing_columns:
            raise LedgerError(
                f"{self.path}: table 'rows' lacks columns {missing_columns}; "
                "not a loop-contract ledger"
            )
        if create:
            self._wal()
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
        prepared = [prepare(e) for e in entries]
        if not prepared:
            return []
        with self._write_lock:
            return self._append_prepared(prepared)

    def _append_prepared(self, prepared: list[Values]) -> list[Row]:
        db = self._db
        rows: list[Row] = []
        with immediate(db, self._busy):
            tail = db.execute("SELECT seq, row_hash FROM rows ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (0, ZERO_HASH) if tail is None else (int(tail[0]), str(tail[1]))
            created_at = utc_stamp()
            for values in prepared:
                seq += 1
                sealed = row_hash(prev, seq, *values, created_at)
                rows.append(Row(seq, *values, created_at, prev, sealed))
                prev = sealed
            db.executemany(
                f"INSERT INTO rows ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * 12)})",
                [tuple(getattr(r, column) for column in _COLUMNS) for r in rows],
            )
        return rows

    def _busy(self, exc: sqlite3.Error) -> LedgerError:
        return LedgerError(f"ledger {self.path} is busy or read-only: {exc}")

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
        walk = walk_chain(db, f"{_SELECT} ORDER BY seq")
        n = walk.expected - 1
        if walk.intact:
            reason = f"ok: {plural(n, 'row')} seal{'s' if n == 1 else ''}" + (
                f", head {walk.prev[:16]}" if n else ""
            )
            return VerifyResult(True, n, None, reason, walk.prev, tuple(warnings))
        reason = f"row {walk.seq} does not seal: {walk.problem or link_problem(walk)}"
        return VerifyResult(False, n, walk.seq, reason, walk.prev, tuple(warnings))

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


def _where(**filters: str | None) -> tuple[str, tuple[str, ...]]:
    pairs = [(k, v) for k, v in filters.items() if v is not None]
    if not pairs:
        return "", ()
    return " WHERE " + " AND ".join(f"{k} = ?" for k, _ in pairs), tuple(v for _, v in pairs)
