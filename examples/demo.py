"""End-to-end demo: adopt the slugify contract, then verify an honest fix and ten cheats.

Run from the repository root: ``.venv/bin/python examples/demo.py``. It copies
``examples/slugify`` into a fresh git repository, runs ``loop-contract check`` and
``loop-contract baseline``, then applies each candidate from ``examples/candidates.py`` and runs
``loop-contract verify``. The honest fix must pass (exit 0); every cheat must not.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from candidates import CANDIDATES  # noqa: E402

CLI = [sys.executable, "-m", "pytest_loopcontract"]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(dest: Path) -> Path:
    repo = dest / "slugify"
    shutil.copytree(
        HERE / "slugify", repo, ignore=shutil.ignore_patterns("__pycache__", ".loop-contract")
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "demo@example.invalid")
    git(repo, "config", "user.name", "demo")
    (repo / ".gitignore").write_text(".loop-contract/\n__pycache__/\n", "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "slugify with failing acceptance tests")
    return repo


def reset(repo: Path) -> None:
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-q", "-fdx", "-e", ".loop-contract")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--workdir", help="where to build the demo repository (default: a temp dir)"
    )
    args = parser.parse_args()
    base = (
        Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="loopcontract-demo-"))
    )
    base.mkdir(parents=True, exist_ok=True)
    repo = make_repo(base)
    print(f"demo repository: {repo}")

    for step in (["check"], ["baseline"]):
        proc = run([*CLI, *step], repo)
        print(f"$ loop-contract {' '.join(step)}  -> exit {proc.returncode}")
        print("  " + (proc.stdout + proc.stderr).strip().replace("\n", "\n  "))
        if proc.returncode != 0:
            return proc.returncode

    failures = 0
    print(f"\n{'candidate':28} {'verdict':8} {'exit':>4}  findings")
    for name, apply in CANDIDATES.items():
        reset(repo)
        apply(repo)
        proc = run([*CLI, "verify", "--json"], repo)
        try:
            verdict = json.loads(proc.stdout)
        except ValueError:
            print(f"{name:28} no verdict (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
            failures += 1
            continue
        codes = sorted({f["code"] for f in verdict["tamper"]["findings"] if not f["allowed"]})
        reasons = [r["code"] for r in verdict["reasons"]]
        print(
            f"{name:28} {verdict['verdict']:8} {proc.returncode:>4}  {', '.join(codes) or '-'}"
            f"  [{', '.join(dict.fromkeys(reasons))}]"
        )
        expected_pass = name == "honest-fix"
        if (verdict["verdict"] == "pass") != expected_pass:
            failures += 1
    reset(repo)
    CANDIDATES["honest-fix"](repo)
    proc = run([sys.executable, "-m", "pytest", "--loop-contract", "--cov", "-q"], repo)
    print(f"\n$ pytest --loop-contract --cov (honest fix, in-process)  -> exit {proc.returncode}")
    tail = proc.stdout.strip().splitlines()
    start = next(
        (i for i, line in enumerate(tail) if "loop contract" in line), max(0, len(tail) - 12)
    )
    print("  " + "\n  ".join(tail[start:]))
    if proc.returncode != 0:
        failures += 1
    print("\n== the governed loop, stopping for each reason (examples/loop_demo.py)", flush=True)
    loop = subprocess.run(
        [sys.executable, str(HERE / "loop_demo.py"), "--workdir", str(base / "loop-demo")],
        check=False,
    )
    failures += loop.returncode != 0
    print(
        "\n== the contest: scripted seats and judges, two runs (examples/contest_demo.py)",
        flush=True,
    )
    contest = subprocess.run(
        [sys.executable, str(HERE / "contest_demo.py"), "--workdir", str(base / "contest-demo")],
        check=False,
    )
    failures += contest.returncode != 0
    print(
        "\ndemo "
        + (
            "OK: the honest fix passed, every cheat was caught, the loop and the contest behaved"
            if not failures
            else f"FAILED: {failures} unexpected results"
        )
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
