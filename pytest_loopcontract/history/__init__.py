"""The loop's history: an append-only, hash-chained JSON-lines log in the state folder.

Why a chain: the history is the only record of what an unattended loop did (iterations, spend,
checkpoints, stops), and every decision is a fold over it, so the history must survive crashes
and show tampering. Each line carries the SHA-256 of the previous line's bytes, so an
edited, removed or inserted line is found and named by its line number.

Why these I/O rules:

* One ``write()`` of the whole line on an ``O_APPEND`` descriptor, then ``fsync``: a record the
  caller saw returned is on disk, and a crash can cut short at most the record in flight.
* An exclusive ``flock`` on a sidecar lock file around "read the tail, write": threads and
  separate processes interleave whole records and the chain never forks. The kernel drops the
  lock when a process dies, even under ``kill -9``.
* The tail is read backwards from the end, so appending costs the same at line 10 and at
  line 1,000,000.
* A torn last line (no newline, or not a record) is never silently dropped: the next append
  copies it to ``history.torn.<line>`` (fsynced), then writes a ``torn_set_aside`` record over
  it in one step, so the cut and its record land together, and continues from the last good
  line. Readers report it (:class:`TornLine`) and read everything before it.

Wall-clock time (``ts``) is informational. Order is ``seq``; a clock that jumps backwards is
reported (:class:`ClockJump`) and never rejected. Each record also carries ``mono`` (the
system-wide monotonic clock) and ``boot`` (which boot that clock belongs to), so elapsed time
can be measured without trusting the wall clock (see :mod:`pytest_loopcontract.loop.budget`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pytest_loopcontract import chain
from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.fsio import fsync_dir, pread_all, utc_stamp, write_all
from pytest_loopcontract.history.records import (
    DECODER,
    TORN_EVENT,
    ChainBreak,
    HistoryRead,
    Record,
    TornLine,
    parse_line,
    scan,
)
from pytest_loopcontract.statedir import StateDir

__all__ = ["History", "Transaction", "boot_id"]

_TAIL_CHUNK = 4096
_COUNT_CHUNK = 1 << 20


@cache
def boot_id() -> str:
    """A short id of the current boot (Linux), or "" where the system does not say."""
    try:
        text = Path("/proc/sys/kernel/random/boot_id").read_text("ascii")
    except OSError:
        return ""
    return text.strip().replace("-", "")[:12]


# --------------------------------------------------------------------------- reading the tail


def _count_lines_before(fd: int, offset: int) -> int:
    count = 0
    pos = 0
    while pos < offset:
        chunk = os.pread(fd, min(_COUNT_CHUNK, offset - pos), pos)
        if not chunk:
            break
        count += chunk.count(b"\n")
        pos += len(chunk)
    return count


@dataclass
class _Tail:
    """What an append needs: the next seq, the previous line's hash, a torn end to move out.

    ``last`` is the last good record (``line`` 0: not counted); ``size`` the file size.
    """

    next_seq: int
    prev_hash: str
    torn: TornLine | None
    size: int
    last: Record | None = None


def _read_tail(fd: int) -> _Tail:
    """The tail of the file, read backwards in growing chunks until it is understood."""
    size = os.fstat(fd).st_size
    if size == 0:
        return _Tail(1, ZERO_HASH, None, 0)
    chunk = _TAIL_CHUNK
    while True:
        start = max(0, size - chunk)
        tail = _try_tail(pread_all(fd, size - start, start), start, size)
        if tail is not None:
            if tail.torn is not None:  # rare: worth a full count to name the line
                line = _count_lines_before(fd, tail.torn.offset) + 1
                tail.torn = TornLine(line, tail.torn.offset, tail.torn.data, tail.torn.reason)
            return tail
        chunk *= 4


def _try_tail(buf: bytes, start: int, size: int) -> _Tail | None:
    """Work out the tail from the last ``buf`` bytes (at ``start``); None: read further back.

    Walks lines backwards with ``rfind``: usually only the last line is looked at.
    """
    end = buf.rfind(b"\n")
    if end < 0:
        if start > 0:
            return None
        return _Tail(1, ZERO_HASH, TornLine(1, 0, buf, "the file ends without a newline"), size)
    torn: TornLine | None = None
    if end + 1 < len(buf):
        torn = TornLine(0, start + end + 1, buf[end + 1 :], "the file ends without a newline")
    prev_hash: str | None = None
    last_line = True
    while True:
        nl = buf.rfind(b"\n", 0, end)
        if nl < 0 and start > 0:
            return None  # this line may begin before the buffer
        raw = buf[nl + 1 : end]
        found = parse_line(raw, 0)
        if last_line and isinstance(found, str):
            why = f"not a record ({found})"
            if torn is not None:
                why += " and the file ends without a newline"
            torn = TornLine(0, start + nl + 1, buf[nl + 1 :], why)
        else:
            if prev_hash is None:
                prev_hash = chain.digest(raw)
            if isinstance(found, Record):
                return _Tail(found.seq + 1, prev_hash, torn, size, found)
        last_line = False
        if nl < 0:
            return _Tail(1, prev_hash or ZERO_HASH, torn, size)
        end = nl


# --------------------------------------------------------------------------- the history

_held = threading.local()


class History:
    """The history file of one state folder. Safe to share between threads and processes.

    ``clock`` (epoch seconds) and ``monotonic`` are injectable so tests can make time jump;
    ``fsync=False`` is for benchmarks only.
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        fsync: bool = True,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.folder = StateDir(state_dir)
        self.path = self.folder.history
        self.lock_path = self.folder.history_lock
        self.clock = clock
        self.monotonic = monotonic
        self.fsync = fsync
        self.repairs: list[tuple[TornLine, Path]] = []

    def __repr__(self) -> str:
        return f"History({str(self.state_dir)!r})"

    # -- reading

    def read(self) -> HistoryRead:
        """All good records, the torn tail (if any), chain breaks and clock jumps."""
        if not self.path.exists():
            return HistoryRead(exists=self.state_dir.is_dir())
        with self._shared_lock():
            blob = self.path.read_bytes()
        return scan(blob)

    def verify(self) -> list[ChainBreak]:
        """The chain breaks, each named by its line number; empty when the chain holds."""
        return self.read().chain_breaks

    def last(self) -> Record | None:
        """The last good record, read from the end of the file (cheap on any size).

        Its ``line`` is 0: counting lines would mean reading the whole file.
        """
        return self.tail()[0]

    def tail(self) -> tuple[Record | None, TornLine | None]:
        """The last good record and the torn end (if any), from the end of the file only."""
        if not self.path.exists():
            return None, None
        with self._shared_lock(), open(self.path, "rb") as fh:
            found = _read_tail(fh.fileno())
        return found.last, found.torn

    # -- writing

    def append(self, kind: str, data: Mapping[str, Any] | None = None) -> Record:
        """Append one record, durable (fsynced) when this returns. Creates the folder.

        Only the file's tail is read, so the returned record's ``line`` is 0 (not counted).
        """
        with self._exclusive() as fd:
            return Transaction(self, fd, _read_tail(fd), None).append(kind, data)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Hold the history lock, see every record, append: a read-modify-append made atomic.

        Other appenders (threads or processes) wait until the block ends. Calling this
        history's :meth:`append` inside would deadlock, so it raises; use the transaction's.
        """
        with self._exclusive() as fd:
            size = os.fstat(fd).st_size
            found = scan(pread_all(fd, size, 0))
            last = found.records[-1] if found.records else None
            tail = _Tail(found.last_seq + 1, found.tail_hash, found.torn, size, last)
            yield Transaction(self, fd, tail, found)

    # -- locks

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[int]:
        key = os.path.abspath(self.path)
        held: set[str] = _held.__dict__.setdefault("paths", set())
        if key in held:
            raise RuntimeError(
                f"{self.path}: this thread already holds the history lock; "
                "append through the open transaction"
            )
        self.folder.ensure()
        lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            held.add(key)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
                try:
                    yield fd
                finally:
                    os.close(fd)
            finally:
                held.discard(key)
        finally:
            os.close(lock_fd)  # closing the descriptor releases the flock

    @contextlib.contextmanager
    def _shared_lock(self) -> Iterator[None]:
        try:
            lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only state folder can still be read
            if exc.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise
            yield
            return
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_SH)
            yield
        finally:
            os.close(lock_fd)


class Transaction:
    """The held history lock: what was read (``read``, ``records``, ``last``) and ``append``.

    From :meth:`History.append` only the tail is known: ``read`` is then empty.
    """

    def __init__(self, history: History, fd: int, tail: _Tail, read: HistoryRead | None):
        self._history = history
        self._fd = fd
        self._tail = tail
        self._full = read is not None
        self.read = read if read is not None else HistoryRead()
        self.repaired: TornLine | None = None

    @property
    def records(self) -> list[Record]:
        """The good records, including those appended in this transaction."""
        return self.read.records

    @property
    def last(self) -> Record | None:
        """The last good record, including one appended in this transaction."""
        return self._tail.last

    def append(self, kind: str, data: Mapping[str, Any] | None = None) -> Record:
        """Append one record under the held lock, after moving a torn tail out."""
        if not isinstance(kind, str) or not kind:
            raise ValueError("a history record needs a non-empty kind")
        payload = dict(data or {})
        if self._tail.torn is not None:
            self._set_aside(self._tail.torn)
        return self._write(kind, payload)

    def _write(
        self, kind: str, payload: dict[str, Any], replacing: TornLine | None = None
    ) -> Record:
        """Write one line at the end, or over ``replacing`` (a torn end) in one step."""
        history = self._history
        tail = self._tail
        seq = tail.next_seq
        ts = utc_stamp(history.clock())
        mono = round(history.monotonic(), 6)
        boot = boot_id()
        obj = {
            "seq": seq,
            "ts": ts,
            "mono": mono,
            "boot": boot,
            "kind": kind,
            "data": payload,
            "prev": tail.prev_hash,
        }
        try:
            raw = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("ascii")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"history record {kind!r} is not plain JSON: {exc}") from exc
        start = tail.size if replacing is None else replacing.offset
        try:
            if replacing is None:
                write_all(self._fd, raw + b"\n")
            else:
                _overwrite(history.path, start, raw + b"\n", tail.size)
            if history.fsync:
                os.fsync(self._fd)
        except OSError:
            # Leave the file as it was (a full disk, say); the caller sees the error.
            with contextlib.suppress(OSError):
                if replacing is None:
                    os.ftruncate(self._fd, tail.size)
                else:
                    _overwrite(history.path, start, replacing.data, start + len(raw) + 1)
            raise
        if start == 0 and history.fsync:
            fsync_dir(history.state_dir)  # the new file's name is durable too
        digest = chain.digest(raw)
        line = self.read.lines + 1 if self._full else 0
        data = DECODER.decode(raw.decode("ascii"))["data"]  # what a reader will see
        record = Record(seq, ts, kind, data, tail.prev_hash, mono, boot, line, digest)
        self._tail = _Tail(seq + 1, digest, None, start + len(raw) + 1, record)
        if self._full:
            self.read.lines = line
            self.read.records.append(record)
            self.read.tail_hash = digest
        return record

    def _set_aside(self, torn: TornLine) -> None:
        """Copy the torn end to a side file (fsynced), then write the ``torn_set_aside``
        record over it in one step: the cut and its record land together or not at all."""
        history = self._history
        side = _create_side_file(history.folder, torn)
        self._write(
            TORN_EVENT,
            {
                "line": torn.line,
                "offset": torn.offset,
                "bytes": len(torn.data),
                "sha256": hashlib.sha256(torn.data).hexdigest(),
                "file": side.name,
                "reason": torn.reason,
            },
            replacing=torn,
        )
        self.read.torn = None
        self.repaired = torn
        history.repairs.append((torn, side))


def _overwrite(path: Path, offset: int, data: bytes, old_size: int) -> None:
    """Write ``data`` at ``offset`` and cut what is left after it. Needs its own descriptor:
    Linux ignores the offset of ``pwrite`` on an ``O_APPEND`` one."""
    fd = os.open(path, os.O_WRONLY)
    try:
        view = memoryview(data)
        at = offset
        while view:
            written = os.pwrite(fd, view, at)
            view = view[written:]
            at += written
        if offset + len(data) < old_size:
            os.ftruncate(fd, offset + len(data))
    finally:
        os.close(fd)


def _create_side_file(folder: StateDir, torn: TornLine) -> Path:
    """``history.torn.<line>`` (``.<line>.<k>`` if taken), complete and fsynced before the cut.

    Written under a temporary name and hard-linked into place, so a kill leaves either no side
    file or a whole one (plus, at worst, a hidden ``.tmp``), never an empty or partial one.
    """
    state_dir = folder.folder
    tmp = state_dir / f".{folder.TORN_PREFIX}{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, torn.data, fsync=True)
    finally:
        os.close(fd)
    try:
        for k in range(10_000):
            path = folder.torn_side_file(torn.line, k)
            try:
                os.link(tmp, path)
            except FileExistsError:
                continue
            fsync_dir(state_dir)
            return path
    finally:
        tmp.unlink(missing_ok=True)
    raise OSError(f"{state_dir}: no free name for a torn-line side file")
