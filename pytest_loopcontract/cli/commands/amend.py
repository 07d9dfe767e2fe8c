"""``loop-contract amend``: a person adds a DoD criterion mid-loop, lists the amendments, or
takes one back; the contract is re-pinned each time it changes."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import contract_in_repo, loop_history, repo_root
from pytest_loopcontract.loop.amendments import amendment_list, remove_amendment
from pytest_loopcontract.loop.items import amend as add_item
from pytest_loopcontract.loop.state import reduce

__all__ = ["amend", "list_amendments", "remove"]


def amend(contract: str, *, text: str, tests: Sequence[str], by: str) -> int:
    """Add the item ``text`` (checked by ``tests``) on behalf of the named person ``by``."""
    root, rel = contract_in_repo(contract)
    item = add_item(root, rel, text=text, tests=list(tests), by=by)
    print(f"added DoD item {item!r}; contract re-pinned by {by}")
    return 0


def list_amendments(*, as_json: bool = False) -> int:
    """The amendments in the order they were made, numbered for ``--remove N``."""
    listed = amendment_list(reduce(loop_history(repo_root()).read().records))
    if as_json:
        print_json(listed)
        return 0
    if not listed:
        print("no amendments")
    for a in listed:
        gone = f"  (removed by {a['removed_by']})" if a.get("removed_by") else ""
        tests = ", ".join(a.get("tests") or []) or "no tests"
        print(f"{a['n']}. {a['item']}: {a['text']} [{tests}] by {a['by']}{gone}")
    return 0


def remove(contract: str, n: int, *, by: str) -> int:
    """Remove amendment ``n`` (its DoD item) on behalf of ``by``; the contract is re-pinned."""
    root, rel = contract_in_repo(contract)
    entry = remove_amendment(root, rel, n, by=by)
    print(f"removed amendment {n} (DoD item {entry['item']!r}); contract re-pinned by {by.strip()}")
    return 0
