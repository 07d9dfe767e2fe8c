"""The state reducer (pure), state.json rebuilds from real histories, and the loop lock."""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.fsio import finite_json
from pytest_loopcontract.history.records import Record
from pytest_loopcontract.loop.lock import LockHeld, LoopLock, lock_holder
from pytest_loopcontract.loop.state import MAX_USD, PROGRESS_KEEP, initial_state, reduce

PY = sys.executable
BUDGET = {"iterations": 10, "minutes": 30, "tokens": 1000, "usd": 2.5}


def records(*events: tuple[str, dict[str, Any]]) -> list[Record]:
    out = []
    for seq, (kind, data) in enumerate(events, 1):
        ts = f"2026-01-01T00:00:{seq % 60:02d}.000000Z"
        out.append(Record(seq, ts, kind, data, ZERO_HASH, float(seq), "b", seq, f"{seq:064x}"))
    return out


def started(**extra: Any) -> tuple[str, dict[str, Any]]:
    data = {
        "contract_id": "demo",
        "contract_sha256": "a" * 64,
        "budget": BUDGET,
        "command": "claude -p",
        "started_at": "2026-01-01T00:00:00Z",
    }
    return "loop_started", {**data, **extra}


def iteration(n: int, key: str = "k", verdict: str = "fail") -> tuple[str, dict[str, Any]]:
    return "iteration", {
        "n": n,
        "verdict": verdict,
        "exit_code": 20 if verdict == "fail" else 0,
        "failing": ["t.py::test_a"],
        "progress_key": key,
        "empty_diff": False,
        "gates_passing": 1,
        "gates_total": 2,
        "duration_s": 1.5,
    }


# --------------------------------------------------------------------------- the reducer


def test_empty_history_is_idle() -> None:
    state = reduce([])
    assert state == initial_state()
    assert state["loop"]["status"] == "idle" and state["last_seq"] == 0


def test_a_run_folds_into_the_agreed_keys() -> None:
    state = reduce(
        records(
            started(),
            ("item_claimed", {"item": "D1"}),
            iteration(1, "p1"),
            ("spend", {"tokens": 300, "usd": 0.5, "seat": "claude", "source": "cli"}),
            ("spend", {"tokens": 200, "usd": 0.25, "seat": None, "source": "agent-json"}),
            iteration(2, "p2"),
            ("item_done", {"item": "D1", "nonce": "n", "hook_exit": 0}),
            ("budget_tripped", {"which": "tokens", "observed": 1200, "cap": 1000}),
            ("budget_tripped", {"which": "tokens", "observed": 1300, "cap": 1000}),
            ("stop", {"reason": "budget", "exit_code": 21}),
        )
    )
    loop = state["loop"]
    assert (loop["status"], loop["iteration"], loop["stop_reason"], loop["exit_code"]) == (
        "stopped",
        2,
        "budget",
        21,
    )
    assert loop["started_at"] == "2026-01-01T00:00:00Z" and loop["command"] == "claude -p"
    assert loop["started"] == {"ts": "2026-01-01T00:00:01.000000Z", "mono": 1.0, "boot": "b"}
    budget = state["budget"]
    assert budget["caps"] == BUDGET
    assert budget["spent"] == {
        "tokens": 500,
        "usd": 0.75,
        "by_seat": {"claude": {"tokens": 300, "usd": 0.5}, "default": {"tokens": 200, "usd": 0.25}},
    }
    assert [t["which"] for t in budget["tripped"]] == ["tokens"], "tripped once, stays once"
    assert budget["tripped"][0]["observed"] == 1200
    assert state["items"] == {"D1": "done"}
    assert state["last_verdict"]["n"] == 2 and state["last_verdict"]["seq"] == 6
    assert state["progress_keys"] == ["p1", "p2"]
    assert state["contract"]["id"] == "demo"
    assert (state["events"], state["last_seq"], state["last_hash"]) == (10, 10, f"{10:064x}")


def test_checkpoints_drive_awaiting_human() -> None:
    raised = (
        "checkpoint_raised",
        {
            "id": "c1",
            "pattern_id": "git-push",
            "kind": "command",
            "message": "git push",
            "evidence": "git push origin",
        },
    )
    approve = ("checkpoint_resolved", {"id": "c1", "by": "alice", "decision": "approve"})
    events = [started(), iteration(1), raised]
    assert reduce(records(*events))["loop"]["status"] == "awaiting_human"
    state = reduce(records(*events, approve))
    assert state["loop"]["status"] == "running"
    assert state["checkpoints"]["c1"]["status"] == "approved"
    assert state["checkpoints"]["c1"]["by"] == "alice"
    assert state["checkpoints"]["c1"]["pattern_id"] == "git-push"

    stopped = [*events, ("stop", {"reason": "checkpoint", "exit_code": 24})]
    assert reduce(records(*stopped))["loop"]["status"] == "awaiting_human"
    deny = ("checkpoint_resolved", {"id": "c1", "by": "bob", "decision": "deny"})
    state = reduce(records(*stopped, deny))
    assert state["loop"]["status"] == "stopped", "cleared while stopped: resume to run"
    assert state["checkpoints"]["c1"]["status"] == "denied"
    assert reduce(records(*stopped, deny, ("resumed", {})))["loop"]["status"] == "running"


def test_a_stop_with_exit_0_is_done() -> None:
    done = records(
        started(), iteration(1, verdict="pass"), ("stop", {"reason": "met", "exit_code": 0})
    )
    assert reduce(done)["loop"]["status"] == "done"


def test_a_new_run_starts_counters_over_but_keeps_items_and_checkpoints() -> None:
    state = reduce(
        records(
            started(),
            ("item_claimed", {"item": "D1"}),
            iteration(1),
            ("spend", {"tokens": 5000, "usd": 9.0}),
            ("budget_tripped", {"which": "tokens", "observed": 5000, "cap": 1000}),
            ("stop", {"reason": "budget", "exit_code": 21}),
            started(budget={"tokens": 10000}),
        )
    )
    assert state["loop"]["run"] == 2 and state["loop"]["iteration"] == 0
    assert state["budget"]["spent"]["tokens"] == 0 and state["budget"]["tripped"] == []
    assert state["budget"]["caps"]["tokens"] == 10000 and state["budget"]["caps"]["usd"] is None
    assert state["items"] == {"D1": "claimed"}
    assert state["loop"]["status"] == "running"


def test_progress_keys_keep_the_last_ten() -> None:
    state = reduce(records(started(), *(iteration(n, f"k{n}") for n in range(1, 25))))
    assert state["progress_keys"] == [f"k{n}" for n in range(25 - PROGRESS_KEEP, 25)]
    assert state["loop"]["iteration"] == 24


def test_unknown_kinds_are_counted_and_bad_events_are_named() -> None:
    state = reduce(
        records(
            started(),
            ("future_thing", {"x": 1}),
            ("future_thing", {}),
            ("spend", {"tokens": -5, "usd": 1.0}),
            ("spend", {"tokens": 1, "usd": "lots"}),
            ("spend", {"tokens": 1, "usd": 10**400}),
            ("checkpoint_resolved", {"id": "zz", "by": "a", "decision": "maybe"}),
            ("checkpoint_resolved", {"id": "c9", "by": "a", "decision": "approve"}),
            ("item_done", {"item": "D2", "hook_exit": 1}),
            (
                "amend",
                {"item": "D3", "text": "t", "tests": [], "by": "a", "contract_sha256": "b" * 64},
            ),
        )
    )
    assert state["unknown_kinds"] == {"future_thing": 2}
    assert state["budget"]["spent"]["tokens"] == 0
    notes = " | ".join(state["anomalies"])
    assert "seq 4: spend ignored" in notes and "seq 6: spend ignored" in notes
    assert "not approve|deny" in notes and "never raised" in notes and "hook exited 1" in notes
    assert state["items"] == {}
    assert state["checkpoints"]["c9"]["status"] == "approved"
    assert state["contract"]["sha256"] == "b" * 64
    assert state["contract"]["amendments"][0]["item"] == "D3"


kinds = st.sampled_from(
    ["loop_started", "iteration", "spend", "stop", "resumed", "item_claimed", "x-future"]
)
event = st.tuples(
    kinds,
    st.fixed_dictionaries(
        {},
        optional={
            "n": st.integers(0, 50),
            "tokens": st.integers(-2, 500),
            "usd": st.floats(allow_nan=True, allow_infinity=True),
            "exit_code": st.sampled_from([0, 20, 21, 24]),
            "item": st.text(max_size=3),
            "budget": st.fixed_dictionaries({}, optional={"usd": st.floats(0, 10)}),
        },
    ),
)


@given(st.lists(event, max_size=40))
def test_reduce_is_pure_and_json_safe(events: list[tuple[str, dict[str, Any]]]) -> None:
    recs = records(*events)
    frozen = copy.deepcopy(recs)
    first = reduce(recs)
    assert recs == frozen, "reduce must not touch its input"
    assert reduce(recs) == first
    assert first["loop"]["status"] in ("idle", "running", "stopped", "done", "awaiting_human")
    json.dumps(finite_json(first), allow_nan=False)  # what `status --json` prints: strict JSON
    runs = [i for i, (kind, _) in enumerate(events) if kind == "loop_started"]
    tail = events[runs[-1] :] if runs else events
    valid = [
        d
        for kind, d in tail
        if kind == "spend"
        and d.get("tokens", 0) >= 0
        and math.isfinite(d.get("usd", 0.0))
        and 0 <= d.get("usd", 0.0) <= MAX_USD
    ]
    assert first["budget"]["spent"]["tokens"] == sum(d.get("tokens", 0) for d in valid)
    assert first["budget"]["spent"]["usd"] == pytest.approx(sum(d.get("usd", 0.0) for d in valid))


# --------------------------------------------------------------------------- the loop lock

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pytest_loopcontract.loop.lock import LoopLock
    with LoopLock(sys.argv[1], ["loop-contract", "loop", "--", "claude", "-p", "fix it"]):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_a_second_loop_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    state_dir = tmp_path / ".loop-contract"
    holder = subprocess.Popen([PY, "-c", HOLDER, str(state_dir)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        with pytest.raises(LockHeld) as caught:
            LoopLock(state_dir, "loop-contract loop -- codex").acquire()
        message = str(caught.value)
        assert f"pid {holder.pid}" in message
        assert "loop-contract loop -- claude -p 'fix it'" in message
        assert "since 20" in message and f"kill {holder.pid}" in message
        assert caught.value.holder["pid"] == holder.pid
        info = lock_holder(state_dir)
        assert info is not None and info["pid"] == holder.pid
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # kill -9: no cleanup runs
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert lock_holder(state_dir) is None, "the kernel released a dead holder's lock"
    with LoopLock(state_dir, "second") as lock:
        assert lock.holder["pid"] == os.getpid()
        with pytest.raises(LockHeld, match=f"pid {os.getpid()}"):
            LoopLock(state_dir, "third").acquire()
    assert lock_holder(state_dir) is None
    assert (state_dir / "loop.lock").read_bytes() == b""
