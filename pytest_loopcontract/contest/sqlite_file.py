"""The SQLite lifecycle the ledger and the lesson store share: open, check, write, close.

Why one: both are a single file that several processes (seats, judges, the orchestrator, a
second session) read and write at once, so both need the same choices made the same way: a
busy timeout rather than an instant "database is locked", WAL mode with ``synchronous=NORMAL``
(readers never block the writer; a crash loses at most the last commits, whole), every write
in one ``BEGIN IMMEDIATE`` transaction (a batch lands whole or not at all), a schema version
that refuses files written by a newer release, and errors that name the file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

__all__ = ["BUSY_TIMEOUT_S", "SqliteFile", "immediate"]

BUSY_TIMEOUT_S = 30.0
_S = TypeVar("_S", bound="SqliteFile")


@contextlib.contextmanager
def immediate(
    db: sqlite3.Connection, refused: Callable[[sqlite3.Error], Exception]
) -> Iterator[None]:
    """One write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any error.

    Why ``IMMEDIATE``: it takes the write lock before anything is read, so "read the tail,
    then insert" cannot interleave with another process doing the same; a second writer waits
    (busy timeout). ``refused`` turns a failure to begin (busy past the timeout, a read-only
    file) into the caller's error.
    """
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise refused(exc) from None
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


class SqliteFile:
    """One SQLite file and its connection: ``with Store(path) as store: ...``.

    Subclasses name their error (``error``), what the file is (``what``, for messages), and
    check or create their schema in :meth:`_setup`; any SQLite error there closes the
    connection and is reported as "not a usable <what>".
    """

    error: type[Exception] = RuntimeError
    what = "SQLite file"

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, shared: bool = False
    ) -> None:
        """Open ``path`` (its folder is made when ``create``). ``shared`` lets threads share
        the connection; the subclass must then serialize its writes."""
        self.path = Path(path)
        self.notices: list[str] = []
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=not shared,
            )
        except (OSError, sqlite3.Error) as exc:
            raise self.error(f"cannot open {self.what} {self.path}: {exc}") from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._setup(create)
        except sqlite3.Error as exc:
            self._db.close()
            raise self.error(f"{self.path} is not a usable {self.what}: {exc}") from None
        except BaseException:
            self._db.close()
            raise

    def _setup(self, create: bool) -> None:
        """Check (and, when ``create``, make) the schema; raise ``self.error`` when unusable."""

    def _user_version(self, known: int, schema: str) -> int:
        """The file's schema version; refuses one written by a newer release."""
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > known:
            raise self.error(
                f"{self.path} was written by a newer loop-contract ({schema} {version}, "
                f"this one knows {known}); upgrade to read it"
            )
        return version

    def _wal(self) -> None:
        """WAL mode and ``synchronous=NORMAL``; a file system that cannot do WAL is noted."""
        mode = str(self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        if mode != "wal":
            self.notices.append(f"journal mode is {mode!r}, not WAL (file system limits?)")
        self._db.execute("PRAGMA synchronous = NORMAL")

    def _columns_missing(self, table: str, columns: tuple[str, ...]) -> list[str]:
        """Which of ``columns`` the existing ``table`` lacks (sorted)."""
        present = {str(r[1]) for r in self._db.execute(f"PRAGMA table_info({table})")}
        return sorted(set(columns) - present)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._db.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
