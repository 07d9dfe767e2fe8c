#!/usr/bin/env python
"""Benchmark the contest's verification phase: eight candidates, verified as a field.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_contest.py [--rounds 3] [--distinct 6] [--out PATH]

Setup: the contest demo project (``examples/contest``: a rolling-mean package, 19 tests, a
coverage gate and a measured gate), copied to a temporary git repository with its baseline
taken. Eight candidate commits are made from the scripted seats' incremental implementations:
``--distinct`` different trees (each seat's style, varied by a trailing comment) and the rest
byte-identical copies of earlier ones, the way two seats that write the same fix produce.

Measured per round, interleaved:

* **anchor "one by one"**: ``verify()`` of each of the eight candidates in turn (the isolated
  launcher, exactly what ``loop-contract verify --candidate`` does), summed;
* **phase**: :func:`pytest_loopcontract.contest.field_verification.verify_field` over the
  same eight, with the parallelism a contest uses on this machine
  (``min(contest.parallel, CPUs)``); it verifies each distinct tree once and shares the verdict.

Target: phase / anchor <= 0.6 (median over rounds). Also checked: the phase ran ``--distinct``
verifications, not eight, and every candidate got a verdict equal in outcome to its one-by-one
verdict. CPU count and load average are printed, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "contest"))

from prepare import GIT_ENV, make_repo  # noqa: E402

from pytest_loopcontract.contest.field_verification import verify_field  # noqa: E402
from pytest_loopcontract.verifier.baseline.take import take_baseline  # noqa: E402
from pytest_loopcontract.verifier.verify import verify  # noqa: E402

TARGET_RATIO = 0.6
CANDIDATES = 8
STYLES = ("deque", "ring", "resync")
LESSON = "keep metric.ops_per_tick <= 4 ops\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout.strip()


def implementations(repo: Path) -> list[str]:
    """The three scripted seats' incremental samplers.py, written by the real seat program."""
    prompt = repo.parent / "prompt.md"
    prompt.write_text(LESSON, "utf-8")
    target = repo / "rolling" / "samplers.py"
    original = target.read_text("utf-8")
    texts = []
    for style in STYLES:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "examples/contest/seats/seat.py"),
                style,
                str(prompt),
                str(repo),
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "LOOP_CONTRACT_REPORT": str(repo.parent / "report.json")},
        )
        texts.append(target.read_text("utf-8"))
    target.write_text(original, "utf-8")
    return texts


def candidate_commits(repo: Path, distinct: int) -> dict[str, tuple[str, str]]:
    """name -> (commit, tree): ``distinct`` different trees, the rest duplicates."""
    texts = implementations(repo)
    base = git(repo, "rev-parse", "HEAD")
    made: list[tuple[str, str]] = []
    for i in range(distinct):
        body = texts[i % len(texts)] + f"\n# candidate variant {i}\n"
        (repo / "rolling" / "samplers.py").write_text(body, "utf-8")
        git(repo, "add", "rolling/samplers.py")
        tree = git(repo, "write-tree")
        commit = git(repo, "commit-tree", tree, "-p", base, "-m", f"candidate {i}")
        made.append((commit, tree))
    git(repo, "checkout", "--", ".")
    git(repo, "reset", "-q", base)
    field = {f"seat{i}": made[i] for i in range(distinct)}
    for i in range(distinct, CANDIDATES):
        field[f"seat{i}"] = made[i % distinct]  # a second seat wrote the same fix
    return field


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--distinct", type=int, default=6)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    parallel = max(1, min(4, cpus))
    with tempfile.TemporaryDirectory(prefix="bench-contest-") as tmp:
        repo = make_repo(Path(tmp) / "repo")
        take_baseline(repo, "loopcontract.yml")
        field = candidate_commits(repo, args.distinct)
        verdict_root = Path(tmp) / "verdicts"
        anchors: list[float] = []
        phases: list[float] = []
        runs_per_phase: list[int] = []
        agree = True
        for rnd in range(args.rounds):
            t0 = time.perf_counter()
            serial: dict[str, str] = {}
            for name, (commit, _) in field.items():
                out = verify(
                    repo, candidate_ref=commit, verdict_path=verdict_root / f"s{rnd}-{name}.json"
                )
                serial[name] = str(out.verdict["verdict"])
            anchors.append(time.perf_counter() - t0)
            folder = verdict_root / f"p{rnd}"
            t0 = time.perf_counter()
            results = verify_field(repo, field, parallel=parallel, verdict_dir=folder)
            phases.append(time.perf_counter() - t0)
            runs_per_phase.append(len(list(folder.glob("*.json"))))
            for name, result in results.items():
                assert result.verdict is not None, result.error
                agree &= str(result.verdict["verdict"]) == serial[name]
            print(
                f"round {rnd + 1}: one by one {anchors[-1]:.2f} s, phase {phases[-1]:.2f} s, "
                f"ratio {phases[-1] / anchors[-1]:.3f}, {runs_per_phase[-1]} verifications",
                flush=True,
            )
    ratio = statistics.median(p / a for p, a in zip(phases, anchors, strict=True))
    figures: dict[str, Any] = {
        "benchmark": "contest verification phase",
        "anchor": "verify() of each of the 8 candidates one by one, summed",
        "candidates": CANDIDATES,
        "distinct_trees": args.distinct,
        "parallel": parallel,
        "cpus": cpus,
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "anchor_seconds": anchors,
        "phase_seconds": phases,
        "verifications_per_phase": runs_per_phase,
        "ratio_median": ratio,
        "verdicts_agree": agree,
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO and agree and set(runs_per_phase) == {args.distinct},
    }
    print(
        f"\nverification phase / one by one: median ratio {ratio:.3f} "
        f"(target <= {TARGET_RATIO}); {args.distinct} verifications for {CANDIDATES} candidates; "
        f"verdicts agree: {agree}; {cpus} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    print("PASS" if figures["pass"] else "FAIL")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
    return 0 if figures["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
