"""The run lock: at most one contest per contract at a time.

Why: two contests on one contract at once would interleave their ledger rows, double-spend
and race to certify. It is the one holder lock (:mod:`pytest_loopcontract.locks`), one file
per contract id in a folder next to the ledger. A crashed contest never blocks the next one
(the kernel drops the ``flock``); the file keeps the dead holder's note, and the next run
exposes it as :attr:`RunLock.recovered` so the orchestrator can record a
``run_lock_recovered`` event.
"""

from __future__ import annotations

import hashlib
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.ledger.rows import LedgerError, text_field
from pytest_loopcontract.fsio import utc_stamp
from pytest_loopcontract.locks import HolderLock, LockBusy, holder_of, pid_alive, this_process

__all__ = ["RunBusy", "RunHolder", "RunLock"]


@dataclass(frozen=True, slots=True)
class RunHolder:
    """Who holds (or last held) a contract's run lock, as it wrote about itself."""

    contract_id: str
    run_id: str
    pid: int
    host: str
    started_at: str

    @classmethod
    def from_note(cls, note: dict[str, Any] | None) -> RunHolder | None:
        """The holder a lock file's note names, or None when it names none (or is garbled)."""
        if not note:
            return None
        try:
            return cls(
                contract_id=str(note["contract_id"]),
                run_id=str(note["run_id"]),
                pid=int(note["pid"]),
                host=str(note["host"]),
                started_at=str(note["started_at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def alive(self) -> bool | None:
        """Whether the holder's process exists; None when it ran on another host."""
        if self.host != socket.gethostname():
            return None
        return pid_alive(self.pid)

    def describe(self) -> str:
        return f"run {self.run_id!r} (pid {self.pid} on {self.host}, since {self.started_at})"


class RunBusy(LedgerError):
    """Another run holds the contract's run lock; ``holder`` names it when it could be read."""

    def __init__(self, contract_id: str, holder: RunHolder | None, path: Path) -> None:
        self.contract_id = contract_id
        self.holder = holder
        self.path = path
        if holder is None:
            who = "another run that has not said who it is yet"
            advice = "try again in a moment"
        else:
            who = holder.describe()
            advice = f"wait for it to finish or stop it (kill {holder.pid})"
            if holder.alive() is False:
                advice = (
                    f"pid {holder.pid} has exited but a process it started still holds "
                    f"{path}; stop that process"
                )
        super().__init__(
            f"contract {contract_id!r} is already being run by {who}; two contests on one "
            f"contract at once would interleave and double-spend, so this one did not start: "
            f"{advice}"
        )


def _lock_name(contract_id: str) -> str:
    """A file name per contract id: readable, and unique even when the id has odd characters."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", contract_id)[:48].strip("._") or "contract"
    return f"{slug}-{hashlib.sha256(contract_id.encode()).hexdigest()[:12]}.lock"


class RunLock:
    """An exclusive run lock per contract id; ``with RunLock.acquire(...) as lock: ...``."""

    def __init__(self, lock: HolderLock, holder: RunHolder, recovered: RunHolder | None):
        self.path = lock.path
        self.holder = holder
        self.recovered = recovered
        self._lock = lock

    @classmethod
    def acquire(cls, lock_dir: Path, contract_id: str, run_id: str) -> RunLock:
        """Take the lock now or raise :class:`RunBusy`; it never waits."""
        text_field("contract_id", contract_id)
        text_field("run_id", run_id)
        lock_dir.mkdir(parents=True, exist_ok=True)
        lock = HolderLock(lock_dir / _lock_name(contract_id))
        note = {
            "contract_id": contract_id,
            "run_id": run_id,
            **this_process(),
            "started_at": utc_stamp(),
        }
        try:
            lock.acquire(note)
        except LockBusy as busy:
            raise RunBusy(contract_id, RunHolder.from_note(busy.holder), lock.path) from None
        holder = RunHolder.from_note(lock.holder)
        assert holder is not None  # the note just written names this run
        previous = RunHolder.from_note(lock.previous)
        recovered = previous if previous is not None and previous.alive() is not True else None
        return cls(lock, holder, recovered)

    @staticmethod
    def holder_of(lock_dir: Path, contract_id: str) -> RunHolder | None:
        """The live holder of the contract's lock, or None."""
        return RunHolder.from_note(holder_of(lock_dir / _lock_name(contract_id)))

    @property
    def held(self) -> bool:
        return self._lock.held

    def release(self) -> None:
        """Give the lock up (idempotent). The file stays: deleting it would race a new holder."""
        self._lock.release()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
