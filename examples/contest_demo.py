"""The contest demo: three scripted seats, three scripted judges, two runs.

Run 1: every seat writes the naive rolling mean (it re-sums the window on every tick). It is
correct, so the hard gates pass, but the measured gate on arithmetic per tick fails; there is no
winner, and the verifier's evidence becomes a lesson.

Run 2: the prompt carries the lesson; each seat writes an incremental version, the whole field
passes the gates, the judges fill the validity matrix (never scoring their own family), the
bracket narrows the field to one, and the run waits for a person at the human gate.

The seats and judges are deterministic local programs, not models; every output says so.
Usage: ``python examples/contest_demo.py [--workdir DIR]``. Exit 0 when both runs did what
they should.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "contest"))

from prepare import GIT_ENV, make_repo  # noqa: E402

EXIT_NOT_MET, EXIT_AWAIT_HUMAN = 20, 24


def cli(repo: Path, *args: str, show: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        timeout=900,
    )
    if show:
        print(f"\n$ loop-contract {' '.join(args)}  -> exit {proc.returncode}", flush=True)
        print(proc.stdout.rstrip())
        if proc.returncode not in (0, EXIT_NOT_MET, EXIT_AWAIT_HUMAN):
            print(proc.stderr.rstrip()[-3000:])
    return proc


def result_of(repo: Path) -> dict[str, object]:
    runs = sorted((repo / ".loop-contract" / "contest").glob("*/result.json"))
    document: dict[str, object] = json.loads(runs[-1].read_text("utf-8"))
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="where to put the demo repository")
    args = parser.parse_args()
    base = args.workdir or Path(tempfile.mkdtemp(prefix="loopcontract-contest-demo-"))
    repo = make_repo(base / "rolling-mean")
    print("== contest demo: seats and judges are scripted programs, not models")
    print(f"   repository: {repo}")
    problems: list[str] = []

    cli(repo, "baseline")
    first = cli(repo, "contest", "run", "--quiet")
    run1 = result_of(repo)
    if first.returncode != EXIT_NOT_MET or run1["status"] != "no_winner" or not run1["lessons"]:
        problems.append(f"run 1 should end without a winner and with a lesson: {run1['status']}")

    cli(repo, "lessons", "--format", "prompt")
    second = cli(repo, "contest", "run", "--quiet")
    run2 = result_of(repo)
    if second.returncode != EXIT_AWAIT_HUMAN or run2["status"] != "awaiting_human":
        problems.append(f"run 2 should wait for a person with a winner: {run2['status']}")
    if not run2.get("matrix") or not run2.get("winner"):
        problems.append("run 2 should fill the matrix and propose one winner")

    html = base / "contest-report.html"
    cli(repo, "report", "--html", str(html), "--markdown", str(base / "contest-report.md"))
    cli(repo, "ledger", "verify")
    print(
        f"\nNext, a person decides: cd {repo} && "
        f"loop-contract gate {run2['contract']['id']} approve --by YOUR-NAME"  # type: ignore[index]
    )
    if problems:
        print("\nDEMO FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("\ncontest demo OK: run 1 wrote a lesson, run 2 carried it and awaits the human gate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
