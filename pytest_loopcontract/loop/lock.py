"""The loop lock: at most one loop per repository.

Why: two loops on one repository would interleave iterations and double-spend. It is the one
holder lock (:mod:`pytest_loopcontract.locks`) on ``loop.lock`` in the state folder: the kernel
releases it when the holder dies, and the file says who holds it, for the message.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import utc_stamp
from pytest_loopcontract.locks import HolderLock, LockBusy, holder_of, this_process
from pytest_loopcontract.statedir import StateDir

__all__ = ["LockHeld", "LoopLock", "lock_holder"]


class LockHeld(LoopContractError):
    """Another loop holds the lock; ``holder`` is what it wrote about itself (may be empty)."""

    def __init__(self, path: os.PathLike[str], holder: Mapping[str, Any] | None):
        self.path = path
        self.holder = dict(holder or {})
        super().__init__(self._message())

    def _message(self) -> str:
        holder = self.holder
        if not holder:
            who = "another process (it has not said who yet)"
            advice = "try again in a moment"
        else:
            pid = holder.get("pid")
            who = f"pid {pid} on {holder.get('host')}"
            if holder.get("command"):
                who += f", running `{holder['command']}`"
            who += f", since {holder.get('started_at')}"
            advice = f"wait for it to finish, or stop it (kill {pid})"
        return (
            f"another loop is running on this repository: {self.path} is held by {who}; "
            f"{advice}. The lock is released as soon as that process exits."
        )


class LoopLock:
    """At most one loop per state folder: ``with LoopLock(state_dir, command): ...``.

    Raises :class:`LockHeld` at once (no waiting) when another loop, in any process, holds it.
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        command: str | Sequence[str] = "",
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = StateDir(state_dir)
        self.path = self.state.loop_lock
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.clock = clock
        self._lock = HolderLock(self.path)

    @property
    def holder(self) -> dict[str, Any]:
        """What this loop wrote about itself (empty until acquired)."""
        return self._lock.holder

    def acquire(self) -> None:
        self.state.ensure()
        note = {**this_process(), "started_at": utc_stamp(self.clock()), "command": self.command}
        try:
            self._lock.acquire(note)
        except LockBusy as busy:
            raise LockHeld(self.path, busy.holder) from None

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> LoopLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def lock_holder(state_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Who holds the loop lock now, or None when nobody does (a crashed holder counts as none)."""
    return holder_of(StateDir(state_dir).loop_lock)
