"""``loop-contract clear``: end the loop at the next turn boundary (barriers and pause go too)."""

from __future__ import annotations

from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.loop.wait import clear_loop

__all__ = ["clear"]


def clear(*, by: str | None, reason: str | None) -> int:
    """Record the request; a turn already running finishes first, then the loop stops."""
    who = clear_loop(loop_history(repo_root()), by, reason)
    print(f"cleared by {who}: the loop stops before its next turn (exit 20)")
    return 0
