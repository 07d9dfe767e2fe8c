#!/usr/bin/env python
"""The capability policy's audit hook, per event: microseconds it adds to the events a test
run raises most, against the same loop with no hook (the anchor), in the same run.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_policy.py [--repeat 5] [--events 200000]

An audit hook cannot be removed, so each variant runs in its own process: ``none`` (no hook),
``hook`` (the inner package's policy, configured as verify configures it, with a candidate file
that is not on the stack). Variants interleaved, order rotated each round, one untimed warm-up
round. Per event kind, the median per-event time of each variant and the difference:

- ``import`` events (``compile`` of a small text raises ``compile``): the fast path, the event
  name alone decides;
- ``object.__getattr__`` of ``__code__`` (pytest and inspect read it often): the attribute name
  decides;
- ``open`` of an ordinary file: the path is resolved and looked up;
- ``sys._getframe``: governed, so the stack is walked to attribute it (to nobody here).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PROBE = r"""
import json, os, sys, time
variant, n, scratch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.chdir(scratch)
if variant == "hook":
    sys.path.insert(0, sys.argv[4])
    from pytest_loopcontract.verifier.inner.policy import Policy, install
    policy = Policy()
    policy.configure({"candidate": ["src/pkg/elsewhere.py"], "referee": ["tests/test_x.py"]})
    install(policy)
path = os.path.join(scratch, "data.txt")
open(path, "w").close()
def f():
    pass
def timed(loop):
    start = time.perf_counter()
    loop()
    return (time.perf_counter() - start) / n * 1e6
def compiles():
    for _ in range(n // 10):
        compile("1", "<x>", "eval")
def code_reads():
    for _ in range(n):
        f.__code__
def opens():
    for _ in range(n // 10):
        open(path).close()
def frames():
    for _ in range(n):
        sys._getframe()
print(json.dumps({
    "compile": timed(compiles) * 10, "__code__ read": timed(code_reads),
    "open": timed(opens) * 10, "sys._getframe": timed(frames),
}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"none": [], "hook": []}
    with tempfile.TemporaryDirectory(prefix="loopcontract-benchpolicy-") as scratch:
        names = list(runs)
        for r in range(args.repeat + 1):
            for variant in names[r % 2 :] + names[: r % 2]:
                argv = [sys.executable, "-c", PROBE, variant, str(args.events), scratch, str(ROOT)]
                done = subprocess.run(argv, capture_output=True, text=True, check=True)
                if r:
                    runs[variant].append(json.loads(done.stdout))
    kinds = list(runs["none"][0])
    table = {}
    for kind in kinds:
        none = statistics.median(run[kind] for run in runs["none"])
        hook = statistics.median(run[kind] for run in runs["hook"])
        spread = [round(run[kind], 3) for run in runs["none"]]
        table[kind] = {
            "none_us": round(none, 3),
            "hook_us": round(hook, 3),
            "added_us": round(hook - none, 3),
            "anchor_runs_us": spread,
        }
        print(f"{kind:16s} none {none:7.3f} us  hook {hook:7.3f} us  added {hook - none:7.3f} us")
    result = {
        "benchmark": "policy",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "parameters": {"repeat": args.repeat, "events": args.events, "warmup_rounds": 1},
        "per_event": table,
    }
    path = HERE / "results" / f"policy-{dt.date.today().isoformat()}.json"
    path.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
