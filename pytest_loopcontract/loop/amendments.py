"""``amend --list`` and ``amend --remove N``: the criteria people added, and taking one back.

The list is a fold of the history (``amend`` and ``amend_removed`` records, numbered from 1 in
the order they were made, so a number never changes meaning); removing one deletes exactly the
lines its ``amend`` appended under ``dod:`` and re-pins the contract under the remover's name,
like the amendment itself did (:func:`pytest_loopcontract.loop.items.repin_contract`). The
contract is parsed before and after: if anything other than that one item would change (a
hand-edited layout the removal cannot find), nothing is written and the message says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.items import ItemError, pinned_contract_bytes, repin_contract
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.statedir import StateDir

__all__ = ["amendment_list", "remove_amendment", "without_item"]


def amendment_list(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The amendments, numbered ``n`` from 1, each with ``removed_by`` once taken back."""
    return [
        {"n": n, **{k: a.get(k) for k in ("item", "text", "tests", "by", "seq", "removed_by")}}
        for n, a in enumerate(state["contract"]["amendments"], start=1)
    ]


def without_item(text: str, item_id: str) -> str | None:
    """``text`` without the DoD entry ``- id: ITEM`` and its indented lines (``dod: []`` when
    it was the last); None when the entry cannot be found in that shape."""
    lines = text.splitlines(keepends=True)
    head = re.compile(rf"^(?P<pad>[ \t]*)-[ \t]+id:[ \t]*['\"]?{re.escape(item_id)}['\"]?[ \t]*$")
    for i, line in enumerate(lines):
        found = head.match(line.rstrip("\r\n"))
        if found is None:
            continue
        col = len(found.group("pad"))
        end = i + 1
        while end < len(lines):
            row = lines[end]
            body = row.lstrip(" \t")
            if body.strip() and (len(row) - len(body) <= col):
                break
            end += 1
        rest = lines[:i] + lines[end:]
        return _empty_dod("".join(rest))
    return None


def _empty_dod(text: str) -> str:
    """A ``dod:`` key left with no entries becomes ``dod: []`` (an empty key reads as null)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip() != "dod:":
            continue
        following = next((r for r in lines[i + 1 :] if r.strip()), "")
        if not following.startswith((" ", "\t", "-")):
            lines[i] = "dod: []\n"
    return "".join(lines)


def remove_amendment(root: Path, contract_relpath: str, n: int, *, by: str) -> dict[str, Any]:
    """Take back amendment ``n``; returns it. Refused (ItemError) when unknown, already
    removed, nameless, or when the contract no longer holds the item as it was added."""
    if not by.strip():
        raise ItemError("removing an amendment is done by a named person: pass --by NAME")
    history = History(StateDir.of(root).folder)
    listed = amendment_list(reduce(history.read().records))
    if not 1 <= n <= len(listed):
        raise ItemError(
            f"no amendment {n}: there are {len(listed)} ('loop-contract amend --list' numbers them)"
        )
    entry = listed[n - 1]
    if entry.get("removed_by"):
        raise ItemError(
            f"amendment {n} ({entry['item']}) was already removed by {entry['removed_by']}"
        )
    item = str(entry["item"])
    current = pinned_contract_bytes(root, contract_relpath)
    before = parse_contract(current, Path(contract_relpath))
    text = without_item(current.decode("utf-8"), item)
    after_ids = None
    if text is not None:
        after = parse_contract(text.encode("utf-8"), Path(contract_relpath))
        after_ids = [i.id for i in after.dod]
    if after_ids != [i.id for i in before.dod if i.id != item]:
        raise ItemError(
            f"{contract_relpath}: the item {item!r} is not where amendment {n} put it; "
            "nothing was changed (a person edits the contract and re-runs 'loop-contract baseline')"
        )
    assert text is not None
    repin_contract(
        root,
        contract_relpath,
        text.encode("utf-8"),
        "amend_removed",
        {"n": n, "item": item, "by": by.strip()},
    )
    return entry
