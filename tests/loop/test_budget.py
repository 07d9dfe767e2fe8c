"""Spend validation, caps under concurrent spenders (threads and processes), agent output, time."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Instant, Record
from pytest_loopcontract.loop.budget import (
    Caps,
    Spend,
    crossed,
    elapsed_seconds,
    now_instant,
    parse_spend,
    record_spend,
    spend_from_agent_output,
    start_instant,
    time_budget_exceeded,
)
from pytest_loopcontract.loop.state import reduce

PY = sys.executable


# --------------------------------------------------------------------------- parse_spend


@pytest.mark.parametrize(
    "tokens, usd, expected",
    [
        ("1200", "0.75", Spend(1200, 0.75)),
        (1200, None, Spend(1200, 0.0, usd_reported=False)),
        (None, 0.5, Spend(0, 0.5)),
        (" 7 ", " 1e-3 ", Spend(7, 0.001)),
        ("1e3", 2, Spend(1000, 2.0)),
        (0, "0", Spend(0, 0.0)),
        (3.0, "+1.5", Spend(3, 1.5)),
    ],
)
def test_parse_spend_accepts_plain_numbers(
    tokens: str | float | None, usd: str | float | None, expected: Spend
) -> None:
    assert parse_spend(tokens, usd) == expected


@pytest.mark.parametrize(
    "tokens, usd, message",
    [
        ("nan", None, "tokens 'nan' is not a finite number"),
        (None, "NaN", "usd 'NaN' is not a finite number"),
        (None, float("nan"), "not a finite number"),
        (None, "inf", "not a finite number"),
        (float("inf"), None, "not a finite number"),
        ("-5", None, "negative"),
        (None, -0.01, "negative"),
        ("lots", None, "tokens 'lots' is not a number"),
        (None, "$1.20", r"usd '\$1.20' is not a number"),
        (None, "", "is not a number"),
        ("12.5", None, "not a whole number"),
        (None, "1e300", "not a plausible spend"),
        (True, None, "not a number"),
        (None, [1], "not a number"),
        (None, None, "nothing to record"),
    ],
)
def test_parse_spend_refuses_bad_input_clearly(tokens: Any, usd: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_spend(tokens, usd)


# --------------------------------------------------------------------------- caps


def start_loop(tmp_path: Path, **budget: float) -> History:
    history = History(tmp_path / ".loop-contract")
    history.append("loop_started", {"contract_id": "c", "budget": budget, "command": "x"})
    return history


def test_crossed_is_reaching_the_cap() -> None:
    caps = Caps(tokens=100, usd=1.0)
    assert crossed(Spend(99, 0.99), caps) == []
    assert crossed(Spend(100, 1.0), caps) == ["tokens", "usd"]
    assert crossed(Spend(10**9, 10.0**9), Caps()) == []


def test_a_spend_that_crosses_a_cap_trips_it_once_and_it_stays_tripped(tmp_path: Path) -> None:
    history = start_loop(tmp_path, tokens=1000, usd=1.0)
    first = record_spend(history, Spend(600, 0.2), "s1")
    assert first.tripped == [] and first.exit_code == 0
    second = record_spend(history, Spend(500, 0.2), "s1")
    assert second.newly_tripped == ["tokens"] and second.tripped == ["tokens"]
    assert second.exit_code == 21 and not second.after_trip
    assert second.spent_total == Spend(1100, 0.4)
    third = record_spend(history, Spend(0, 0.7), "s2", source="agent-json")
    assert third.newly_tripped == ["usd"] and third.tripped == ["tokens", "usd"]
    assert third.after_trip and third.record.data["after_trip"] is True
    fourth = record_spend(history, Spend(1, 0.0))
    assert fourth.newly_tripped == [] and fourth.tripped == ["tokens", "usd"]

    found = history.read()
    trips = [r.data for r in found.records if r.kind == "budget_tripped"]
    assert trips == [
        {"which": "tokens", "observed": 1100, "cap": 1000},
        {"which": "usd", "observed": 1.1, "cap": 1.0},
    ]
    state = reduce(found.records)
    assert state["budget"]["spent"]["tokens"] == 1101
    assert state["budget"]["spent"]["by_seat"]["s2"] == {"tokens": 0, "usd": 0.7}
    assert [t["which"] for t in state["budget"]["tripped"]] == ["tokens", "usd"]


def test_a_blank_seat_or_a_bad_spend_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    history = start_loop(tmp_path, tokens=10)
    with pytest.raises(ValueError, match="seat '  ' must be a non-empty name"):
        record_spend(history, Spend(1, 0.0), "  ")
    with pytest.raises(ValueError, match="not a finite number"):
        record_spend(history, Spend(1, float("nan")), "s")
    with pytest.raises(ValueError, match="negative"):
        record_spend(history, Spend(-1, 0.0), "s")
    assert [r.kind for r in history.read().records] == ["loop_started"]


def test_explicit_caps_and_no_caps(tmp_path: Path) -> None:
    history = History(tmp_path / "s")
    assert record_spend(history, Spend(10**9, 10**6)).tripped == []
    assert record_spend(history, Spend(1, 0), caps=Caps(tokens=5)).newly_tripped == ["tokens"]


SPENDER = textwrap.dedent(
    """
    import os, random, sys, time
    from pytest_loopcontract.loop.budget import Spend, record_spend
    from pytest_loopcontract.history import History
    state, seat, go, until = sys.argv[1:5]
    rng = random.Random(seat)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    history = History(state)
    while True:
        spend = Spend(rng.randint(1, 60), round(rng.uniform(0.01, 0.25), 4))
        result = record_spend(history, spend, seat)
        print(spend.tokens, spend.usd, flush=True)
        if (until == "all" and len(result.tripped) == 2) or (until == "any" and result.tripped):
            break
    """
)


def run_spenders(history: History, until: str, threads: int = 8, procs: int = 4) -> list[Any]:
    """Threads and processes spend at once; returns every call as (seat, tokens, usd)."""
    go = history.state_dir.parent / "go"
    children = [
        subprocess.Popen(
            [PY, "-c", SPENDER, str(history.state_dir), f"p{n}", str(go), until],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(procs)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    calls: list[tuple[str, int, float]] = []
    lock = threading.Lock()

    def spender(seat: str) -> None:
        import random

        rng = random.Random(seat)
        while True:
            spend = Spend(rng.randint(1, 60), round(rng.uniform(0.01, 0.25), 4))
            result = record_spend(history, spend, seat)
            with lock:
                calls.append((seat, spend.tokens, spend.usd))
            if (until == "all" and len(result.tripped) == 2) or (until == "any" and result.tripped):
                return

    workers = [threading.Thread(target=spender, args=(f"t{n}",)) for n in range(threads)]
    go.touch()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for n, child in enumerate(children):
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        pairs = out.split()
        calls.extend(
            (f"p{n}", int(t), float(u)) for t, u in zip(pairs[::2], pairs[1::2], strict=True)
        )
    return calls


def replay(records: list[Record]) -> dict[str, dict[str, float]]:
    """Check every trip against the running totals; return what each trip saw."""
    total = Spend()
    totals = before = {"tokens": 0.0, "usd": 0.0}
    seen: dict[str, dict[str, float]] = {}
    previous: Record | None = None
    for record in records:
        if record.kind == "spend":
            total = total + Spend(record.data["tokens"], record.data["usd"])
            before, totals = totals, {"tokens": total.tokens, "usd": total.usd}
            assert bool(record.data.get("after_trip")) == bool(seen), record
        elif record.kind == "budget_tripped":
            which = record.data["which"]
            assert which not in seen, f"{which} tripped twice"
            assert previous is not None
            # The trip follows the crossing spend (the same transaction, maybe after the other
            # cap's trip record), and that spend is the one that crossed.
            spend = previous if previous.kind == "spend" else None
            if spend is None:
                spend = next(r for r in reversed(records[: record.seq - 1]) if r.kind == "spend")
            cap = record.data["cap"]
            assert before[which] < cap <= totals[which]
            assert record.data["observed"] == totals[which]
            seen[which] = {"overshoot": totals[which] - cap, "call": spend.data[which]}
        previous = record
    return seen


def test_concurrent_spenders_trip_each_cap_exactly_once_at_the_crossing(tmp_path: Path) -> None:
    history = start_loop(tmp_path, tokens=4000, usd=9.0)
    calls = run_spenders(history, until="all")

    found = history.read()
    assert found.chain_breaks == [] and found.torn is None
    trips = Counter(r.data["which"] for r in found.records if r.kind == "budget_tripped")
    assert trips == {"tokens": 1, "usd": 1}
    seen = replay(found.records)
    largest = {"tokens": max(c[1] for c in calls), "usd": max(c[2] for c in calls)}
    for which, info in seen.items():
        assert info["overshoot"] <= info["call"] <= largest[which]
    spends = sorted(
        (r.data["seat"], r.data["tokens"], r.data["usd"])
        for r in found.records
        if r.kind == "spend"
    )
    assert spends == sorted(calls), "every reported call is recorded, none twice"
    assert len({seat for seat, _, _ in calls}) == 12


def test_concurrent_spenders_stop_after_the_trip_with_only_calls_in_flight(tmp_path: Path) -> None:
    history = start_loop(tmp_path, tokens=2500)
    calls = run_spenders(history, until="any")

    records = history.read().records
    trip_at = next(r.seq for r in records if r.kind == "budget_tripped")
    late = [r for r in records if r.kind == "spend" and r.seq > trip_at]
    assert all(r.data["after_trip"] for r in late)
    per_seat = Counter(r.data["seat"] for r in late)
    assert all(n == 1 for n in per_seat.values()), "a spender started a call after seeing the trip"
    assert len(late) <= 11, "at most one call in flight per other spender"
    at_trip = sum(r.data["tokens"] for r in records if r.kind == "spend" and r.seq < trip_at)
    assert at_trip - 2500 <= max(c[1] for c in calls)
    state = reduce(records)
    assert state["budget"]["spent"]["tokens"] == sum(c[1] for c in calls)


# --------------------------------------------------------------------------- agent output

CLAUDE_JSON = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "num_turns": 4,
    "result": "Done.",
    "session_id": "abc",
    "total_cost_usd": 0.0123,
    "usage": {
        "input_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 3000,
        "output_tokens": 150,
        "server_tool_use": {"web_search_requests": 0},
        "service_tier": "standard",
    },
}


def test_claude_code_json_output() -> None:
    assert spend_from_agent_output(json.dumps(CLAUDE_JSON)) == Spend(3360, 0.0123)


def test_claude_code_stream_json_with_noise() -> None:
    lines = [
        "warning: something odd",
        json.dumps({"type": "system", "subtype": "init", "session_id": "abc"}),
        json.dumps(
            {"type": "assistant", "message": {"usage": {"input_tokens": 5, "output_tokens": 5}}}
        ),
        "not json {",
        json.dumps({**CLAUDE_JSON, "total_cost_usd": 0.5}),
        "",
    ]
    assert spend_from_agent_output("\n".join(lines)) == Spend(3360, 0.5)


def test_pretty_printed_json_after_noise_and_arrays() -> None:
    text = "npm notice: update available\n" + json.dumps(CLAUDE_JSON, indent=2) + "\nbye\n"
    assert spend_from_agent_output(text) == Spend(3360, 0.0123)
    array = json.dumps([{"type": "system"}, CLAUDE_JSON])
    assert spend_from_agent_output(array) == Spend(3360, 0.0123)


def test_codex_turns_are_summed_and_cached_input_is_not_counted_twice() -> None:
    events = [
        {"type": "thread.started", "thread_id": "t"},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 20},
        },
        {"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": 5}},
    ]
    text = "\n".join(json.dumps(e) for e in events)
    assert spend_from_agent_output(text) == Spend(175, 0.0, usd_reported=False)  # no cost printed


def test_openai_style_usage_and_no_spend_at_all() -> None:
    text = json.dumps({"usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})
    assert spend_from_agent_output(text) == Spend(10, 0.0, usd_reported=False)
    assert spend_from_agent_output("all done, no json here") is None
    assert spend_from_agent_output(json.dumps({"type": "result", "result": "ok"})) is None
    assert spend_from_agent_output("") is None


@pytest.mark.parametrize("cost", ["NaN", "-1.0", '"free"', "Infinity"])
def test_a_bad_reported_cost_is_refused_not_dropped(cost: str) -> None:
    with pytest.raises(ValueError):
        spend_from_agent_output('{"type": "result", "total_cost_usd": ' + cost + "}")


# --------------------------------------------------------------------------- time


def test_elapsed_uses_the_monotonic_clock_on_one_boot() -> None:
    start = Instant(wall=1_000_000.0, mono=50.0, boot="b1")
    jumped_back = Instant(wall=900_000.0, mono=110.0, boot="b1")
    assert elapsed_seconds(start, jumped_back) == 60.0
    assert time_budget_exceeded(start, 1, jumped_back)
    assert not time_budget_exceeded(start, 2, jumped_back)
    assert not time_budget_exceeded(start, None, jumped_back)
    assert not time_budget_exceeded(None, 1, jumped_back)


def test_elapsed_falls_back_to_wall_time_across_a_reboot_and_is_never_negative() -> None:
    start = Instant(wall=1_000.0, mono=5_000.0, boot="b1")
    assert elapsed_seconds(start, Instant(wall=1_300.0, mono=10.0, boot="b2")) == 300.0
    assert elapsed_seconds(start, Instant(wall=400.0, mono=10.0, boot="b2")) == 0.0
    assert elapsed_seconds(Instant(5.0), Instant(8.0)) == 3.0


def test_the_run_start_comes_from_the_history_even_when_the_clock_jumps(tmp_path: Path) -> None:
    walls = iter([2_000_000_000.0, 1_000_000_000.0])
    monos = iter([100.0, 400.0])
    history = History(tmp_path / "s", clock=lambda: next(walls), monotonic=lambda: next(monos))
    history.append("loop_started", {"budget": {"minutes": 5}})
    later = history.append("iteration", {"n": 1})
    start = start_instant(reduce(history.read().records))
    assert start is not None and start.wall == 2_000_000_000.0 and start.mono == 100.0
    assert elapsed_seconds(start, later.instant()) == 300.0
    assert time_budget_exceeded(start, 5, later.instant())
    now = now_instant()
    assert math.isfinite(now.wall) and now.mono is not None
