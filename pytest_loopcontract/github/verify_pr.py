"""``loop-contract github verify``: one candidate pull request, verified in its own job.

Runs in the unprivileged ``pull_request`` workflow, on a checkout of the candidate's head, with
a read-only token and no secrets: this is the only place a candidate's code runs. The baseline
is taken at the pull request's base commit (the contract and the pins as they are there), the
head commit is verified by the isolated launcher, and the verdict and the diff are written as
the artifact the privileged publish workflow will check and never execute. The tests' interpreter
never comes from the checkout, and the candidate's run gets the sandbox or no run at all
(:mod:`.checkout_guard`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_loopcontract.github.artifacts import write_artifact
from pytest_loopcontract.github.checkout_guard import (
    base_contract,
    checkout_free_python,
    sandbox_enforced,
)
from pytest_loopcontract.verifier.baseline.take import take_baseline
from pytest_loopcontract.verifier.verify import verify
from pytest_loopcontract.workspace import diff_text, resolve_commit, tree_of

__all__ = ["verify_pull_request"]


def verify_pull_request(
    root: Path,
    *,
    contract_path: str,
    pr: int,
    base_sha: str,
    head_sha: str,
    out: Path,
    scratch: Path,
) -> dict[str, Any]:
    """Baseline at ``base_sha``, verify ``head_sha``; write ``out/candidate-<pr>``; the verdict."""
    base = resolve_commit(root, base_sha)
    head = resolve_commit(root, head_sha)
    contract = base_contract(root, contract_path, base)
    python = checkout_free_python(root, contract)
    take_baseline(root, contract_path, base, python=python)
    verdict_path = scratch / f"verdict-{pr}.json"
    with sandbox_enforced(contract):
        outcome = verify(root, candidate_ref=head, verdict_path=verdict_path, python=python)
    diff = diff_text(root, tree_of(root, base), tree_of(root, head), context=3)
    write_artifact(out, pr=pr, head_sha=head, verdict=outcome.verdict, diff=diff)
    return outcome.verdict
