"""``loop-contract verify``: the candidate's tests in an isolated scratch copy; the verdict."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.progress import showing_progress
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.verdict import render_checklist
from pytest_loopcontract.verifier.verify import verify as run_verification

__all__ = ["verify"]


def verify(
    *,
    candidate: str | None = None,
    verdict: str | None = None,
    keep_scratch: bool = False,
    python: str | None = None,
    as_json: bool = False,
    quiet: bool = False,
) -> int:
    """Write the verdict and exit with its exit code (0 only when the contract is met)."""
    with showing_progress("verify", quiet=quiet):
        outcome = run_verification(
            repo_root(),
            candidate_ref=candidate,
            verdict_path=Path(verdict).resolve() if verdict else None,
            keep_scratch=keep_scratch,
            python=python,
        )
    if as_json:
        print_json(outcome.verdict)
    else:
        for line in render_checklist(outcome.verdict):
            print(line)
        print(f"  verdict written to {outcome.verdict_path}")
    return int(outcome.verdict["exit_code"])
