"""``loop-contract pause``: no new agent turn until ``loop-contract resume``."""

from __future__ import annotations

from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.loop.wait import pause_loop

__all__ = ["pause"]


def pause(*, by: str | None, reason: str | None) -> int:
    """Record a pause; a turn already running finishes, the next one waits."""
    who = pause_loop(loop_history(repo_root()), by, reason)
    print(f"paused by {who}: the loop starts no new turn until 'loop-contract resume'")
    return 0
