"""Verifying the ledger's chain: walk the rows, name the first that does not seal, and why.

The walk is the ledger's one hot loop (100,000 rows well inside a
second) and its diagnosis is words for a person; ``Ledger.verify``
(:mod:`pytest_loopcontract.contest.ledger`) runs it inside one read transaction. Links are
judged the way the history's are (:func:`pytest_loopcontract.chain.link_fault`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from pytest_loopcontract.chain import ZERO_HASH, link_fault, seal
from pytest_loopcontract.contest.ledger.rows import row_body

__all__ = ["VerifyResult", "Walk", "link_problem", "walk_chain"]


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


@dataclass
class Walk:
    """Where a walk down the chain stopped: the seq it ``expected`` next, the ``seq`` and
    ``link`` (prev_hash) of the row it stopped at, the last good seal ``prev``, and a
    ``problem`` found in the row itself ("" when the row did not link)."""

    expected: int = 1
    seq: int = 0
    link: str = ZERO_HASH
    prev: str = ZERO_HASH
    problem: str = ""
    intact: bool = False


def walk_chain(db: sqlite3.Connection, select: str) -> Walk:
    """Walk the rows in seq order until one does not link or does not seal.

    Hot loop: 100,000 rows must verify well inside a second, so everything is bound to
    locals and diagnosis happens only after the loop stops. :func:`row_body` raises
    ``TypeError`` on a column of the wrong type, so a hand edit that changes one is caught
    without a second pass.
    """
    walk = Walk()
    body, seal_of = row_body, seal
    prev, expected = ZERO_HASH, 1
    try:
        for row in db.execute(select):
            walk.seq, walk.link = row[0], row[10]
            if walk.seq != expected or walk.link != prev:
                break
            if seal_of(prev, body(*row[:10])) != row[11]:
                walk.problem = "its contents do not match its row_hash (edited after writing)"
                break
            prev = row[11]
            expected += 1
        else:
            walk.intact = True
    except (TypeError, ValueError, UnicodeError):
        walk.problem = "a column holds a value of the wrong type (edited after it was written)"
    except sqlite3.Error as exc:
        # A hand edit can store bytes that are not UTF-8 text; the driver fails on that row
        # before handing it over, so find its seq with a query that reads only seq.
        found = db.execute(
            "SELECT seq FROM rows WHERE seq >= ? ORDER BY seq LIMIT 1", (expected,)
        ).fetchone()
        walk.seq = expected if found is None else int(found[0])
        walk.problem = f"it cannot be read ({exc})"
    walk.prev, walk.expected = prev, expected
    return walk


def link_problem(walk: Walk) -> str:
    """Why the row the walk stopped at does not link to the one before it."""
    seq, expected = walk.seq, walk.expected
    fault = link_fault(expected, seq, walk.link == walk.prev)
    if fault == "reordered":
        return f"its seq is out of place (expected {expected}; seq counts up from 1)"
    if fault == "removed":
        gone = f"row {expected} is" if seq == expected + 1 else f"rows {expected}..{seq - 1} are"
        return f"{gone} missing (deleted?)"
    where = "the start of the chain" if seq == 1 else f"row {seq - 1}"
    return f"its prev_hash does not link to {where} (rows reordered, inserted or re-chained)"
