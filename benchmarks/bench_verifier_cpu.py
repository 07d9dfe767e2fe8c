#!/usr/bin/env python
"""CPU time of verify, with and without the reward checks, against plain pytest: the figures
of ``bench_verifier.py`` that survive a saturated machine.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_verifier_cpu.py [--repeat 3] [--before DIR] [--tag b-cpu]

Wall clock means nothing when the load average is several times the core count; user+sys time
of the child processes still does. It is only complete with process isolation: bubblewrap's
PID namespace hides its processes' CPU time from the parent, so the sandbox variants of
``bench_verifier.py`` cannot be replaced here. The same generated project as
``bench_verifier.py`` (2,000 tests in 100 files, one acceptance test); variants interleaved,
order rotated each round, after one untimed warm-up round:

- plain pytest, and plain pytest with the plugins verify's inner run loads;
- ``loop-contract verify`` with process isolation, with and without the reward checks (the
  benchmark's own entry, see ``bench_verifier.py``), and with only the outcome checks off
  (twins, canaries, the namespace check and the capability policy: ``outcome_checks_cpu_ratio``);
- with ``--before DIR`` (a copy of an older pytest_loopcontract tree), the two verify variants
  again with that package first on ``PYTHONPATH``, on the same repository and baseline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import bench_verifier as bv

VERIFY = "verify (process)"
CHECKS_OFF = "verify (process, checks off)"
OUTCOMES_OFF = "verify (process, outcomes off)"


def variants(repo: Path, out: Path, plugins: list[str], before: str) -> dict[str, Any]:
    plain = bv.pytest_variants(out, plugins)
    cli = [bv.PY, "-m", "pytest_loopcontract", "verify", "--json"]
    off = bv.write_checks_off(out)
    env = {**bv.bench_env(), "LOOP_CONTRACT_ISOLATION": "process"}
    table: dict[str, Any] = {
        bv.ANCHOR: (plain[bv.ANCHOR], None),
        bv.ANCHOR_PLUGINS: (plain[bv.ANCHOR_PLUGINS], None),
        VERIFY: (cli, env),
        CHECKS_OFF: (off, env),
        OUTCOMES_OFF: (bv.write_checks_off(out, "lc_outcomes_off"), env),
    }
    if before:
        old = {**env, "PYTHONPATH": before}
        table[VERIFY + " [before]"] = (cli, old)
        table[CHECKS_OFF + " [before]"] = (off, old)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="", help="an older package tree to compare")
    parser.add_argument("--tag", default="b-cpu")
    parser.add_argument("--results-dir", default=str(bv.HERE / "results"))
    args = parser.parse_args()
    machine = bv.machine_info()
    workdir = Path(tempfile.mkdtemp(prefix="loopcontract-benchcpu-"))
    out = workdir / "out"
    out.mkdir()
    try:
        ns = argparse.Namespace(tests=2000, files=2000, test_files=100, project_venv=False)
        repo, project = bv.build_repo(workdir, ns)
        table = variants(repo, out, project["allowed_plugins"], args.before)
        names = list(table)
        cpu: dict[str, list[float]] = {n: [] for n in names}
        wall: dict[str, list[float]] = {n: [] for n in names}
        exits: dict[str, set[int]] = {}
        for r in range(args.repeat + 1):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                command, env = table[name]
                log = out / "run.log"
                elapsed, used, code = bv.run_cmd(command, repo, log, env)
                # An older package may find what a newer baseline no longer records (the
                # classmethod identities its watch took as changed): its cost is what counts.
                if code != 0 and not name.endswith("[before]"):
                    raise SystemExit(f"{name}: exit {code}\n{log.read_text('utf-8')[-2000:]}")
                exits.setdefault(name, set()).add(code)
                print(
                    f"  {'(warm-up) ' if r == 0 else ''}{name:36s} {used:7.3f} s cpu "
                    f"{elapsed:7.3f} s wall",
                    flush=True,
                )
                if r:
                    cpu[name].append(used)
                    wall[name].append(elapsed)
        med = {n: statistics.median(v) for n, v in cpu.items()}
        ratios = {
            "verify_vs_plain_cpu": round(med[VERIFY] / med[bv.ANCHOR], 3),
            "verify_minus_plain_cpu_s": round(med[VERIFY] - med[bv.ANCHOR], 3),
            "verify_vs_plain_with_plugins_cpu": round(med[VERIFY] / med[bv.ANCHOR_PLUGINS], 3),
            "plugins_cpu_s": round(med[bv.ANCHOR_PLUGINS] - med[bv.ANCHOR], 3),
            "reward_checks_cpu_ratio": round(med[VERIFY] / med[CHECKS_OFF], 3),
            "reward_checks_cpu_s": round(med[VERIFY] - med[CHECKS_OFF], 3),
            "outcome_checks_cpu_ratio": round(med[VERIFY] / med[OUTCOMES_OFF], 3),
            "outcome_checks_cpu_s": round(med[VERIFY] - med[OUTCOMES_OFF], 3),
        }
        if args.before:
            old, old_off = med[VERIFY + " [before]"], med[CHECKS_OFF + " [before]"]
            ratios |= {
                "before_verify_vs_plain_cpu": round(old / med[bv.ANCHOR], 3),
                "before_verify_minus_plain_cpu_s": round(old - med[bv.ANCHOR], 3),
                "before_reward_checks_cpu_ratio": round(old / old_off, 3),
                "before_reward_checks_cpu_s": round(old - old_off, 3),
            }
        with_load = dict(machine)
        with_load["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result = {
            "benchmark": "verifier-cpu",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": with_load,
            "parameters": {"repeat": args.repeat, "warmup_rounds": 1, "before": bool(args.before)},
            "project": project,
            "variants": {
                n: {
                    "cpu_median_s": round(med[n], 4),
                    "cpu_runs_s": [round(x, 4) for x in cpu[n]],
                    "wall_runs_s": [round(x, 4) for x in wall[n]],
                    "exit_codes": sorted(exits.get(n, ())),
                }
                for n in names
            },
            "ratios": ratios,
        }
        stamp = dt.datetime.now().strftime("%Y-%m-%d")
        path = Path(args.results_dir) / f"verifier-{stamp}-{args.tag}.json"
        path.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        print(json.dumps(result["ratios"], indent=2))
        print(f"results: {path}")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
