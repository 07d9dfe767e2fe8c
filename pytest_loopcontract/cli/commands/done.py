"""``loop-contract done ITEM``: an item is done only when an isolated verification shows it."""

from __future__ import annotations

from pytest_loopcontract.cli.display import showing_progress
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, repo_root
from pytest_loopcontract.idtext import readable_nodeid
from pytest_loopcontract.loop.items import DoneResult, mark_done
from pytest_loopcontract.verdict import EXIT_NOT_MET

__all__ = ["done"]


def done(item: str, *, as_json: bool = False, quiet: bool = False) -> int:
    """0 when the item's tests pass (and its ``on_item_done`` hook succeeds), else 20."""
    root = repo_root()
    with showing_progress("done", quiet=quiet):
        result = mark_done(root, adopted_contract(root), item)
    if as_json:
        print_json(
            {
                "item": result.item,
                "done": result.done,
                "failing": result.failing,
                "hook_exit": result.hook_exit,
            }
        )
    else:
        _print_text(result)
    return 0 if result.done and result.hook_exit in (None, 0) else EXIT_NOT_MET


def _print_text(result: DoneResult) -> None:
    if result.done and result.hook_exit not in (None, 0):
        print(
            f"{result.item}: tests pass, but on_item_done exited {result.hook_exit}; "
            "the item stays open until its hook succeeds"
        )
    elif result.done:
        hook = "" if result.hook_exit is None else " (on_item_done exited 0)"
        print(f"{result.item}: done, shown by an isolated verification{hook}")
    else:
        print(f"{result.item}: NOT done - the verifier says so, whatever the agent says:")
        for test in result.failing:
            print(f"  {test['outcome']}: {readable_nodeid(test['nodeid'])}")
