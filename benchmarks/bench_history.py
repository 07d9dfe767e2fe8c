#!/usr/bin/env python
"""Benchmark the loop history: appending records, and rebuilding status from the history.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_history.py [--records 100000] [--repeat 7] [--out PATH]

What it measures:

1. **Append, production mode** (``History.append``: lock, read the tail, one write, ``fsync``)
   of ``--records`` realistic records (mostly ``iteration``, some ``spend``, checkpoints),
   interleaved in blocks with the **anchor**: a plain ``os.write`` + ``fsync`` of the very same
   line bytes to another file in the same folder. The anchor is what durability alone costs on
   this disk; the ratio shows what the chain, the lock and the tail read add.
2. **Append without fsync** (``History(fsync=False)``), against the anchor without fsync: the
   history's CPU cost, for context. Not how the loop runs.
3. **Rebuild status** from the ``--records``-line history: ``History.read()`` (read the file,
   parse, verify the chain) + ``reduce()``, ``--repeat`` times; median and min, split into the
   two phases (every reader folds the history: there is no state cache). Anchor:
   ``json.loads`` of every line, the least any JSON-lines reader pays on this machine. Wall
   and CPU seconds both: on a shared machine the CPU time is what an idle core would take.

Targets: rebuild under 1 s. It prints a table, PASS/MISS, and writes everything to
``benchmarks/results/history-<date>.json``. Only the standard library and the project are used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from pytest_loopcontract.history import History
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.statedir import StateDir

HERE = Path(__file__).resolve().parent
TARGET_REBUILD_S = 1.0
BLOCK = 2000


def events(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """A loop's worth of events: iterations with spend, now and then a checkpoint."""
    yield (
        "loop_started",
        {
            "contract_id": "bench",
            "contract_sha256": "a" * 64,
            "budget": {"iterations": n, "minutes": 600, "tokens": 10**12, "usd": 10**6},
            "command": "claude -p 'make the tests pass' --output-format json",
            "started_at": "2026-01-01T00:00:00Z",
        },
    )
    i = 1
    while i < n:
        k = i % 10
        if k == 9:
            yield (
                "checkpoint_raised",
                {
                    "id": f"c{i}",
                    "pattern_id": "git-push",
                    "kind": "command",
                    "message": "pushing needs a human",
                    "evidence": "git push origin HEAD:main",
                },
            )
        elif k == 0:
            yield ("checkpoint_resolved", {"id": f"c{i - 1}", "by": "alice", "decision": "approve"})
        elif k % 2:
            yield (
                "iteration",
                {
                    "n": i,
                    "verdict": "fail",
                    "exit_code": 20,
                    "failing": [
                        "tests/test_slug.py::test_unicode",
                        "tests/test_slug.py::test_dash",
                    ],
                    "progress_key": f"{i * 2654435761 % 2**32:08x}",
                    "empty_diff": False,
                    "gates_passing": 3,
                    "gates_total": 5,
                    "duration_s": 4.25,
                },
            )
        else:
            yield (
                "spend",
                {"tokens": 18234, "usd": 0.0731, "seat": "claude", "source": "agent-json"},
            )
        i += 1


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def cpu_timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds: on a shared machine CPU time says what an idle core would take."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def bench_append(folder: Path, n: int, fsync: bool) -> dict[str, Any]:
    """History.append against the anchor, interleaved block by block on the same disk."""
    folder.mkdir(parents=True)
    history = History(folder / "state", fsync=fsync)
    anchor_path = folder / "anchor.jsonl"
    anchor_fd = os.open(anchor_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    history_s = anchor_s = 0.0
    stream = events(n)
    done = 0
    try:
        while done < n:
            block = [next(stream) for _ in range(min(BLOCK, n - done))]
            start = time.perf_counter()
            for kind, data in block:
                history.append(kind, data)
            history_s += time.perf_counter() - start
            # The anchor writes exactly the bytes the history just wrote.
            lines = _last_lines(history.path, len(block))
            start = time.perf_counter()
            for line in lines:
                os.write(anchor_fd, line)
                if fsync:
                    os.fsync(anchor_fd)
            anchor_s += time.perf_counter() - start
            done += len(block)
            print(f"  {'fsync' if fsync else 'no fsync'}: {done:>7}/{n}", end="\r", flush=True)
    finally:
        os.close(anchor_fd)
    print()
    size = history.path.stat().st_size
    return {
        "records": n,
        "fsync": fsync,
        "history_s": round(history_s, 3),
        "history_records_per_s": round(n / history_s, 1),
        "anchor_s": round(anchor_s, 3),
        "anchor_records_per_s": round(n / anchor_s, 1),
        "ratio_to_anchor": round(history_s / anchor_s, 3),
        "bytes": size,
        "mean_line_bytes": round(size / n, 1),
    }


def _last_lines(path: Path, count: int) -> list[bytes]:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        chunk = 1 << 20
        while True:
            start = max(0, end - chunk)
            fh.seek(start)
            lines = fh.read(end - start).splitlines(keepends=True)
            if len(lines) > count or start == 0:
                return lines[-count:]
            chunk *= 2


def bench_rebuild(state_dir: Path, repeat: int) -> dict[str, Any]:
    history = History(state_dir)
    read_s: list[float] = []
    reduce_s: list[float] = []
    total_s: list[float] = []
    cpu_s: list[float] = []
    state: dict[str, Any] = {}
    blob = StateDir(state_dir).history.read_bytes()
    lines = blob.split(b"\n")[:-1]
    anchor_s: list[float] = []
    anchor_cpu_s: list[float] = []

    def anchor() -> None:
        wall, cpu, _ = cpu_timed(lambda: [json.loads(line) for line in lines])
        anchor_s.append(wall)
        anchor_cpu_s.append(cpu)

    for round_no in range(repeat):
        # Round-robin with the anchor, order alternating, so load drift hits both alike.
        if round_no % 2:
            anchor()
        cpu_start = time.process_time()
        t_read, found = timed(history.read)
        assert found.chain_breaks == [] and found.torn is None
        t_reduce, state = timed(partial(reduce, found.records))
        cpu_s.append(time.process_time() - cpu_start)
        read_s.append(t_read)
        reduce_s.append(t_reduce)
        total_s.append(t_read + t_reduce)
        del found
        if not round_no % 2:
            anchor()
    return {
        "lines": len(lines),
        "bytes": len(blob),
        "events_reduced": state["events"],
        "rebuild_s_median": round(statistics.median(total_s), 3),
        "rebuild_s_min": round(min(total_s), 3),
        "read_verify_s_median": round(statistics.median(read_s), 3),
        "reduce_s_median": round(statistics.median(reduce_s), 3),
        "rebuild_cpu_s_median": round(statistics.median(cpu_s), 3),
        "anchor_json_loads_s_median": round(statistics.median(anchor_s), 3),
        "anchor_json_loads_cpu_s_median": round(statistics.median(anchor_cpu_s), 3),
        "ratio_to_anchor": round(statistics.median(total_s) / statistics.median(anchor_s), 3),
        "runs": [round(t, 3) for t in total_s],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--skip-fsync", action="store_true", help="only the no-fsync append")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: temp)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    began = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "history",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {**machine(), "loadavg_at_start": list(os.getloadavg())},
        "parameters": {"records": args.records, "repeat": args.repeat, "block": BLOCK},
    }
    base = Path(tempfile.mkdtemp(prefix="bench-history-", dir=args.dir))
    try:
        print(f"append {args.records} records without fsync (context) ...")
        result["append_no_fsync"] = bench_append(base / "nofsync", args.records, fsync=False)
        if not args.skip_fsync:
            print(f"append {args.records} records with fsync per record (production) ...")
            result["append_fsync"] = bench_append(base / "fsync", args.records, fsync=True)
        source = base / ("nofsync" if args.skip_fsync else "fsync") / "state"
        print(f"rebuild status from {args.records} lines, {args.repeat} times ...")
        result["rebuild"] = bench_rebuild(source, args.repeat)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    rebuild = result["rebuild"]["rebuild_s_median"]
    result["targets"] = {
        "rebuild_under_1s": {
            "target_s": TARGET_REBUILD_S,
            "observed_s": rebuild,
            "observed_cpu_s": result["rebuild"]["rebuild_cpu_s_median"],
            "pass": rebuild < TARGET_REBUILD_S,
        },
    }
    result["elapsed_s"] = round(time.perf_counter() - began, 1)

    print()
    print(f"{'measure':<44}{'history':>14}{'anchor':>14}{'ratio':>8}")
    for key, label in (
        ("append_fsync", "append, fsync per record (records/s)"),
        ("append_no_fsync", "append, no fsync (records/s)"),
    ):
        if key in result:
            row = result[key]
            print(
                f"{label:<44}{row['history_records_per_s']:>14,.0f}"
                f"{row['anchor_records_per_s']:>14,.0f}{row['ratio_to_anchor']:>8.2f}"
            )
    rb = result["rebuild"]
    print(
        f"{'rebuild status, median s (read+verify+reduce)':<44}{rb['rebuild_s_median']:>14.3f}"
        f"{rb['anchor_json_loads_s_median']:>14.3f}{rb['ratio_to_anchor']:>8.2f}"
    )
    print(
        f"{'  same, CPU seconds':<44}{rb['rebuild_cpu_s_median']:>14.3f}"
        f"{rb['anchor_json_loads_cpu_s_median']:>14.3f}"
        f"{rb['rebuild_cpu_s_median'] / rb['anchor_json_loads_cpu_s_median']:>8.2f}"
    )
    print(
        f"  read+verify {rb['read_verify_s_median']:.3f} s, reduce {rb['reduce_s_median']:.3f} s, "
        f"min {rb['rebuild_s_min']:.3f} s"
    )
    verdict = "PASS" if result["targets"]["rebuild_under_1s"]["pass"] else "MISS"
    print(
        f"target rebuild < {TARGET_REBUILD_S:.0f} s: {verdict} ({rebuild:.3f} s wall, "
        f"{rb['rebuild_cpu_s_median']:.3f} s CPU)"
    )
    print(
        f"load average {result['machine']['loadavg_at_start']} -> "
        f"{result['machine']['loadavg_at_end']}, {os.cpu_count()} CPUs"
    )

    out = args.out or HERE / "results" / f"history-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
