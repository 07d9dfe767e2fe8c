"""File and data primitives every part shares: durable writes, strict JSON, UTC time.

Why one module: a state file half-written by a crash, a JSON document that two readers parse
differently (a duplicate key, ``NaN``) or two spellings of "now" would each undo a guarantee the
rest of the package makes. Each of those is decided here, once.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import LoopContractError

__all__ = [
    "StrictJSONError",
    "canonical_json",
    "dumps_json",
    "finite_json",
    "fsync_dir",
    "loads_strict",
    "parse_utc",
    "pread_all",
    "refuse_constant",
    "sync_file",
    "utc_now",
    "utc_stamp",
    "write_all",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]

# --------------------------------------------------------------------------- durable writes


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, sync: bool = True
) -> None:
    """Write-then-rename with fsync, so a crash leaves the old file or the new one, never half.

    The file is private (0600, as :func:`tempfile.mkstemp` makes it) unless ``mode`` says
    otherwise (a report meant for sharing: 0644); the mode is set before the rename.
    ``sync=False`` renames at once and leaves the fsyncs to :func:`sync_file`, for a writer
    that waits for the disk on a thread (a process that dies in between still leaves the new
    file; a power cut, at worst, an unreadable one)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(target.parent)


def sync_file(path: str | os.PathLike[str]) -> None:
    """Make a file written with ``sync=False`` durable: its data, then its folder's entry."""
    _fsync(path)
    _fsync(Path(path).parent)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    """UTF-8 text, written as :func:`write_bytes_atomic` does."""
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)


def write_json_atomic(path: str | os.PathLike[str], document: Any, *, sync: bool = True) -> None:
    """A compact JSON document plus newline, written as :func:`write_bytes_atomic` does."""
    text = dumps_json(document, separators=(",", ":")) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"), sync=sync)


def write_all(fd: int, data: bytes, *, fsync: bool = False) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less), then optionally
    fsync: on an ``O_APPEND`` descriptor this is the durable append a log needs."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    if fsync:
        os.fsync(fd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a folder's entries durable: a new or renamed file's name survives a power cut."""
    _fsync(path)


def _fsync(path: str | os.PathLike[str]) -> None:
    """fsync a file or folder through a descriptor of its own (read-only does for both)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pread_all(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes from ``offset`` (``os.pread`` may return fewer than asked)."""
    parts: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


# --------------------------------------------------------------------------- JSON

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_json(document: Any, **options: Any) -> str:
    """JSON text that is always valid UTF-8, whatever bytes a test produced.

    A node id or message can hold lone surrogates (``os.fsdecode`` of an undecodable file name
    gives ``'\\udcff'``), which UTF-8 cannot encode. They can only stand inside JSON strings,
    so each becomes its ``\\uXXXX`` escape: reversible (``json.loads`` gives the same string
    back, so node ids still match between runs) while everything else stays readable.
    """
    text = json.dumps(document, ensure_ascii=False, **options)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float made None: strict JSON for any reader (``jq``
    refuses ``Infinity``), even when an edited history carried ``1e400`` into a total."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` that is hashed and signed: sorted keys, no spaces, ASCII.

    Why one spelling: a hash or a signature covers bytes, so two writers (or a writer and a
    verifier years later) must turn the same value into the same bytes.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


class StrictJSONError(LoopContractError, ValueError):
    """Text that parses as JSON but that a strict reader refuses (``NaN``, a duplicate key)."""


def refuse_constant(name: str) -> Any:
    """``parse_constant`` hook: ``NaN`` and ``Infinity`` are not JSON, whatever Python allows."""
    raise StrictJSONError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"{text[:40]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJSONError(f"duplicate key {key[:40]!r}")
        out[key] = value
    return out


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON the way every reader will agree on, or raise.

    Refused with :class:`StrictJSONError`: ``NaN``/``Infinity``, numbers that overflow to
    infinity and duplicate object keys (readers disagree on which copy wins, so a document
    with two could say one thing to a check and another to its consumer). Bad syntax raises
    :class:`json.JSONDecodeError` and bad UTF-8 :class:`UnicodeDecodeError` (both
    ``ValueError``); nesting too deep raises ``RecursionError``.
    """
    return json.loads(
        text,
        parse_constant=refuse_constant,
        parse_float=_finite_float,
        object_pairs_hook=_unique_keys,
    )


# --------------------------------------------------------------------------- UTC time


def utc_now() -> str:
    """Now, ISO 8601 in UTC to the millisecond (``2026-12-01T13:55:42.123+00:00``).

    The spelling of verdicts, baselines and contest results.
    """
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def utc_stamp(epoch: float | None = None) -> str:
    """ISO 8601 UTC with microseconds and ``Z``: fixed width, so it sorts as text.

    The spelling of the history, the ledger, lock holders and certificates; ``epoch`` (seconds)
    defaults to now.
    """
    moment = dt.datetime.fromtimestamp(time.time() if epoch is None else epoch, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_utc(text: str) -> float:
    """Epoch seconds of an ISO timestamp (``Z`` or an offset; naive means UTC).

    Python 3.10's ``fromisoformat`` does not read ``Z``, so it is spelled out.
    """
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()
