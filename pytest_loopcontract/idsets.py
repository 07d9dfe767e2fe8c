"""Compact, readable sets of pytest node ids, for ``baseline.json`` and the verdict.

A 60,000-test suite repeats the same file and class in every node id; written as plain lists
the outcome sets of one baseline came to about 20 MB. An *id set* says each file and class
once and keeps the rest of every id as it is, sorted, so a person still reads it::

    {"tests/test_io.py": {"": ["test_open", "test_read[utf-8]"],
                          "TestWriter": ["test_flush", "test_write[1]"]},
     "": {"": ["tests/test_broken.py"]}}

File, then the class path (``""`` for module-level tests), then the last part of the id
(function name and parameters). A node id that does not split that way (a collection error of
a whole file, the session's ``""``) is kept whole under the file key ``""``. Packing is
lossless: :func:`unpack_ids` gives back exactly the ids that went in (as a sorted set).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["IdSet", "count_ids", "pack_ids", "unpack_ids"]

IdSet = dict[str, dict[str, list[str]]]

WHOLE = ""  # the file key under which ids that do not split are kept whole


def join_id(file: str, owner: str, leaf: str) -> str:
    """The node id of one entry of an id set."""
    if file == WHOLE:
        return leaf
    return f"{file}::{owner}::{leaf}" if owner else f"{file}::{leaf}"


def _split(nodeid: str) -> tuple[str, str, str]:
    """(file, class path, last part) of a node id, or (``""``, ``""``, id) when it does not
    split so that joining gives it back. ``::`` inside the parameters never splits."""
    file, sep, rest = nodeid.partition("::")
    if sep and file and rest and "::" not in rest:
        return file, "", rest  # a module-level test, most of any suite: joins back as it was
    if sep and file and rest:
        cut = rest.split("[", 1)[0].rfind("::")
        owner, leaf = (rest[:cut], rest[cut + 2 :]) if cut >= 0 else ("", rest)
        if leaf and (owner or cut < 0) and join_id(file, owner, leaf) == nodeid:
            return file, owner, leaf
    return WHOLE, "", nodeid


def pack_ids(ids: Iterable[str]) -> IdSet:
    """The id set of ``ids`` (duplicates collapse; files, classes and leaves sorted)."""
    groups: dict[str, dict[str, set[str]]] = {}
    for nodeid in ids:
        file, owner, leaf = _split(nodeid)
        owners = groups.get(file)
        if owners is None:
            owners = groups[file] = {}
        leaves = owners.get(owner)
        if leaves is None:
            leaves = owners[owner] = set()
        leaves.add(leaf)
    return {
        file: {owner: sorted(leaves) for owner, leaves in sorted(owners.items())}
        for file, owners in sorted(groups.items())
    }


def unpack_ids(data: Any, what: str = "id set") -> list[str]:
    """The node ids of an id set read from JSON; ``ValueError`` naming ``what`` when it is
    not one (the readers turn that into "take the baseline again" or a schema error)."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not an object of files")
    out: list[str] = []
    for file, owners in data.items():
        if not isinstance(owners, dict):
            raise ValueError(f"{what}: {file!r} does not map class paths to lists")
        for owner, leaves in owners.items():
            if not isinstance(leaves, list) or not all(isinstance(x, str) for x in leaves):
                raise ValueError(f"{what}: {file!r} / {owner!r} is not a list of strings")
            out.extend(join_id(str(file), str(owner), leaf) for leaf in leaves)
    return out


def count_ids(data: Any) -> int:
    """How many ids an id set holds (0 for anything that is not one)."""
    if not isinstance(data, dict):
        return 0
    return sum(
        len(leaves)
        for owners in data.values()
        if isinstance(owners, dict)
        for leaves in owners.values()
        if isinstance(leaves, list)
    )
