"""``loop-contract amend``: a person adds a DoD criterion mid-loop; the contract is re-pinned."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.cli.repo import contract_in_repo
from pytest_loopcontract.loop.items import amend as add_item

__all__ = ["amend"]


def amend(contract: str, *, text: str, tests: Sequence[str], by: str) -> int:
    """Add the item ``text`` (checked by ``tests``) on behalf of the named person ``by``."""
    root, rel = contract_in_repo(contract)
    item = add_item(root, rel, text=text, tests=list(tests), by=by)
    print(f"added DoD item {item!r}; contract re-pinned by {by}")
    return 0
