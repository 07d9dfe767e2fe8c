"""Loop state: a pure reduction of the history, its ``state.json`` cache, and the loop lock.

Why a reducer: the history is the truth and ``state.json`` only a cache. Anything the loop needs
(iteration, spend, tripped budgets, checkpoints, claimed items, recent progress) is a fold over
the records, so a lost, corrupt or stale ``state.json`` is rebuilt, never trusted blindly, and a
rebuild gives the same answer as the live loop did.

Why a lock: two loops on one repository would interleave iterations and double-spend. The lock
is an ``flock`` on ``loop.lock``: the kernel releases it when the holder dies (even ``kill -9``),
so there is no stale lock to clean up; the file holds who has it, for the message.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import shlex
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from pytest_loopcontract.loop.history import (
    TORN_EVENT,
    ZERO_HASH,
    History,
    Record,
    ensure_state_dir,
    format_ts,
    paused_gc,
)
from pytest_loopcontract.fsio import write_bytes_atomic

__all__ = [
    "LOOP_LOCK_FILE",
    "MAX_USD",
    "PROGRESS_KEEP",
    "STATE_FILE",
    "STATE_SCHEMA",
    "STATUSES",
    "LockHeld",
    "LoopLock",
    "Reducer",
    "initial_state",
    "load_state",
    "lock_holder",
    "reduce",
    "save_state",
    "usd_units",
]

STATE_FILE = "state.json"
LOOP_LOCK_FILE = "loop.lock"
STATE_SCHEMA = 1
PROGRESS_KEEP = 10
_ANOMALIES_KEEP = 50
STATUSES = ("idle", "running", "stopped", "done", "awaiting_human")
_BUDGET_KEYS = ("iterations", "minutes", "tokens", "usd")
_EXIT_MET = 0
_EXIT_AWAIT_HUMAN = 24
_NANO = 1_000_000_000
MAX_USD = 1e12  # more than any real spend; keeps nano-dollar sums finite


def usd_units(amount: float) -> int:
    """Dollars as whole nano-dollars: sums of these are exact and independent of order."""
    return round(amount * _NANO)


def initial_state() -> dict[str, Any]:
    """The state of an empty history."""
    return {
        "schema": STATE_SCHEMA,
        "loop": {
            "run": 0,
            "started_at": None,
            "started": None,
            "status": "idle",
            "iteration": 0,
            "stop_reason": None,
            "exit_code": None,
            "command": None,
        },
        "contract": {"id": None, "sha256": None, "amendments": []},
        "budget": {
            "caps": dict.fromkeys(_BUDGET_KEYS),
            "spent": {"tokens": 0, "usd": 0.0, "by_seat": {}},
            "tripped": [],
        },
        "checkpoints": {},
        "items": {},
        "last_verdict": None,
        "progress_keys": [],
        "repairs": [],
        "unknown_kinds": {},
        "anomalies": [],
        "events": 0,
        "last_seq": 0,
        "last_hash": ZERO_HASH,
    }


# --------------------------------------------------------------------------- the reducer


def _number(value: Any) -> float | None:
    """A finite, non-negative number, or None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return None
    if not finite or value < 0:
        return None
    return value


class Reducer:
    """The fold behind :func:`reduce`, usable one record at a time.

    :func:`pytest_loopcontract.loop.budget.record_spend` feeds it the history, then the spend it
    appends, so its totals are the reducer's totals by construction. Per record it does only
    what that kind needs; derived fields (status, dollars, last verdict) are built by
    :meth:`state`.
    """

    def __init__(self) -> None:
        self._state = initial_state()
        self._base_status = "idle"
        self._usd = 0
        self._seat_usd: dict[str, int] = {}
        self._last_iteration: Record | None = None
        self._progress: deque[Any] = deque(maxlen=PROGRESS_KEEP)
        self._events = 0
        self._last: Record | None = None

    def feed(self, records: Iterable[Record]) -> Reducer:
        """Apply ``records`` in order; returns self."""
        handlers = _HANDLERS
        unknown: dict[str, int] = self._state["unknown_kinds"]
        count = 0
        record: Record | None = None
        with paused_gc():
            for record in records:
                handler = handlers.get(record.kind)
                if handler is None:
                    unknown[record.kind] = unknown.get(record.kind, 0) + 1
                else:
                    handler(self, record, record.data)
                count += 1
        if record is not None:
            self._last = record
        self._events += count
        return self

    def apply(self, record: Record) -> Reducer:
        """Apply one record; returns self."""
        return self.feed((record,))

    def state(self) -> dict[str, Any]:
        """The state so far, as a new document (nested maps may be shared: do not mutate)."""
        state = dict(self._state)
        checkpoints = state["checkpoints"]
        pending = any(c["status"] == "pending" for c in checkpoints.values())
        status = self._base_status
        if status == "running" and pending:
            status = "awaiting_human"
        elif status == "awaiting_human" and not pending:
            status = "stopped"  # cleared while stopped: it takes a resume to run again
        state["loop"] = {**state["loop"], "status": status}
        budget = state["budget"]
        spent = budget["spent"]
        by_seat = {
            seat: {"tokens": tokens, "usd": self._seat_usd.get(seat, 0) / _NANO}
            for seat, tokens in spent["by_seat"].items()
        }
        state["budget"] = {
            **budget,
            "spent": {"tokens": spent["tokens"], "usd": self._usd / _NANO, "by_seat": by_seat},
        }
        last = self._last_iteration
        if last is not None:
            state["last_verdict"] = {**last.data, "seq": last.seq, "ts": last.ts}
        state["progress_keys"] = list(self._progress)
        state["events"] = self._events
        if self._last is not None:
            state["last_seq"] = self._last.seq
            state["last_hash"] = self._last.digest
        return state

    def _note(self, record: Record, message: str) -> None:
        anomalies: list[str] = self._state["anomalies"]
        if len(anomalies) < _ANOMALIES_KEEP:
            anomalies.append(f"seq {record.seq}: {message}")

    # -- handlers, one per event kind

    def _loop_started(self, record: Record, data: Mapping[str, Any]) -> None:
        """A new run: run-scoped counters start over; checkpoints and items carry on."""
        state = self._state
        fresh = initial_state()
        loop = fresh["loop"]
        loop["run"] = state["loop"]["run"] + 1
        loop["started_at"] = data.get("started_at") or record.ts
        loop["started"] = {"ts": record.ts, "mono": record.mono, "boot": record.boot}
        loop["command"] = data.get("command")
        state["loop"] = loop
        budget = fresh["budget"]
        given = data.get("budget")
        if isinstance(given, Mapping):
            for key in _BUDGET_KEYS:
                value = _number(given.get(key))
                if value is not None:
                    budget["caps"][key] = value
                elif given.get(key) is not None:
                    self._note(record, f"budget {key} {given.get(key)!r} is not a number; no cap")
        state["budget"] = budget
        self._usd = 0
        self._seat_usd = {}
        self._last_iteration = None
        self._progress.clear()
        contract = state["contract"]
        contract["id"] = data.get("contract_id")
        contract["sha256"] = data.get("contract_sha256")
        self._base_status = "running"

    def _iteration(self, record: Record, data: Mapping[str, Any]) -> None:
        loop = self._state["loop"]
        n = data.get("n")
        loop["iteration"] = n if type(n) is int else loop["iteration"] + 1
        self._last_iteration = record
        key = data.get("progress_key")
        if key is not None:
            self._progress.append(key)

    def _spend(self, record: Record, data: Mapping[str, Any]) -> None:
        tokens = data.get("tokens", 0)
        usd = data.get("usd", 0.0)
        amount = _number(usd)
        if type(tokens) is not int or tokens < 0 or amount is None or amount > MAX_USD:
            self._note(record, f"spend ignored: tokens {tokens!r}, usd {usd!r} are not valid")
            return
        units = usd_units(amount)
        spent = self._state["budget"]["spent"]
        spent["tokens"] += tokens
        self._usd += units
        seat = data.get("seat")
        seat_key = seat if type(seat) is str and seat else "default"
        by_seat = spent["by_seat"]
        by_seat[seat_key] = by_seat.get(seat_key, 0) + tokens
        self._seat_usd[seat_key] = self._seat_usd.get(seat_key, 0) + units

    def _budget_tripped(self, record: Record, data: Mapping[str, Any]) -> None:
        tripped: list[dict[str, Any]] = self._state["budget"]["tripped"]
        which = data.get("which")
        if any(t["which"] == which for t in tripped):
            return  # tripped stays tripped; a repeat adds nothing
        tripped.append(
            {
                "which": which,
                "observed": data.get("observed"),
                "cap": data.get("cap"),
                "seq": record.seq,
            }
        )

    def _checkpoint_raised(self, record: Record, data: Mapping[str, Any]) -> None:
        cid = str(data.get("id"))
        self._state["checkpoints"][cid] = {
            **data,
            "id": cid,
            "status": "pending",
            "by": None,
            "raised_seq": record.seq,
            "resolved_seq": None,
        }

    def _checkpoint_resolved(self, record: Record, data: Mapping[str, Any]) -> None:
        cid = str(data.get("id"))
        decision = data.get("decision")
        if decision not in ("approve", "deny"):
            self._note(record, f"checkpoint {cid}: decision {decision!r} is not approve|deny")
            return
        checkpoints: dict[str, dict[str, Any]] = self._state["checkpoints"]
        entry = checkpoints.get(cid)
        if entry is None:
            self._note(record, f"checkpoint {cid} was resolved but never raised")
            entry = checkpoints[cid] = {"id": cid, "raised_seq": None}
        entry["status"] = "approved" if decision == "approve" else "denied"
        entry["by"] = data.get("by")
        entry["resolved_seq"] = record.seq

    def _item_claimed(self, record: Record, data: Mapping[str, Any]) -> None:
        self._state["items"][str(data.get("item"))] = "claimed"

    def _item_done(self, record: Record, data: Mapping[str, Any]) -> None:
        item = str(data.get("item"))
        hook_exit = data.get("hook_exit")
        if hook_exit not in (None, 0):
            self._note(record, f"item {item}: done hook exited {hook_exit}; not done")
            return
        self._state["items"][item] = "done"

    def _amend(self, record: Record, data: Mapping[str, Any]) -> None:
        contract = self._state["contract"]
        contract["amendments"].append({**data, "seq": record.seq})
        if data.get("contract_sha256"):
            contract["sha256"] = data["contract_sha256"]

    def _stop(self, record: Record, data: Mapping[str, Any]) -> None:
        loop = self._state["loop"]
        exit_code = data.get("exit_code")
        loop["stop_reason"] = data.get("reason")
        loop["exit_code"] = exit_code
        if exit_code == _EXIT_MET:
            self._base_status = "done"
        elif exit_code == _EXIT_AWAIT_HUMAN:
            self._base_status = "awaiting_human"
        else:
            self._base_status = "stopped"

    def _resumed(self, record: Record, data: Mapping[str, Any]) -> None:
        loop = self._state["loop"]
        loop["stop_reason"] = None
        loop["exit_code"] = None
        self._base_status = "running"

    def _torn_set_aside(self, record: Record, data: Mapping[str, Any]) -> None:
        self._state["repairs"].append(
            {
                "seq": record.seq,
                "line": data.get("line"),
                "file": data.get("file"),
                "bytes": data.get("bytes"),
            }
        )


_HANDLERS: dict[str, Callable[[Reducer, Record, Mapping[str, Any]], None]] = {
    "loop_started": Reducer._loop_started,
    "iteration": Reducer._iteration,
    "spend": Reducer._spend,
    "budget_tripped": Reducer._budget_tripped,
    "checkpoint_raised": Reducer._checkpoint_raised,
    "checkpoint_resolved": Reducer._checkpoint_resolved,
    "item_claimed": Reducer._item_claimed,
    "item_done": Reducer._item_done,
    "amend": Reducer._amend,
    "stop": Reducer._stop,
    "resumed": Reducer._resumed,
    TORN_EVENT: Reducer._torn_set_aside,
}


def reduce(records: Iterable[Record]) -> dict[str, Any]:
    """The loop state after ``records`` (in seq order). Pure: same records, same state.

    Unknown kinds are counted in ``unknown_kinds`` and otherwise ignored, so an older reader
    survives a newer writer. A malformed event is skipped and named in ``anomalies``.
    ``loop_started`` begins a new run: iteration, spend, tripped budgets, last verdict and
    progress keys start over (the caps may have changed); checkpoints and items carry over.
    Dollars are summed exactly in nano-dollars.
    """
    return Reducer().feed(records).state()


# --------------------------------------------------------------------------- state.json


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float made None: strict JSON for any reader (``jq``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


def save_state(state_dir: str | os.PathLike[str], state: Mapping[str, Any]) -> None:
    """Write ``state.json`` by write-then-rename: a crash leaves the old one or the new one.

    Strict JSON: a non-finite number (only a hand-edited history can hold one, say ``1e400``)
    is written as null.
    """
    path = Path(state_dir) / STATE_FILE
    try:
        text = json.dumps(state, indent=2, allow_nan=False)
    except ValueError:
        text = json.dumps(_json_safe(state), indent=2, allow_nan=False)
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))


def _read_state_file(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, f"{path.name} is missing"
    except (OSError, ValueError) as exc:
        return None, f"{path.name} is unreadable ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or doc.get("schema") != STATE_SCHEMA:
        return None, f"{path.name} is not a schema-{STATE_SCHEMA} state document"
    return doc, ""


def load_state(
    state_dir: str | os.PathLike[str], history: History | None = None
) -> tuple[dict[str, Any], bool, str]:
    """The current state, ``rebuilt`` (True when it came from the history) and a note saying why.

    ``state.json`` is used only when its ``last_seq`` and ``last_hash`` match the history's last
    record; otherwise (missing, corrupt, stale, ahead, or the last line edited) the state is
    rebuilt from the history and saved again.
    """
    folder = Path(state_dir)
    history = history if history is not None else History(folder)
    if not folder.is_dir():
        return reduce(()), True, f"no state folder at {folder}: nothing recorded yet"
    last, torn = history.tail()
    last_seq = last.seq if last is not None else 0
    last_hash = last.digest if last is not None else ZERO_HASH
    doc, problem = _read_state_file(folder / STATE_FILE)
    torn_note = f"; {torn.message}" if torn is not None else ""
    if doc is not None:
        seq, digest = doc.get("last_seq"), doc.get("last_hash")
        if seq == last_seq and digest == last_hash:
            return doc, False, f"{STATE_FILE} is current (seq {last_seq}){torn_note}"
        if not isinstance(seq, int):
            problem = f"{STATE_FILE} has no last_seq"
        elif seq < last_seq:
            problem = f"{STATE_FILE} is stale (seq {seq}, history at seq {last_seq})"
        elif seq > last_seq:
            problem = (
                f"{STATE_FILE} is ahead of the history (seq {seq}, history at seq {last_seq}): "
                "records were removed from the end of the history"
            )
        else:
            problem = (
                f"the history's last record (seq {seq}) is not the one {STATE_FILE} "
                "recorded: it was edited"
            )
    found = history.read()
    state = reduce(found.records)
    notes = [problem, f"rebuilt from {len(found.records)} history record(s)"]
    notes.extend(found.messages())
    try:
        save_state(folder, state)
    except OSError as exc:
        notes.append(f"could not save {STATE_FILE}: {exc}")
    return state, True, "; ".join(notes)


# --------------------------------------------------------------------------- the loop lock


class LockHeld(RuntimeError):
    """Another loop holds the lock; ``holder`` is what it wrote about itself (may be empty)."""

    def __init__(self, path: Path, holder: Mapping[str, Any] | None):
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


def _read_holder(fd: int) -> dict[str, Any] | None:
    try:
        raw = os.pread(fd, 65536, 0)
        doc = json.loads(raw) if raw.strip() else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class LoopLock:
    """At most one loop per state folder: ``with LoopLock(state_dir, command): ...``.

    Raises :class:`LockHeld` at once (no waiting) when another loop, in any process, holds it.
    The descriptor is not inherited by the agent's subprocesses (Python's default), so an agent
    left running cannot keep the lock alive.
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        command: str | Sequence[str] = "",
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / LOOP_LOCK_FILE
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.clock = clock
        self._fd: int | None = None
        self.holder: dict[str, Any] = {}

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: this LoopLock is already held")
        ensure_state_dir(self.state_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = _wait_for_holder(fd)
            os.close(fd)
            raise LockHeld(self.path, holder) from None
        self.holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": format_ts(self.clock()),
            "command": self.command,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(self.holder) + "\n").encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # say nobody holds it; the kernel drops the lock on close
        os.close(fd)

    def __enter__(self) -> LoopLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _wait_for_holder(fd: int, attempts: int = 20, pause: float = 0.025) -> dict[str, Any] | None:
    """The holder writes who it is just after locking; give it half a second to do so."""
    for _ in range(attempts):
        holder = _read_holder(fd)
        if holder:
            return holder
        time.sleep(pause)
    return None


def lock_holder(state_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Who holds the loop lock now, or None when nobody does (a crashed holder counts as none)."""
    path = Path(state_dir) / LOOP_LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _wait_for_holder(fd) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
