"""The governed loop stopping for each of its reasons, with a scripted agent.

Run from the repository root: ``.venv/bin/python examples/loop_demo.py``. For each scenario it
builds a fresh copy of ``examples/slugify`` (budget: 4 iterations, $1.00), adopts the
contract, and runs ``loop-contract loop -- python examples/agents/scripted_agent.py MODE
{prompt_file}``. Each scenario must end with its own exit code.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
AGENT = HERE / "agents" / "scripted_agent.py"
CLI = [sys.executable, "-m", "pytest_loopcontract"]

# mode -> (what it shows, expected exit code)
SCENARIOS = {
    "fix-on-turn-2": ("contract met on turn 2", 0),
    "flail": ("iteration cap", 23),
    "spender": ("budget ($0.40 a turn against $1.00)", 21),
    "noop": ("no progress", 22),
    "leaker": ("checkpoint: a secret in the diff waits for a person", 24),
}

BUDGET = "budget:\n  iterations: 4\n  usd: 1.0\n"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(dest: Path) -> Path:
    repo = dest / "slugify"
    shutil.copytree(HERE / "slugify", repo, ignore=shutil.ignore_patterns("__pycache__"))
    contract = repo / "loopcontract.yml"
    text = contract.read_text("utf-8")
    contract.write_text(text[: text.index("  measured:")] + BUDGET, "utf-8")
    (repo / ".gitignore").write_text(".loop-contract/\n__pycache__/\n", "utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.email=demo@example.invalid", "-c", "user.name=demo", "add", "-A")
    git(repo, "-c", "user.email=demo@example.invalid", "-c", "user.name=demo",
        "commit", "-q", "-m", "base")
    subprocess.run([*CLI, "baseline"], cwd=repo, check=True, capture_output=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", help="where to build the demo repositories")
    args = parser.parse_args()
    base = Path(args.workdir or tempfile.mkdtemp(prefix="loopcontract-loop-demo-"))
    failures = 0
    for mode, (what, expected) in SCENARIOS.items():
        repo = make_repo(base / mode)
        print(f"\n$ loop-contract loop -- python scripted_agent.py {mode} {{prompt_file}}   # {what}")
        proc = subprocess.run(
            [*CLI, "loop", "--", sys.executable, str(AGENT), mode, "{prompt_file}"],
            cwd=repo, capture_output=True, text=True,
        )
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.startswith("[loop]"):
                print("  " + line)
        ok = proc.returncode == expected
        failures += not ok
        print(f"  -> exit {proc.returncode} ({'as expected' if ok else f'EXPECTED {expected}'})")
        if mode == "leaker":
            listing = subprocess.run([*CLI, "checkpoint", "list"], cwd=repo,
                                     capture_output=True, text=True)
            print("  $ loop-contract checkpoint list\n  " + listing.stdout.strip()[:300])
    print("\nloop demo " + ("OK: every stop reason seen" if not failures
                            else f"FAILED: {failures} scenarios"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
