"""The loop's history: an append-only, hash-chained JSON-lines log in the state folder.

Why a chain: the history is the only record of what an unattended loop did (iterations, spend,
checkpoints, stops). ``state.json`` is a cache rebuilt from it, so the history must survive
crashes and show tampering. Each line carries the SHA-256 of the previous line's bytes, so an
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
import datetime as dt
import errno
import fcntl
import gc
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple, cast

__all__ = [
    "HISTORY_FILE",
    "LOCK_FILE",
    "TORN_EVENT",
    "TORN_PREFIX",
    "ZERO_HASH",
    "ChainBreak",
    "ClockJump",
    "History",
    "HistoryRead",
    "Instant",
    "Record",
    "TornLine",
    "Transaction",
    "boot_id",
    "ensure_state_dir",
    "format_ts",
    "line_hash",
    "parse_line",
    "parse_ts",
    "paused_gc",
    "scan",
]

HISTORY_FILE = "history.jsonl"
LOCK_FILE = "history.lock"
TORN_PREFIX = "history.torn."
TORN_EVENT = "torn_set_aside"
ZERO_HASH = "0" * 64

_TAIL_CHUNK = 4096
_COUNT_CHUNK = 1 << 20


@dataclass(frozen=True)
class Instant:
    """A moment on both clocks: ``wall`` (epoch seconds), ``mono`` and the ``boot`` it is on.

    ``mono`` is only comparable with another ``mono`` of the same non-empty ``boot``.
    """

    wall: float
    mono: float | None = None
    boot: str = ""


class Record(NamedTuple):
    """One history line, parsed. ``line`` is its 1-based line number (0 when only the tail
    was read, so lines were not counted); ``digest`` is the SHA-256 of the line's bytes.

    A named tuple, not a dataclass: a rebuild makes 100,000 of these and tuples are cheapest.
    """

    seq: int
    ts: str
    kind: str
    data: dict[str, Any]
    prev: str
    mono: float | None
    boot: str
    line: int
    digest: str

    def instant(self) -> Instant:
        """When this record was written, on both clocks."""
        return Instant(parse_ts(self.ts), self.mono, self.boot)


@dataclass(frozen=True)
class TornLine:
    """The cut-short end of the file: from ``offset`` (line ``line``) to the end, ``data``."""

    line: int
    offset: int
    data: bytes
    reason: str

    @property
    def message(self) -> str:
        return (
            f"torn last line {self.line} ({len(self.data)} bytes): {self.reason}; "
            "it is set aside, not read, and moved out on the next append"
        )


@dataclass(frozen=True)
class ChainBreak:
    """Where the chain does not hold: ``line`` (1-based), a stable ``kind``, a message.

    Kinds: ``edited`` (the named line changed after it was written), ``removed`` (records
    missing before the line), ``reordered`` (seq goes back or repeats), ``unparsable`` (a line
    in the middle that is not a record), ``start`` (the first line does not start the chain).
    """

    line: int
    kind: str
    message: str


@dataclass(frozen=True)
class ClockJump:
    """The wall clock went backwards between two records. Reported, never an error."""

    line: int
    seq: int
    previous_ts: str
    ts: str

    @property
    def seconds(self) -> float:
        return parse_ts(self.previous_ts) - parse_ts(self.ts)

    @property
    def message(self) -> str:
        return (
            f"line {self.line} (seq {self.seq}): the clock went back {self.seconds:.3f} s "
            f"({self.previous_ts} -> {self.ts}); order is by seq, nothing was lost"
        )


@dataclass
class HistoryRead:
    """Everything a read found: good records, a torn tail, chain breaks and clock jumps.

    ``lines`` counts complete lines before any torn tail; ``tail_hash`` is the hash of the
    last of them (what the next record's ``prev`` must be); ``exists`` is False when there is
    no state folder at all.
    """

    records: list[Record] = field(default_factory=list)
    torn: TornLine | None = None
    chain_breaks: list[ChainBreak] = field(default_factory=list)
    clock_jumps: list[ClockJump] = field(default_factory=list)
    lines: int = 0
    tail_hash: str = ZERO_HASH
    exists: bool = True

    @property
    def last_seq(self) -> int:
        return self.records[-1].seq if self.records else 0

    @property
    def ok(self) -> bool:
        """The chain verifies. A torn tail is not a break: it is repaired on the next append."""
        return not self.chain_breaks

    def messages(self) -> list[str]:
        """Every problem as a sentence, for a human."""
        out = [b.message for b in self.chain_breaks]
        if self.torn is not None:
            out.append(self.torn.message)
        out.extend(j.message for j in self.clock_jumps)
        return out


# --------------------------------------------------------------------------- pure helpers


def line_hash(raw: bytes) -> str:
    """SHA-256 hex of one line's bytes, without its terminating newline."""
    return hashlib.sha256(raw).hexdigest()


def format_ts(epoch: float) -> str:
    """ISO 8601 UTC with microseconds and ``Z``: fixed width, so it sorts as text."""
    moment = dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> float:
    """Epoch seconds of an ISO timestamp (``Z`` or an offset); Python 3.10 lacks ``Z``."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a history may hold")


# NaN and Infinity are not JSON; Python's default decoder would let them in.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
# The decoder's C scanner, called at an offset: parses one line of a big text without copying.
_SCAN_ONCE = cast(Callable[[str, int], "tuple[Any, int]"], vars(_DECODER)["scan_once"])


def _as_record(obj: Any, line: int, digest: str) -> Record | str:
    """Check the shape of one decoded line: a record, or why it is not one."""
    if type(obj) is not dict:
        return "not a JSON object"
    seq = obj.get("seq")
    kind = obj.get("kind")
    data = obj.get("data")
    prev = obj.get("prev")
    ts = obj.get("ts")
    mono = obj.get("mono")
    boot = obj.get("boot", "")
    if type(seq) is not int or seq < 1:
        return "seq is not a positive integer"
    if type(kind) is not str or not kind:
        return "kind is missing"
    if type(data) is not dict:
        return "data is not an object"
    if type(prev) is not str or len(prev) != 64:
        return "prev is not a SHA-256"
    if type(ts) is not str:
        return "ts is missing"
    if mono is not None:
        if type(mono) is int:
            mono = float(mono)
        elif type(mono) is not float:
            return "mono is not a number"
    if type(boot) is not str:
        return "boot is not a string"
    return Record(seq, ts, kind, data, prev, mono, boot, line, digest)


def parse_line(raw: bytes, line: int, digest: str | None = None) -> Record | str:
    """A record, or the reason (a string) why ``raw`` is not one."""
    try:
        obj = _DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # ValueError includes bad UTF-8
        return "not JSON"
    return _as_record(obj, line, digest if digest is not None else line_hash(raw))


# The exact shape this module writes, header first and ``prev`` last. A line of that shape is
# parsed by slicing plus one JSON parse of ``data``; any other line takes the general JSON path.
# The captured strings admit no quote, backslash or control character (``prev`` only letters
# and digits), so the slices equal what a JSON parser would return: both paths give the same
# record (a test holds them to it).
_PLAIN = r'[^"\\\x00-\x1f]'
_HEAD = re.compile(
    r'\{"seq":([1-9][0-9]{0,17}),"ts":"(' + _PLAIN + r'*)",'
    r'"mono":(null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?),'
    r'"boot":"(' + _PLAIN + r'*)","kind":"(' + _PLAIN + r'+)","data":'
)
_TAIL_START = ',"prev":"'
_TAIL_LEN = len(_TAIL_START) + 64 + 2


def _parse_all(blob: bytes, pieces: list[bytes], digests: list[str]) -> list[Record | str]:
    """Parse every line. Fast path: one decode of the whole text, the header by a regular
    expression, ``data`` by the C scanner at its offset; anything else :func:`parse_line`."""
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        pairs = enumerate(zip(pieces, digests, strict=True), 1)
        return [parse_line(raw, number, digest) for number, (raw, digest) in pairs]
    # ASCII (what this module writes): character offsets are byte offsets.
    lengths = map(len, pieces if blob.isascii() else text.split("\n"))
    scan_once = _SCAN_ONCE
    head = _HEAD.match
    startswith = text.startswith
    out: list[Record | str] = []
    append = out.append
    index = 0
    for number, (length, digest) in enumerate(zip(lengths, digests, strict=False), 1):
        end = index + length
        found: Record | None = None
        m = head(text, index, end)
        if m is not None:
            try:
                data, stop = scan_once(text, m.end())
            except (StopIteration, ValueError, RecursionError):
                stop = -1
            # ``,"prev":"<64 letters or digits>"}`` to the end of the line, checked by slicing.
            if (
                stop > 0
                and end - stop == _TAIL_LEN
                and type(data) is dict
                and startswith(_TAIL_START, stop)
                and startswith('"}', end - 2)
            ):
                prev = text[stop + 9 : end - 2]
                if prev.isalnum():
                    seq, ts, mono, boot, kind = m.groups()
                    found = Record(
                        int(seq),
                        ts,
                        kind,
                        data,
                        prev,
                        None if mono == "null" else float(mono),
                        boot,
                        number,
                        digest,
                    )
        append(found if found is not None else parse_line(pieces[number - 1], number, digest))
        index = end + 1
    return out


def scan(blob: bytes) -> HistoryRead:
    """Read and verify a whole history file's bytes. Pure: no I/O, nothing is changed.

    The torn tail is the unterminated fragment at the end, together with the last complete
    line if that one is not a record: at most the record in flight (and its newline).
    """
    with paused_gc():
        return _scan(blob)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic GC while building or folding 100,000s of acyclic objects (a rebuild):
    it halves the time, because every generation-2 pass would walk all records made so far."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _scan(blob: bytes) -> HistoryRead:
    pieces = blob.split(b"\n")
    fragment = pieces.pop()  # after the last newline: b"" when the file ends cleanly
    sha256 = hashlib.sha256
    digests = [sha256(raw).hexdigest() for raw in pieces]
    parsed = _parse_all(blob, pieces, digests)
    off = len(blob) - len(fragment)
    last_at = off - len(pieces[-1]) - 1 if pieces else 0

    torn: TornLine | None = None
    complete = len(pieces)
    if complete and isinstance(parsed[-1], str):
        why = f"not a record ({parsed[-1]})"
        if fragment:
            why += " and the file ends without a newline"
        complete -= 1
        torn = TornLine(complete + 1, last_at, blob[last_at:], why)
    elif fragment:
        torn = TornLine(complete + 1, off, fragment, "the file ends without a newline")

    result = HistoryRead(lines=complete)
    breaks = result.chain_breaks
    records = result.records
    prev_hash = ZERO_HASH
    prev_seq: int | None = 0
    prev_ok = True
    prev_ts = ""
    for index in range(complete):
        number = index + 1
        item = parsed[index]
        if isinstance(item, str):
            breaks.append(
                ChainBreak(
                    number,
                    "unparsable",
                    f"line {number} is not a history record ({item}): it was edited or corrupted",
                )
            )
            prev_seq = None
            prev_ok = False
        else:
            if item.prev != prev_hash or (prev_seq is not None and item.seq != prev_seq + 1):
                _check_link(item, number, prev_hash, prev_seq, prev_ok, breaks)
            if item.ts < prev_ts:
                result.clock_jumps.append(ClockJump(number, item.seq, prev_ts, item.ts))
            prev_ts = item.ts
            prev_seq = item.seq
            prev_ok = True
            records.append(item)
        prev_hash = digests[index]
    result.tail_hash = prev_hash
    result.torn = torn
    return result


def _check_link(
    rec: Record,
    number: int,
    prev_hash: str,
    prev_seq: int | None,
    prev_ok: bool,
    breaks: list[ChainBreak],
) -> None:
    """Name what is wrong between line ``number - 1`` and line ``number``, if anything."""
    hash_ok = rec.prev == prev_hash
    seq_ok = prev_seq is None or rec.seq == prev_seq + 1
    if hash_ok and seq_ok:
        return
    if number == 1:
        breaks.append(
            ChainBreak(
                1,
                "start",
                f"line 1 (seq {rec.seq}) does not start the chain: records before it were removed",
            )
        )
    elif not seq_ok and prev_seq is not None and rec.seq > prev_seq + 1:
        missing = rec.seq - prev_seq - 1
        breaks.append(
            ChainBreak(
                number,
                "removed",
                f"line {number}: seq jumps from {prev_seq} to {rec.seq}: "
                f"{missing} record(s) were removed before line {number}",
            )
        )
    elif not seq_ok:
        breaks.append(
            ChainBreak(
                number,
                "reordered",
                f"line {number}: seq {rec.seq} follows seq {prev_seq}: "
                "records were inserted, duplicated or reordered",
            )
        )
    elif prev_ok:
        breaks.append(
            ChainBreak(
                number - 1,
                "edited",
                f"line {number - 1} (seq {rec.seq - 1}) was changed after it was written: "
                f"its SHA-256 no longer matches the one line {number} recorded",
            )
        )
    # else: the line before is unparsable and already reported; a hash mismatch is implied.


@cache
def boot_id() -> str:
    """A short id of the current boot (Linux), or "" where the system does not say."""
    try:
        text = Path("/proc/sys/kernel/random/boot_id").read_text("ascii")
    except OSError:
        return ""
    return text.strip().replace("-", "")[:12]


def ensure_state_dir(state_dir: Path) -> None:
    """Create the state folder; a new one gets a ``.gitignore`` of ``*`` so git ignores it."""
    if state_dir.is_dir():
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        fd = os.open(state_dir / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"# loop-contract state: never committed, never hashed\n*\n")
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- file I/O


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(path: Path) -> None:
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


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
        tail = _try_tail(_pread_all(fd, size - start, start), start, size)
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
                prev_hash = line_hash(raw)
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
        self.path = self.state_dir / HISTORY_FILE
        self.lock_path = self.state_dir / LOCK_FILE
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
            found = scan(_pread_all(fd, size, 0))
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
        ensure_state_dir(self.state_dir)
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
        ts = format_ts(history.clock())
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
                _write_all(self._fd, raw + b"\n")
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
            _fsync_dir(history.state_dir)  # the new file's name is durable too
        digest = line_hash(raw)
        line = self.read.lines + 1 if self._full else 0
        data = _DECODER.decode(raw.decode("ascii"))["data"]  # what a reader will see
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
        side = _create_side_file(history.state_dir, torn)
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


def _create_side_file(state_dir: Path, torn: TornLine) -> Path:
    """``history.torn.<line>`` (``.<line>.<k>`` if taken), complete and fsynced before the cut.

    Written under a temporary name and hard-linked into place, so a kill leaves either no side
    file or a whole one (plus, at worst, a hidden ``.tmp``), never an empty or partial one.
    """
    tmp = state_dir / f".{TORN_PREFIX}{os.getpid()}.{threading.get_ident()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, torn.data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        for k in range(10_000):
            path = state_dir / (f"{TORN_PREFIX}{torn.line}" + (f".{k}" if k else ""))
            try:
                os.link(tmp, path)
            except FileExistsError:
                continue
            _fsync_dir(state_dir)
            return path
    finally:
        tmp.unlink(missing_ok=True)
    raise OSError(f"{state_dir}: no free name for a torn-line side file")
