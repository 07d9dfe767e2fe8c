"""``loop-contract unwait``: drop one barrier, or every one, so the loop goes on."""

from __future__ import annotations

from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.loop.wait import drop_barriers

__all__ = ["unwait"]


def unwait(barrier_id: str | None, *, by: str | None) -> int:
    """Clear ``barrier_id`` (every standing barrier when None); recorded with who asked."""
    history = loop_history(repo_root())
    gone = drop_barriers(history, reduce(history.read().records), barrier_id, by)
    print(f"dropped {', '.join(gone)}" if gone else "no barrier was standing")
    return 0
