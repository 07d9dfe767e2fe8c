"""``loop-contract next``: claim the next DoD item that is not done yet."""

from __future__ import annotations

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, repo_root
from pytest_loopcontract.loop.items import claim_next

__all__ = ["next_item"]


def next_item(*, as_json: bool = False) -> int:
    """Print the claimed item and the tests that must pass for it (JSON ``null`` when all done)."""
    root = repo_root()
    item = claim_next(root, adopted_contract(root))
    if as_json:
        print_json(item)
    elif item is None:
        print("every DoD item is done")
    else:
        print(f"next: {item['id']}: {item['text']}")
        for test in item["tests"]:
            print(f"  must pass: {test}")
        print(f"  (tests marked {item['marker']} count too); then: loop-contract done {item['id']}")
    return 0
