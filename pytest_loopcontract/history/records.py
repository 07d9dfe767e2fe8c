"""The history's records, and how a history file's bytes become them. Pure: no I/O.

The reducer, the budget and the status page fold records without touching a file, and the
parse is the hot path of a rebuild (100,000 lines), tuned on its own. A line links to the one
before it by :mod:`pytest_loopcontract.chain`; :func:`scan` names every link that does not
hold by its line number, and a cut-short last line (a crash mid-append) as a :class:`TornLine`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from pytest_loopcontract import chain
from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.fsio import parse_utc, refuse_constant

__all__ = [
    "EMPTY_DIFF_HASH",
    "TORN_EVENT",
    "ChainBreak",
    "ClockJump",
    "HistoryRead",
    "Instant",
    "Record",
    "TornLine",
    "diff_hash",
    "parse_line",
    "paused_gc",
    "progress_key",
    "scan",
]

TORN_EVENT = "torn_set_aside"

# The progress key: what the loop's no-progress detection compares between iterations.
EMPTY_DIFF_HASH = hashlib.sha256(b"").hexdigest()


def diff_hash(diff_text: str) -> str:
    return hashlib.sha256(diff_text.encode("utf-8", "surrogateescape")).hexdigest()


def progress_key(diff_sha256: str, failing: Iterable[str]) -> str:
    """Order-independent over the failing set; any change to code or to outcomes changes it."""
    hasher = hashlib.sha256(diff_sha256.encode())
    for nodeid in sorted(set(failing)):
        hasher.update(b"\0" + nodeid.encode("utf-8", "surrogateescape"))
    return hasher.hexdigest()[:32]


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
        return Instant(parse_utc(self.ts), self.mono, self.boot)


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
        return parse_utc(self.previous_ts) - parse_utc(self.ts)

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


# NaN and Infinity are not JSON; Python's default decoder would let them in.
DECODER = json.JSONDecoder(parse_constant=refuse_constant)
# The decoder's C scanner, called at an offset: parses one line of a big text without copying.
_SCAN_ONCE = cast(Callable[[str, int], "tuple[Any, int]"], vars(DECODER)["scan_once"])


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
        obj = DECODER.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # ValueError includes bad UTF-8
        return "not JSON"
    return _as_record(obj, line, digest if digest is not None else chain.digest(raw))


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
    expected = None if prev_seq is None else prev_seq + 1
    fault = chain.link_fault(expected, rec.seq, rec.prev == prev_hash)
    if not fault:
        return
    if number == 1:
        message = f"line 1 (seq {rec.seq}) does not start the chain: records before it were removed"
        breaks.append(ChainBreak(1, "start", message))
    elif fault == "removed":
        assert prev_seq is not None  # a seq is only missing after a readable line
        breaks.append(
            ChainBreak(
                number,
                "removed",
                f"line {number}: seq jumps from {prev_seq} to {rec.seq}: "
                f"{rec.seq - prev_seq - 1} record(s) were removed before line {number}",
            )
        )
    elif fault == "reordered":
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
