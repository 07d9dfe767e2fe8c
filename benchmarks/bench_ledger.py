#!/usr/bin/env python
"""Benchmark the contest ledger: appending rows, and verifying a 100,000-row chain.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_ledger.py [--rows 100000] [--batch 1000] [--single 2000]
                                      [--repeat 5] [--out PATH]

What it measures:

1. **Append in batches** (``Ledger.append_many``, one ``BEGIN IMMEDIATE`` transaction per
   ``--batch`` rows) of ``--rows`` realistic contest rows (dispatches with reported and
   unreported cost, outcomes, validity-matrix scores, decisions, events), and **single appends**
   (``Ledger.append``, one transaction per row, the way a contest writes) of ``--single`` rows
   into a second ledger. Reported as rows per second.
2. **Verify** the ``--rows`` ledger, ``--repeat`` times, interleaved round by round with the
   **anchor**: the same ``SELECT`` of every column of every row plus a SHA-256 of each payload,
   with no chain logic. The anchor is the least any hash-checking reader of this file pays on
   this machine right now, so the ratio shows what the chain walk adds, whatever the load. Also
   timed: a bare ``SELECT`` (no hashing) and ``verify_file`` (open + verify, the CLI's path).

The target is ``verify()`` under 1 s (wall-clock median). Machines shared with other work make
wall time noisy, so CPU time (``time.process_time``) and the load average are printed as well.
Only the standard library and the project are used. ``--out`` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.ledger import Ledger, verify_file
from pytest_loopcontract.contest.ledger.rows import Entry

TARGET_VERIFY_S = 1.0
SEATS = (("claude", "anthropic"), ("codex", "openai"), ("gemini", "google"), ("opus", "anthropic"))
COLUMNS = (
    "seq, run_id, kind, contract_id, seat, family, payload, tokens, cost_usd, created_at, "
    "prev_hash, row_hash"
)


def entries(n: int) -> Iterator[Entry]:
    """Contest-shaped rows: each run dispatches, gates, cross-scores and decides."""
    made = 0
    run = 0
    while True:
        run += 1
        run_id = f"run-{run:06d}"
        rows: list[Entry] = [
            Entry(
                "run_started",
                run_id,
                "bench",
                {
                    "contract": {"id": "bench", "sha256": "a" * 64},
                    "seats": [{"seat": s, "family": f} for s, f in SEATS],
                },
            )
        ]
        for i, (seat, family) in enumerate(SEATS):
            reported = (run + i) % 5 != 0
            rows.append(
                Entry(
                    "dispatch",
                    run_id,
                    "bench",
                    {"role": "candidate", "attempt": 1, "command": f"{seat} -p 'fix the bug'"},
                    seat,
                    family,
                    18234 + i if reported else None,
                    0.0731 * (i + 1) if reported else None,
                )
            )
            rows.append(
                Entry(
                    "outcome",
                    run_id,
                    "bench",
                    {"verdict": "pass", "exit_code": 0, "attempt": 1, "reasons": []},
                    seat,
                    family,
                )
            )
        for judge, family in SEATS:
            for target, _ in SEATS:
                if target == judge:
                    continue
                rows.append(
                    Entry(
                        "score",
                        run_id,
                        "bench",
                        {
                            "target": target,
                            "validity": 3.25,
                            "call": "pass",
                            "rows": {
                                "question_fidelity": 0.9,
                                "completeness": 0.8,
                                "evidence": 0.75,
                                "test_agreement": 0.8,
                            },
                        },
                        judge,
                        family,
                    )
                )
        rows.append(
            Entry(
                "event",
                run_id,
                "bench",
                {"event": "spread_over_threshold", "target": "codex", "spread": 1.5},
            )
        )
        rows.append(
            Entry(
                "decision",
                run_id,
                "bench",
                {
                    "winner": "claude",
                    "outcomes": {s: "pass" if s == "claude" else "fail" for s, _ in SEATS},
                },
                "claude",
                "anthropic",
            )
        )
        for entry in rows:
            if made == n:
                return
            yield entry
            made += 1


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one call, and its value."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def build(path: Path, n: int, batch: int) -> dict[str, Any]:
    with Ledger(path) as ledger:
        stream = entries(n)
        seconds = 0.0
        done = 0
        while done < n:
            chunk = [e for _, e in zip(range(min(batch, n - done)), stream, strict=False)]
            start = time.perf_counter()
            ledger.append_many(chunk)
            seconds += time.perf_counter() - start
            done += len(chunk)
            if done % (batch * 20) == 0 or done == n:
                print(f"  appended {done:>7}/{n}", flush=True)
        assert ledger.count() == n
    size = sum(
        Path(f"{path}{suffix}").stat().st_size
        for suffix in ("", "-wal")
        if Path(f"{path}{suffix}").exists()
    )
    return {
        "rows": n,
        "batch": batch,
        "seconds": round(seconds, 3),
        "rows_per_s": round(n / seconds, 1),
        "bytes": size,
    }


def single(path: Path, n: int) -> dict[str, Any]:
    with Ledger(path) as ledger:
        stream = list(entries(n))
        start = time.perf_counter()
        for e in stream:
            ledger.append(
                e.kind,
                run_id=e.run_id,
                contract_id=e.contract_id,
                payload=e.payload,
                seat=e.seat,
                family=e.family,
                tokens=e.tokens,
                cost_usd=e.cost_usd,
            )
        seconds = time.perf_counter() - start
    return {"rows": n, "seconds": round(seconds, 3), "rows_per_s": round(n / seconds, 1)}


def anchor(db: sqlite3.Connection) -> int:
    """SELECT every row and hash each payload: no chain, no canonical form."""
    sha256 = hashlib.sha256
    count = 0
    for row in db.execute(f"SELECT {COLUMNS} FROM rows ORDER BY seq"):
        sha256(row[6].encode()).hexdigest()
        count += 1
    return count


def bare_select(db: sqlite3.Connection) -> int:
    count = 0
    for _ in db.execute(f"SELECT {COLUMNS} FROM rows ORDER BY seq"):
        count += 1
    return count


def bench_verify(path: Path, repeat: int) -> dict[str, Any]:
    series: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": []} for name in ("verify", "anchor", "select", "verify_file")
    }
    db = sqlite3.connect(path)
    with Ledger(path) as ledger:
        ledger.verify()  # warm the page cache once, untimed
        anchor(db)
        for round_ in range(repeat):
            calls: list[tuple[str, Callable[[], Any]]] = [
                ("verify", ledger.verify),
                ("anchor", lambda: anchor(db)),
                ("select", lambda: bare_select(db)),
                ("verify_file", lambda: verify_file(path)),
            ]
            shift = round_ % len(calls)  # rotate who goes first each round
            for name, fn in calls[shift:] + calls[:shift]:
                wall, cpu, value = timed(fn)
                if name.startswith("verify"):
                    assert value.ok, value.reason
                series[name]["wall"].append(wall)
                series[name]["cpu"].append(cpu)
    db.close()
    out: dict[str, Any] = {}
    for name, got in series.items():
        out[name] = {
            "median_s": round(statistics.median(got["wall"]), 4),
            "min_s": round(min(got["wall"]), 4),
            "cpu_median_s": round(statistics.median(got["cpu"]), 4),
            "wall_s": [round(x, 4) for x in got["wall"]],
        }
    out["ratio_to_anchor"] = round(out["verify"]["median_s"] / out["anchor"]["median_s"], 3)
    out["cpu_ratio_to_anchor"] = round(
        out["verify"]["cpu_median_s"] / out["anchor"]["cpu_median_s"], 3
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--single", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    before = machine()
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as folder:
        print(f"building a {args.rows}-row ledger in batches of {args.batch} ...")
        built = build(Path(folder) / "ledger.sqlite", args.rows, args.batch)
        print(f"single appends ({args.single} rows, one transaction each) ...")
        one = single(Path(folder) / "single.sqlite", args.single)
        print(f"verify x{args.repeat}, interleaved with the anchor ...")
        verified = bench_verify(Path(folder) / "ledger.sqlite", args.repeat)
    after = machine()["loadavg"]

    v = verified["verify"]
    status = "PASS" if v["median_s"] < TARGET_VERIFY_S else "MISS"
    print()
    print(f"machine: {before['platform']}, python {before['python']}, sqlite {before['sqlite']},")
    print(f"         {before['nproc']} cpus, loadavg before {before['loadavg']} after {after}")
    print(
        f"append_many: {built['rows_per_s']:>10,.0f} rows/s  "
        f"({built['rows']} rows in {built['seconds']} s, batches of {built['batch']}, "
        f"{built['bytes'] / 1e6:.1f} MB)"
    )
    print(f"append:      {one['rows_per_s']:>10,.0f} rows/s  (one transaction per row)")
    print()
    print(f"{'':<13}{'median s':>10}{'min s':>10}{'cpu s':>10}")
    for name in ("verify", "verify_file", "anchor", "select"):
        r = verified[name]
        print(f"{name:<13}{r['median_s']:>10.3f}{r['min_s']:>10.3f}{r['cpu_median_s']:>10.3f}")
    print(
        f"\nverify / anchor: {verified['ratio_to_anchor']:.2f}x wall, "
        f"{verified['cpu_ratio_to_anchor']:.2f}x cpu"
    )
    print(
        f"target: verify of {args.rows:,} rows < {TARGET_VERIFY_S:.0f} s (wall median): "
        f"{status} ({v['median_s']:.3f} s; cpu {v['cpu_median_s']:.3f} s)"
    )
    if args.out:
        doc = {
            "benchmark": "ledger",
            "date": dt.date.today().isoformat(),
            "machine": before,
            "loadavg_after": after,
            "append_many": built,
            "append": one,
            "verify": verified,
            "target_s": TARGET_VERIFY_S,
            "status": status,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        print(f"wrote {args.out}")
    return 0 if status == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
