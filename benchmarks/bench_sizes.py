#!/usr/bin/env python
"""Benchmark the size of ``baseline.json`` and ``verdict.json`` of a large suite.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_sizes.py [--tests 60000] [--repeat 7] [--out PATH]

What it measures, for ``--tests`` synthetic results with realistic node ids
(``tests/pkg03/test_module_042.py::TestClass1::test_something_long_4[param-7]``, three classes
and module-level tests per module, parametrized; 1 % failing with a message, 0.5 % skipped,
ten acceptance tests failing at baseline):

1. **Bytes** of ``baseline.json`` (``BaselineRecord.to_json`` + ``write_json_atomic``, the real
   writers) and of ``verdict.json`` (``evaluate`` of a candidate run that fixes the acceptance
   tests, + ``write_json_atomic``), in the current format and, for comparison, the format-1
   shape both had before (plain id lists, one record per test).
2. **Time** to write and to read each (median and min of ``--repeat``; reading is
   ``load_baseline`` and ``json.loads`` + ``verdict_outcomes``), against the **anchor**:
   ``json.dumps`` / ``json.loads`` of the plain list of the node ids, the least any JSON
   writer of those ids pays.

Target: both files under 5 MB for 60,000 tests. It prints a table, PASS/MISS, and writes
everything to ``benchmarks/results/sizes-<date>.json``. Only the standard library and the
project are used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pytest_loopcontract.fsio import write_json_atomic  # noqa: E402
from pytest_loopcontract.statedir import StateDir  # noqa: E402
from pytest_loopcontract.verdict_outcomes import verdict_outcomes  # noqa: E402
from pytest_loopcontract.verifier.baseline.record import BaselineRecord, load_baseline  # noqa: E402
from pytest_loopcontract.verifier.results import RunResults  # noqa: E402
from testing.large_suite import (  # noqa: E402
    ACCEPTANCE,
    baseline_record,
    candidate_results,
    outcome_of,
    synthetic_ids,
    verdict_document,
)

TARGET_BYTES = 5_000_000


def format1_baseline(record: BaselineRecord) -> dict[str, Any]:
    """What the previous writer produced: every set a plain list or map."""
    data = asdict(record)
    data["schema_version"] = 1
    return data


def format1_verdict(document: dict[str, Any], results: RunResults) -> dict[str, Any]:
    """The verdict as format 1 had it: one record per test, pass_to_pass a plain list."""
    old = dict(document)
    old["schema_version"] = 1
    old["tests"] = [
        {"nodeid": t.nodeid, "outcome": t.outcome, "duration": round(t.duration, 6), "when": t.when}
        | ({"message": t.message} if t.message else {})
        for t in results.tests
    ]
    old["baseline"] = dict(document["baseline"], pass_to_pass=list(baseline_p2p(results)))
    return old


def baseline_p2p(results: RunResults) -> list[str]:
    return [
        t.nodeid
        for i, t in enumerate(results.tests)
        if i >= ACCEPTANCE and outcome_of(i) == "passed"
    ]


def timings(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Wall and CPU seconds: on a shared machine CPU time says what an idle core would take."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {
        "median_s": statistics.median(wall),
        "min_s": min(wall),
        "cpu_median_s": statistics.median(cpu),
    }


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
    }


def run(count: int, repeat: int) -> dict[str, Any]:
    ids = synthetic_ids(count)
    record = baseline_record(ids)
    with tempfile.TemporaryDirectory(prefix="bench-sizes-") as tmp:
        root = Path(tmp)
        anchor_file, verdict_file = root / "ids.json", root / "verdict.json"
        old_baseline, old_verdict = root / "baseline-format1.json", root / "verdict-format1.json"
        document = verdict_document(ids, record, root)
        write_json_atomic(StateDir.of(root).baseline, record.to_json())
        write_json_atomic(verdict_file, document)
        write_json_atomic(old_baseline, format1_baseline(record))
        write_json_atomic(old_verdict, format1_verdict(document, candidate_results(ids)))
        anchor_text = json.dumps(ids)
        anchor_file.write_text(anchor_text, "utf-8")
        sizes = {
            "baseline_bytes": StateDir.of(root).baseline.stat().st_size,
            "verdict_bytes": verdict_file.stat().st_size,
            "baseline_format1_bytes": old_baseline.stat().st_size,
            "verdict_format1_bytes": old_verdict.stat().st_size,
            "anchor_id_list_bytes": len(anchor_text.encode("utf-8")),
        }
        times = {
            "anchor_dumps_ids": timings(lambda: json.dumps(ids), repeat),
            "anchor_loads_ids": timings(lambda: json.loads(anchor_text), repeat),
            "baseline_write": timings(
                lambda: write_json_atomic(StateDir.of(root).baseline, record.to_json()), repeat
            ),
            "baseline_read": timings(lambda: load_baseline(root), repeat),
            "verdict_write": timings(lambda: write_json_atomic(verdict_file, document), repeat),
            "verdict_read": timings(
                lambda: verdict_outcomes(json.loads(verdict_file.read_text("utf-8"))), repeat
            ),
        }
        loaded = load_baseline(root)
        assert loaded.outcomes == record.outcomes and set(loaded.pass_to_pass) == set(
            record.pass_to_pass
        )
    return {
        "benchmark": "sizes",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "parameters": {
            "tests": count,
            "repeat": repeat,
            "mean_id_chars": sum(map(len, ids)) / len(ids),
        },
        "sizes": sizes,
        "times": times,
        "target_bytes": TARGET_BYTES,
        "pass": sizes["baseline_bytes"] < TARGET_BYTES and sizes["verdict_bytes"] < TARGET_BYTES,
    }


def report(result: dict[str, Any]) -> str:
    sizes, times = result["sizes"], result["times"]
    lines = [
        f"{result['parameters']['tests']} tests, mean node id "
        f"{result['parameters']['mean_id_chars']:.1f} chars",
        f"{'file':<28}{'bytes':>12}{'format 1':>12}",
        f"{'baseline.json':<28}{sizes['baseline_bytes']:>12,}{sizes['baseline_format1_bytes']:>12,}",
        f"{'verdict.json':<28}{sizes['verdict_bytes']:>12,}{sizes['verdict_format1_bytes']:>12,}",
        f"{'anchor: the plain id list':<28}{sizes['anchor_id_list_bytes']:>12,}",
        "",
        f"{'operation':<28}{'median s':>10}{'min s':>10}{'cpu s':>10}{'x anchor':>10}",
    ]
    anchor_cpu = times["anchor_dumps_ids"]["cpu_median_s"]
    for name, t in times.items():
        lines.append(
            f"{name:<28}{t['median_s']:>10.4f}{t['min_s']:>10.4f}{t['cpu_median_s']:>10.4f}"
            f"{t['cpu_median_s'] / anchor_cpu:>10.1f}"
        )
    lines.append("(x anchor: CPU median over the CPU median of json.dumps of the plain id list)")
    verdict = "PASS" if result["pass"] else "MISS"
    lines.append(f"\n{verdict}: both files under {result['target_bytes']:,} bytes")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.tests, args.repeat)
    text = report(result)
    print(text)
    out = args.out or HERE / "results" / f"sizes-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    out.with_suffix(".txt").write_text(text + "\n", "utf-8")
    print(f"written to {out}")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
