"""The lesson store: lessons on SQLite, looked up by dotted domain without a full scan.

Why SQLite, and why this shape: the next session's prompt needs the lessons of one domain out
of tens of thousands, quickly and from several processes at once (a contest writes lessons
while another session reads them). Loading every lesson and ranking in Python costs time that
grows with the whole store; the lessons that can apply to a domain are only those stored under
the domain itself, its ancestors and its descendants. The table is keyed (``WITHOUT ROWID``) by
``(domain, created, id)``, so that key is a clustered index: one domain's lessons sit together
on a few pages, newest last, and two index searches find exactly the related ones:

* the exact domain and each ancestor with one ``domain IN (...)`` probe
  (``a.b.c`` -> ``a.b.c``, ``a.b``, ``a``);
* descendants with one index range, ``domain >= 'a.b.c.' AND domain < 'a.b.c/'``: ``/`` is
  the character after ``.``, so the range holds exactly the domains that start with
  ``a.b.c.`` (and never a sibling such as ``a.b.cd``).

Only those rows are read, then ranked by :func:`~.lessons.rank_lessons`, so :meth:`lookup`
equals ranking the whole store (the tests hold it to that on random data).

Storage choices: WAL mode with ``synchronous=NORMAL`` (readers never block the writer; a crash
loses at most the last commits, whole), every write in one ``BEGIN IMMEDIATE`` transaction
(a batch lands whole or not at all), and an ``application_id`` stamp so that pointing the
store at another SQLite file (the ledger, say) fails with a clear error instead of adding a
table to it. A lesson seen again (same id) is not stored twice: its ``seen`` count grows and
the newest sighting's run, time and evidence replace the older ones.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

from pytest_loopcontract.contest.lessons.model import DOMAIN_PATTERN, Lesson
from pytest_loopcontract.contest.lessons.prompt import HEADER, PromptBlock, bullet, prompt_block
from pytest_loopcontract.contest.lessons.ranking import ancestors, domain_distance, rank_lessons
from pytest_loopcontract.contest.sqlite_file import SqliteFile, immediate
from pytest_loopcontract.errors import LoopContractError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "LessonStore", "LessonStoreError"]

APPLICATION_ID = 0x4C434C53  # "LCLS": a loop-contract lesson store
SCHEMA_VERSION = 1
# What is read and written are the lesson's fields, in order: a row converts to a Lesson by
# position (the table's own column order does not matter, every statement names its columns).
_COLUMNS = tuple(field.name for field in dataclasses.fields(Lesson))
_ID, _TAGS = _COLUMNS.index("id"), _COLUMNS.index("tags")
_ALL = ", ".join(_COLUMNS)
_SELECT = f"SELECT {_ALL} FROM lessons"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS lessons (
    id TEXT NOT NULL,
    domain TEXT NOT NULL,
    tags TEXT NOT NULL,
    contract_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    seat TEXT NOT NULL,
    gate TEXT NOT NULL,
    kind TEXT NOT NULL,
    what TEXT NOT NULL,
    evidence TEXT NOT NULL,
    cause TEXT NOT NULL,
    rule TEXT NOT NULL,
    created TEXT NOT NULL,
    seen INTEGER NOT NULL,
    PRIMARY KEY (domain, created, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS lessons_id ON lessons (id);
"""
_INSERT = (
    f"INSERT OR IGNORE INTO lessons ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
)
# A repeat: count it; the newer sighting (by ``created``) replaces run, time and evidence.
_BUMP = """
UPDATE lessons SET
    seen = seen + :seen,
    run_id = CASE WHEN :created >= created THEN :run_id ELSE run_id END,
    contract_id = CASE WHEN :created >= created THEN :contract_id ELSE contract_id END,
    seat = CASE WHEN :created >= created THEN :seat ELSE seat END,
    tags = CASE WHEN :created >= created THEN :tags ELSE tags END,
    what = CASE WHEN :created >= created THEN :what ELSE what END,
    evidence = CASE WHEN :created >= created THEN :evidence ELSE evidence END,
    cause = CASE WHEN :created >= created THEN :cause ELSE cause END,
    created = max(created, :created)
WHERE id = :id
"""


class LessonStoreError(LoopContractError):
    """The lesson store cannot be used as asked; the message names the file and why."""


def _row(lesson: Lesson) -> tuple[Any, ...]:
    return (
        lesson.gate,
        lesson.kind,
        lesson.what,
        lesson.evidence,
        lesson.cause,
        lesson.rule,
        lesson.id,
        lesson.domain,
        json.dumps(list(lesson.tags), ensure_ascii=False),
        lesson.contract_id,
        lesson.run_id,
        lesson.seat,
        lesson.created,
        lesson.seen,
    )


class LessonStore(SqliteFile):
    """``with LessonStore(path) as store: store.add(lessons); store.lookup(domain, tags)``.

    The file and its folder are created when missing. A connection belongs to one thread;
    open one store per thread or process (several processes may share the file).
    """

    error = LessonStoreError
    what = "lesson store"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._tags_cache: dict[str, tuple[str, ...]] = {}
        super().__init__(path)

    def _setup(self, create: bool) -> None:
        db = self._db
        app = int(db.execute("PRAGMA application_id").fetchone()[0])
        tables = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master")}
        if app not in (0, APPLICATION_ID) or (app != APPLICATION_ID and tables):
            raise LessonStoreError(
                f"{self.path} is an SQLite file of something else (application id {app:#x}, "
                f"tables {', '.join(sorted(tables))}); not a lesson store, left untouched"
            )
        version = self._user_version(SCHEMA_VERSION, "lesson store schema")
        missing = self._columns_missing("lessons", _COLUMNS) if "lessons" in tables else []
        if missing:
            raise LessonStoreError(
                f"{self.path}: table 'lessons' lacks columns {missing}; not a lesson store"
            )
        self._wal()
        if app != APPLICATION_ID or version != SCHEMA_VERSION or "lessons" not in tables:
            # a failure here is reported as "not a usable lesson store", so keep SQLite's error
            with immediate(db, lambda exc: exc):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _refused(self, exc: sqlite3.Error) -> LessonStoreError:
        return LessonStoreError(f"cannot write to lesson store {self.path}: {exc}")

    # ------------------------------------------------------------------ writing

    def add(self, lessons: Iterable[Lesson]) -> int:
        """Store lessons in one transaction; returns how many were new.

        A lesson whose id is already stored is a repeat: its ``seen`` grows by the repeat's
        ``seen``, and when the repeat is at least as new (``created``) its run, seat, contract,
        tags, what, evidence and cause replace the stored ones. If anything fails (a bad
        lesson, an error from the iterable, a crash), nothing of the batch is stored.
        """
        db = self._db
        added = 0
        try:
            with immediate(db, self._refused):
                for lesson in lessons:
                    if not isinstance(lesson, Lesson):
                        raise TypeError(f"not a Lesson: {lesson!r}")
                    row = _row(lesson)
                    if db.execute(_INSERT, row).rowcount == 1:
                        added += 1
                    else:
                        db.execute(_BUMP, dict(zip(_COLUMNS, row, strict=True)))
        except sqlite3.Error as exc:
            raise self._refused(exc) from None
        return added

    # ------------------------------------------------------------------ reading

    def _tags(self, text: str) -> tuple[str, ...]:
        tags = self._tags_cache.get(text)
        if tags is None:
            loaded = json.loads(text)
            if not isinstance(loaded, list):
                raise ValueError(f"tags {text!r} are not a JSON list")
            tags = tuple(loaded)
            if len(self._tags_cache) < 4096:
                self._tags_cache[text] = tags
        return tags

    def _lessons(self, rows: Iterable[tuple[Any, ...]]) -> list[Lesson]:
        """Rows (in :data:`_COLUMNS` order, the field order of :class:`Lesson`) to lessons."""
        out: list[Lesson] = []
        append, tags_of = out.append, self._tags
        row: tuple[Any, ...] = ()
        try:
            for row in rows:
                values = list(row)
                values[_TAGS] = tags_of(values[_TAGS])  # JSON text in the row
                append(Lesson(*values))
        except (TypeError, ValueError) as exc:
            raise LessonStoreError(
                f"{self.path}: stored lesson {row[_ID] if row else '?'!r} is invalid: {exc}"
            ) from None
        return out

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise LessonStoreError(f"cannot read lesson store {self.path}: {exc}") from None

    @staticmethod
    def _related(columns: str, domain: str) -> tuple[str, list[str]]:
        """A query for ``columns`` of every lesson related to ``domain``, and its parameters.

        Two searches of the ``(domain, created, id)`` key, glued with ``UNION ALL``: they
        cannot overlap (the exact domain and its ancestors are never longer than ``domain``;
        every descendant is), and ``UNION ALL`` skips the de-duplication an ``OR`` would pay.
        """
        if not isinstance(domain, str) or not DOMAIN_PATTERN.fullmatch(domain):
            raise ValueError(f"domain {domain!r} is not a dotted lower-case domain")
        exact = [domain, *ancestors(domain)]
        marks = ", ".join("?" for _ in exact)
        sql = (
            f"SELECT {columns} FROM lessons WHERE domain IN ({marks}) UNION ALL "
            f"SELECT {columns} FROM lessons WHERE domain >= ? AND domain < ?"
        )
        return sql, [*exact, domain + ".", domain + "/"]

    def lookup(
        self, domain: str, tags: Iterable[str] = (), *, limit: int | None = None
    ) -> list[Lesson]:
        """The lessons that apply to ``domain``, ranked as :func:`rank_lessons` ranks them.

        Reads only the rows of the domain, its ancestors and its descendants, through the
        clustered ``(domain, created, id)`` key. With ``limit``, the ranking runs on the light
        columns (id, domain, tags, created) and only the ``limit`` best rows are read in full.
        """
        tags = tuple(tags)
        if limit is None:
            rows = self._read(*self._related(_ALL, domain))
            return rank_lessons(self._lessons(rows), domain=domain, tags=tags)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an integer >= 0, got {limit!r}")
        ids = self._ranked_ids(domain, tags)[:limit]
        return self._fetch(ids)

    def _ranked_ids(self, domain: str, tags: tuple[str, ...]) -> list[str]:
        wanted = frozenset(tags)
        distances: dict[str, int | None] = {}
        keyed: list[tuple[int, int, str, str]] = []
        for lesson_id, lesson_domain, tag_text, created in self._read(
            *self._related("id, domain, tags, created", domain)
        ):
            if lesson_domain in distances:
                distance = distances[lesson_domain]
            else:
                distance = distances[lesson_domain] = domain_distance(lesson_domain, domain)
            if distance is None:  # pragma: no cover - the filter admits related domains only
                continue
            try:
                lesson_tags = self._tags(tag_text)
            except (TypeError, ValueError) as exc:
                raise LessonStoreError(
                    f"{self.path}: stored lesson {lesson_id!r} is invalid: {exc}"
                ) from None
            overlap = len(wanted.intersection(lesson_tags)) if wanted else 0
            keyed.append((-distance, overlap, created, lesson_id))
        keyed.sort(key=lambda k: k[3])
        keyed.sort(key=lambda k: k[:3], reverse=True)  # the order of rank_lessons
        return [k[3] for k in keyed]

    def _fetch(self, ids: list[str]) -> list[Lesson]:
        found: dict[str, Lesson] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for lesson in self._lessons(self._read(f"{_SELECT} WHERE id IN ({marks})", chunk)):
                found[lesson.id] = lesson
        return [found[i] for i in ids if i in found]

    def prompt(self, domain: str, tags: Iterable[str] = (), *, cap_chars: int) -> PromptBlock:
        """``prompt_block(lookup(domain, tags), cap_chars=cap_chars)``, reading less.

        The ranking runs on the light columns; full rows are then read in rank order, in
        growing chunks, only until their bullets pass the cap (no longer prefix can fit after
        that). The dropped count still covers every lesson that applies.
        """
        tags = tuple(tags)
        ids = self._ranked_ids(domain, tags)
        fetched: list[Lesson] = []
        size = len(HEADER)
        offset, step = 0, 8
        while offset < len(ids) and size <= cap_chars:
            chunk = self._fetch(ids[offset : offset + step])
            offset += step
            step *= 2
            size += sum(1 + len(bullet(lesson)) for lesson in chunk)
            fetched.extend(chunk)
        return prompt_block(fetched, cap_chars=cap_chars, total=max(len(ids), len(fetched)))

    def all(self) -> list[Lesson]:
        """Every stored lesson, by domain then id."""
        return self._lessons(self._read(f"{_SELECT} ORDER BY domain, id"))

    def domains_of(self, contract_id: str) -> dict[str, int]:
        """The domains the lessons of ``contract_id`` are filed under, with their counts: where
        to look when the contract's domain holds none (the domain changed since they were
        written)."""
        rows = self._read(
            "SELECT domain, count(*) FROM lessons WHERE contract_id = ? "
            "GROUP BY domain ORDER BY domain",
            (contract_id,),
        )
        return {str(domain): int(n) for domain, n in rows}

    def count(self) -> int:
        for (n,) in self._read("SELECT count(*) FROM lessons"):
            return int(n)
        return 0  # pragma: no cover - count(*) always answers one row

    def explain(self, domain: str) -> list[str]:
        """SQLite's query plan for :meth:`lookup` of ``domain`` (to check it uses the key)."""
        sql, params = self._related(_ALL, domain)
        return [str(r[-1]) for r in self._read(f"EXPLAIN QUERY PLAN {sql}", params)]
