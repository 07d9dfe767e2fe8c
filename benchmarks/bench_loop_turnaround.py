#!/usr/bin/env python
"""Benchmark how soon the governed loop's next turn starts after a verdict.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_loop_turnaround.py [--iterations 6] [--rounds 3]

Target (issue 34): the next iteration starts within 1 s of the verdict. A real
``loop-contract loop`` runs on a baselined copy of the slugify example (the fast contract,
``budget: {iterations: N}``) with a scripted agent that edits the tree without fixing it, so
every turn is verified and the loop goes on until the cap. The agent writes the wall-clock
time it starts to a log outside the repository; the history's ``iteration`` record, appended
right after the verdict is written, carries its own time. The gap from each ``iteration``
record to the next agent start is the loop's own turnaround (reading the history, the budget
and stop rules, the next prompt, starting the agent).

This is a latency with an absolute target, so there is no anchor to divide by: the figure is
printed as the median and the range over every gap of every round, beside the verify time of
the same turns (the test run of each verify), and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testing.loop_project import make_repo, write_agent  # noqa: E402

AGENT = """
with open({log!r}, "a") as fh:
    fh.write(repr(time.time()) + "\\n")
flail(turn_of(sys.stdin.read() if not sys.stdin.isatty() else ""))
"""


def one_round(base: Path, iterations: int) -> tuple[list[float], list[float]]:
    """(gaps from each iteration record to the next agent start, verify seconds per turn)."""
    repo = make_repo(base, budget=f"{{iterations: {iterations}}}")
    log = base / "starts.log"
    agent = write_agent(base, "flailer", AGENT.format(log=str(log)))
    loop = Path(sys.executable).parent / "loop-contract"
    done = subprocess.run(
        [str(loop), "loop", "--", sys.executable, str(agent)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 23:  # the iteration cap: every turn was verified
        raise SystemExit(f"loop exited {done.returncode}: {done.stdout[-500:]}{done.stderr}")
    starts = [float(line) for line in log.read_text().split()]
    history = (repo / ".loop-contract" / "history.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in history]
    turns = [r for r in records if r["kind"] == "iteration"]
    stamps = [datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).timestamp() for r in turns]
    gaps = [starts[i + 1] - stamps[i] for i in range(len(stamps)) if i + 1 < len(starts)]
    return gaps, [float(r["data"]["duration_s"]) for r in turns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        os.environ.setdefault(key, "bench")
    for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        os.environ.setdefault(key, "bench@example.invalid")
    gaps: list[float] = []
    verifies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-turnaround-") as folder:
        for index in range(args.rounds):
            base = Path(folder) / f"round-{index}"
            base.mkdir()
            round_gaps, round_verifies = one_round(base, args.iterations)
            gaps += round_gaps
            verifies += round_verifies
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"verdict -> next turn: median {statistics.median(gaps):.3f} s, "
        f"range {min(gaps):.3f}-{max(gaps):.3f} s over {len(gaps)} turns "
        f"(target: under 1 s: {'met' if max(gaps) < 1.0 else 'MISSED'})"
    )
    tested = statistics.median(verifies)
    print(f"the test run inside each verify (for scale): median {tested:.3f} s")


if __name__ == "__main__":
    main()
