"""``loop-contract wait``: park the loop on background work (no turn is started meanwhile)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.cli.commands.loop import strip_separator
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.loop.control import describe_barrier
from pytest_loopcontract.loop.wait import set_barrier

__all__ = ["wait"]


def wait(
    *,
    pid: int | None,
    seconds: float | None,
    until_exit: Sequence[str] | None,
    reason: str | None,
    as_json: bool = False,
) -> int:
    """Record a barrier and return at once: the loop parks on it between turns."""
    command = strip_separator(until_exit or [])
    barrier = set_barrier(
        loop_history(repo_root()),
        pid=pid,
        seconds=seconds,
        until_exit=command or None,
        reason=reason,
    )
    if as_json:
        print_json(barrier)
    else:
        print(
            f"parked {describe_barrier(barrier)}; the loop starts no turn until then "
            f"('loop-contract unwait {barrier['id']}' drops it)"
        )
    return 0
