"""One holder lock: an ``flock`` on a file that says who holds it and since when.

Why ``flock``: the kernel releases it when the holder dies, even under ``kill -9``, so a crashed
loop or contest never blocks the next one and there is no stale lock to clean up. The file
holds the holder's own note (JSON: pid, host, when, what), written just after locking, so the
one turned away can be told who is in the way. The descriptor is not inherited by child
processes (Python's default), so an agent left running cannot keep the lock alive. Taking the
lock never waits: a second holder is an error the caller words for its users.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import canonical_json

__all__ = ["HolderLock", "LockBusy", "holder_of", "pid_alive", "this_process"]

_WAIT_ATTEMPTS = 20
_WAIT_PAUSE_S = 0.025


class LockBusy(LoopContractError):
    """Someone else holds the lock at ``path``; ``holder`` is their note (None: not written yet)."""

    def __init__(self, path: Path, holder: dict[str, Any] | None) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path} is held by {holder or 'another process'}")


def this_process() -> dict[str, Any]:
    """The part of a note every holder writes: which process on which host."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _busy(exc: OSError) -> bool:
    return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def _read_note(fd: int) -> dict[str, Any] | None:
    try:
        raw = os.pread(fd, 65536, 0)
        doc = json.loads(raw) if raw.strip() else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _wait_for_note(fd: int) -> dict[str, Any] | None:
    """The holder writes its note just after locking; give it half a second to do so."""
    for _ in range(_WAIT_ATTEMPTS):
        note = _read_note(fd)
        if note:
            return note
        time.sleep(_WAIT_PAUSE_S)
    return None


def holder_of(path: Path) -> dict[str, Any] | None:
    """Who holds the lock at ``path`` now: their note, ``{}`` when they have not written it
    yet, None when nobody holds it (a crashed holder counts as nobody)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if not _busy(exc):
                raise
            return _wait_for_note(fd) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class HolderLock:
    """``HolderLock(path).acquire(note)`` takes the lock at once or raises :class:`LockBusy`.

    After :meth:`acquire`, ``holder`` is the note written and ``previous`` what the file held
    before (the note of a holder that died without releasing, or None). :meth:`release`
    empties the file (nobody holds it) but keeps it: deleting it would race a new holder.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.holder: dict[str, Any] = {}
        self.previous: dict[str, Any] | None = None
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, note: Mapping[str, Any]) -> HolderLock:
        """Lock, then write ``note`` (canonical JSON and a newline). Never waits."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: this lock is already held")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if not _busy(exc):
                os.close(fd)
                raise
            holder = _wait_for_note(fd)
            os.close(fd)
            raise LockBusy(self.path, holder) from None
        try:
            self.previous = _read_note(fd)
            self.holder = dict(note)
            os.ftruncate(fd, 0)
            os.pwrite(fd, canonical_json(self.holder).encode() + b"\n", 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock up (idempotent); closing the descriptor releases the ``flock``."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # say nobody holds it
        os.close(fd)

    def __enter__(self) -> HolderLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
