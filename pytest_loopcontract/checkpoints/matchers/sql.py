"""SQL matchers: DROP, TRUNCATE and DELETE without a WHERE that narrows it.

Search tools (``grep``, ``rg``, ``ag``, ``ack``) and ``git`` itself never trigger them (``grep
"DROP TABLE users" dump.sql`` and commit messages are text); ``echo``/``printf``/``cat`` trigger
them only when their output is piped on. A bare keyword (``grep DROP file``) never matches: a
statement needs its object (``DROP TABLE users``). Lower-case SQL counts in SQL clients
(``psql``, ``mysql``, ``sqlite3``…), in interpreters' arguments (``python -c``) and in
here-documents; elsewhere only upper-case keywords do, so ``gh pr create --body "delete from the
list"`` is prose. ``TRUNCATE x`` without ``TABLE`` counts only in upper case or as a SQL
client's input.
"""

from __future__ import annotations

import re

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.vocabulary import PRINTERS, SEARCHERS, word_set

__all__ = ["SQL_HINTS", "sql_delete", "sql_drop", "sql_truncate"]

_SQL_SILENT = SEARCHERS | {"git"}
_SQL_PRINTERS = PRINTERS | {"cat", "tee"}
_SQL_CLIENTS = word_set(
    "psql mysql mariadb sqlite3 sqlite sqlcmd clickhouse-client clickhouse duckdb pgcli mycli "
    "litecli usql sqlplus snowsql cockroach bq isql trino presto spark-sql beeline cqlsh"
)


SQL_HINTS = ("drop", "truncate", "delete")
_SQL_CODE = _SQL_CLIENTS | word_set("python perl ruby node nodejs php bun deno java dotnet go")
_IDENT = r"[\w.\"`\[\]]"


def _both(source: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(upper-case keywords only, any case): prose says "delete from the list", SQL in code
    and in SQL clients may be lower case."""
    return re.compile(source), re.compile(source, re.IGNORECASE)


_DROP = _both(rf"\bDROP\s+(?:TEMPORARY\s+)?(?:TABLE|DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?{_IDENT}")
_TRUNCATE_TABLE = _both(rf"\bTRUNCATE\s+TABLE\s+{_IDENT}")
_TRUNCATE_BARE = _both(rf"\bTRUNCATE\s+(?:ONLY\s+)?{_IDENT}")
_DELETE = _both(rf"\bDELETE\s+FROM\s+{_IDENT}+")
_WHERE_RE = re.compile(r"(?i)\bWHERE\b")
_WHERE_ALL_RE = re.compile(r"(?i)\bWHERE\s+(?:1\s*=\s*1|TRUE|1|'1'\s*=\s*'1')\s*[\"')]*\s*$")


def _sql_texts(cmd: Command) -> list[tuple[str, bool, bool]]:
    """The strings of a command that may be SQL someone runs (see the module notes), each with
    (read in any case: code or SQL input; a SQL client's own input)."""
    name = cmd.program
    if not name or name in _SQL_SILENT or (name in _SQL_PRINTERS and not cmd.piped):
        return []
    code = name in _SQL_CODE
    client = name in _SQL_CLIENTS
    texts = [(arg, code, client) for arg in cmd.argv[1:]]
    if cmd.stdin:
        texts.append((cmd.stdin, True, True))
    return texts


def _statement(text: str, start: int) -> str:
    """The statement that starts at ``start``: up to its semicolon, at most 160 characters."""
    end = text.find(";", start)
    end = len(text) if end < 0 else end + 1
    return text[start : min(end, start + 160)]


def sql_drop(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """DROP TABLE, DATABASE or SCHEMA."""
    for text, any_case, _ in _sql_texts(cmd):
        m = _DROP[any_case].search(text)
        if m is not None:
            return single_hit(_statement(text, m.start()), "DROP")
    return ()


def sql_truncate(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """TRUNCATE [TABLE] of a named table."""
    for text, any_case, client in _sql_texts(cmd):
        m = _TRUNCATE_TABLE[any_case].search(text) or _TRUNCATE_BARE[client].search(text)
        if m is not None:
            return single_hit(_statement(text, m.start()), "TRUNCATE")
    return ()


def sql_delete(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """DELETE FROM without a WHERE, or with one that matches every row."""
    for text, any_case, _ in _sql_texts(cmd):
        for m in _DELETE[any_case].finditer(text):
            stmt = _statement(text, m.start())
            rest = stmt[m.end() - m.start() :].rstrip(" ;\n")
            if not _WHERE_RE.search(rest):
                return single_hit(stmt, "DELETE without WHERE")
            if _WHERE_ALL_RE.search(rest):
                return single_hit(stmt, "DELETE with a WHERE that matches every row")
    return ()
