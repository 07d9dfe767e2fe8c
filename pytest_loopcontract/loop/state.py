"""Loop state: a pure reduction of the history's records.

Anything the loop needs (iteration, spend, tripped budgets, checkpoints, claimed items, recent
progress) is a fold over the history's records, the only truth, so every reader gets the answer
the live loop had. The loop lock is :mod:`pytest_loopcontract.loop.lock`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.history.records import TORN_EVENT, Record, paused_gc
from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN, EXIT_MET

__all__ = [
    "MAX_USD",
    "PROGRESS_KEEP",
    "STATE_SCHEMA",
    "STATUSES",
    "Reducer",
    "initial_state",
    "reduce",
    "usd_units",
]

STATE_SCHEMA = 1
PROGRESS_KEEP = 10
_ANOMALIES_KEEP = 50
STATUSES = ("idle", "running", "stopped", "done", "awaiting_human")
_BUDGET_KEYS = ("iterations", "minutes", "tokens", "usd")
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
            "stopped": None,  # the stop record's instant while the run stays stopped
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
        "barriers": {},
        "control": {"paused": None, "clear_requested": None},
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
        unreported = spent.get("usd_unreported", 0)
        state["budget"] = {
            **budget,
            "spent": {
                "tokens": spent["tokens"],
                "usd": self._usd / _NANO,
                "by_seat": by_seat,
                **({"usd_unreported": unreported} if unreported else {}),
            },
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
        state["control"] = {**state["control"], "clear_requested": None}
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
        amount = 0.0 if usd is None else _number(usd)  # None: the agent printed no cost
        if type(tokens) is not int or tokens < 0 or amount is None or amount > MAX_USD:
            self._note(record, f"spend ignored: tokens {tokens!r}, usd {usd!r} are not valid")
            return
        units = usd_units(amount)
        spent = self._state["budget"]["spent"]
        spent["tokens"] += tokens
        if usd is None:
            spent["usd_unreported"] = spent.get("usd_unreported", 0) + 1
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

    def _checkpoint_withdrawn(self, record: Record, data: Mapping[str, Any]) -> None:
        """The tree no longer raises a pending checkpoint: nothing waits on it any more."""
        cid = str(data.get("id"))
        entry = self._state["checkpoints"].get(cid)
        if entry is None or entry.get("status") != "pending":
            was = "never raised" if entry is None else entry.get("status")
            self._note(record, f"checkpoint {cid} was withdrawn but is {was}; ignored")
            return
        entry["status"] = "withdrawn"
        entry["withdrawn"] = data.get("why")
        entry["withdrawn_seq"] = record.seq

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

    def _amend_removed(self, record: Record, data: Mapping[str, Any]) -> None:
        contract = self._state["contract"]
        n = data.get("n")
        amendments: list[dict[str, Any]] = contract["amendments"]
        if type(n) is not int or not 1 <= n <= len(amendments):
            self._note(record, f"amend_removed names no amendment ({n!r})")
            return
        amendments[n - 1] = {**amendments[n - 1], "removed_by": data.get("by")}
        if data.get("contract_sha256"):
            contract["sha256"] = data["contract_sha256"]

    def _stop(self, record: Record, data: Mapping[str, Any]) -> None:
        loop = self._state["loop"]
        exit_code = data.get("exit_code")
        loop["stop_reason"] = data.get("reason")
        loop["exit_code"] = exit_code
        loop["stopped"] = {"ts": record.ts, "mono": record.mono, "boot": record.boot}
        if exit_code == EXIT_MET:
            self._base_status = "done"
        elif exit_code == EXIT_AWAIT_HUMAN:
            self._base_status = "awaiting_human"
        else:
            self._base_status = "stopped"

    def _resumed(self, record: Record, data: Mapping[str, Any]) -> None:
        loop = self._state["loop"]
        loop["stop_reason"] = None
        loop["exit_code"] = None
        loop["stopped"] = None
        self._state["control"] = {**self._state["control"], "clear_requested": None}
        self._base_status = "running"

    # -- parking and the control plane (see loop/control.py for what they mean to a turn)

    def _barrier_set(self, record: Record, data: Mapping[str, Any]) -> None:
        bid = str(data.get("id") or f"w{record.seq}")
        self._state["barriers"] = {
            **self._state["barriers"],
            bid: {
                **data,
                "id": bid,
                "seq": record.seq,
                "set": {"ts": record.ts, "mono": record.mono, "boot": record.boot},
            },
        }

    def _barrier_cleared(self, record: Record, data: Mapping[str, Any]) -> None:
        gone = data.get("id")
        barriers = self._state["barriers"]
        if gone == "*":
            self._state["barriers"] = {}
        elif gone in barriers:
            self._state["barriers"] = {k: v for k, v in barriers.items() if k != gone}

    def _paused(self, record: Record, data: Mapping[str, Any]) -> None:
        paused = {"by": data.get("by"), "reason": data.get("reason"), "seq": record.seq}
        self._state["control"] = {**self._state["control"], "paused": paused}

    def _unpaused(self, record: Record, data: Mapping[str, Any]) -> None:
        self._state["control"] = {**self._state["control"], "paused": None}

    def _cleared(self, record: Record, data: Mapping[str, Any]) -> None:
        """``clear``: the loop ends at the next turn boundary; barriers and a pause go too."""
        request = {"by": data.get("by"), "reason": data.get("reason"), "seq": record.seq}
        self._state["control"] = {"paused": None, "clear_requested": request}
        self._state["barriers"] = {}

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
    "checkpoint_withdrawn": Reducer._checkpoint_withdrawn,
    "item_claimed": Reducer._item_claimed,
    "item_done": Reducer._item_done,
    "amend": Reducer._amend,
    "amend_removed": Reducer._amend_removed,
    "stop": Reducer._stop,
    "resumed": Reducer._resumed,
    "barrier_set": Reducer._barrier_set,
    "barrier_cleared": Reducer._barrier_cleared,
    "paused": Reducer._paused,
    "unpaused": Reducer._unpaused,
    "cleared": Reducer._cleared,
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
