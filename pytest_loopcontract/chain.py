"""The hash chain both logs use: the loop's history (JSON lines) and the contest ledger (SQLite).

Why a chain: each entry carries the hash that seals the one before it, so an entry edited,
removed, inserted or moved after it was written no longer links, and the first one that does
not is named. The history links each line to the SHA-256 of the previous line's bytes; the
ledger seals each row as the SHA-256 of the previous seal followed by the row's canonical
JSON. Both start from :data:`ZERO_HASH` and both tell a broken link the same way
(:func:`link_fault`); each words the fault for its own readers. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from typing import Final, Literal

__all__ = ["ZERO_HASH", "LinkFault", "digest", "link_fault", "seal"]

ZERO_HASH: Final = "0" * 64
"""What the first entry of a chain links to: no entry came before it."""

LinkFault = Literal["", "removed", "reordered", "relinked"]


def digest(data: bytes) -> str:
    """SHA-256 hex of ``data``: the history's hash of one line (without its newline)."""
    return hashlib.sha256(data).hexdigest()


def seal(prev_hash: str, body: str) -> str:
    """SHA-256 hex of ``prev_hash`` followed by ``body``: the ledger's seal of one row."""
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def link_fault(expected_seq: int | None, seq: int, links: bool) -> LinkFault:
    """What is wrong between an entry and the one before it ("" when nothing is).

    ``expected_seq`` is the previous entry's seq plus one (None when the previous entry could
    not be read, so no seq is expected); ``links`` says whether the entry's link matches the
    previous entry's hash. A seq past the expected one means entries were removed; one before
    it (a repeat or a step back) means entries were inserted, duplicated or reordered; a seq in
    place with a link that does not match means the previous entry was changed, or this one
    was chained onto another.
    """
    if expected_seq is not None and seq > expected_seq:
        return "removed"
    if expected_seq is not None and seq < expected_seq:
        return "reordered"
    return "" if links else "relinked"
