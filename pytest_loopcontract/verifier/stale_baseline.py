"""A stale baseline told apart from an edited contract.

After a person switches branches (or adopts a contract on another line of history), the
contract committed at HEAD differs from the one pinned at ``baseline``. Reporting that as
``contract_modified`` tampering (exit 25) blames an agent for a person's act; the truth is that
the baseline belongs to another history and must be taken again (exit 27).

An agent can commit too, so the rule is narrow and errs towards tampering. The baseline is
stale only when all three hold:

- the candidate's contract is exactly the contract committed at the candidate's commit (an
  uncommitted edit is the agent's work: tampering);
- that committed contract differs from the pinned one;
- the baseline's commit is not an ancestor of the candidate's commit, so the change is not in
  commits made on top of the baseline (the agent's own commits: tampering).

A stale baseline is an ``error`` verdict, never ``pass``: an agent that rewrites history to
hide its contract edit gains nothing but "re-run baseline", and nothing of its tree is run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.idsets import pack_ids
from pytest_loopcontract.verdict import BASELINE_STALE, Reason, environment_info
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.candidate import Candidate
from pytest_loopcontract.verifier.verdict_frame import error_verdict, run_timing
from pytest_loopcontract.workspace import WorkspaceError, git

__all__ = ["stale_baseline", "stale_verdict"]


def _committed_blob(root: Path, commit: str, path: str) -> str | None:
    """The blob id of ``path`` in ``commit``, or None when the commit does not have it."""
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{commit}:{path}").decode().strip()
    except WorkspaceError:
        return None


def _is_ancestor(root: Path, older: str, newer: str) -> bool:
    """``older`` is ``newer`` or one of its ancestors. An unknown commit is no ancestor."""
    try:
        git(root, "merge-base", "--is-ancestor", older, newer)
    except WorkspaceError:
        return False
    return True


def stale_baseline(root: Path, baseline: BaselineRecord, candidate: Candidate) -> Reason | None:
    """The reason the baseline is stale for ``candidate``, or None (see the module's rule)."""
    path = baseline.contract_path
    pin, entry = baseline.pins.get(path), candidate.files.get(path)
    if pin is None or entry is None or entry.blob == pin.blob:
        return None
    if _committed_blob(root, candidate.commit, path) != entry.blob:
        return None  # changed in the working tree: the agent's edit
    if _is_ancestor(root, baseline.commit, candidate.commit):
        return None  # changed in commits on top of the baseline: the candidate's work
    return Reason(
        BASELINE_STALE,
        f"{path} committed at {candidate.commit[:12]} differs from the contract pinned at "
        f"baseline (commit {baseline.commit[:12]}, which is not an ancestor of "
        f"{candidate.commit[:12]}): the baseline was taken on another line of history, for "
        "example before a branch switch. If this contract is the one to adopt, run "
        "'loop-contract baseline' on this branch's base commit",
    )


def stale_verdict(
    contract: Contract,
    baseline: BaselineRecord,
    candidate: Candidate,
    reason: Reason,
    *,
    nonce: str,
    started: tuple[str, float],
) -> dict[str, Any]:
    """The ``error`` verdict (exit 27) for a stale baseline: no test ran, nothing was judged."""
    return error_verdict(
        contract,
        reason,
        relpath=baseline.contract_path,
        trust="isolated",
        nonce=nonce,
        baseline={
            "recorded": True,
            "commit": baseline.commit,
            "fail_to_pass": list(baseline.fail_to_pass),
            "pass_to_pass": pack_ids(baseline.pass_to_pass),
        },
        environment=environment_info(candidate.commit, candidate.dirty),
        timing=run_timing(*started),
    )
