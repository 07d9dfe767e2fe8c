"""``loop-contract resume``: lift a pause (``loop --resume`` restarts a stopped loop instead)."""

from __future__ import annotations

from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.loop.wait import resume_loop

__all__ = ["resume"]


def resume(*, by: str | None) -> int:
    """Record that the pause is over; the parked loop takes its next turn."""
    history = loop_history(repo_root())
    if resume_loop(history, reduce(history.read().records), by):
        print("resumed: the loop takes its next turn")
    else:
        print(
            "the loop was not paused; nothing recorded "
            "(a stopped loop goes on with 'loop-contract loop --resume')"
        )
    return 0
