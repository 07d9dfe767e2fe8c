"""Which verification stands for each candidate in this publish, and why the others do not.

Why it is built this way:

* **One run, one candidate.** A pull request controls the verify run it triggered, so a run
  speaks only for the candidate whose head (from the API) is the run's head SHA and that is the
  run's own pull request (:meth:`.VerifyRun.speaks_for`: by number, or for a fork by head
  repository and branch), and only when exactly one candidate has that head: pull requests
  sharing a head commit are all
  ``duplicate_head`` (one run, or one forged artifact, would otherwise speak for both), and
  none of them can win. Every other candidate keeps the verification recorded on the data
  branch for its current head, or waits for its own run.
* **Refusals are recorded too.** An untrusted run (:mod:`.trust`) or a rejected artifact is
  written to the state for that head, so a later publish (another candidate's run) still shows
  the refusal instead of silently dropping the candidate.
* **Nothing from the artifact reaches the judges but its verdict**: the diff kept for them is
  the API's, built from the pull request's file list.

Codes: ``artifact_rejected`` (layout, schema, SHA, contract), ``verification_untrusted`` (the
workflow, the pull request's protected paths, the verdict's isolation), ``duplicate_head``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.artifacts import (
    candidate_dirname,
    check_artifacts,
    verdict_problems,
)
from pytest_loopcontract.github.pulls import CandidatePR
from pytest_loopcontract.github.trust import (
    UNTRUSTED_HELP,
    VerifyRun,
    WorkflowCheck,
    check_run,
    diff_of,
    isolation_problem,
    protected_patterns,
    pull_files,
    touched_protected,
)

__all__ = [
    "STATE_DIFF_CHARS",
    "Verification",
    "collect_verifications",
    "own_candidates",
    "shared_heads",
]

log = logging.getLogger("loopcontract.github")

STATE_DIFF_CHARS = 200_000
"""How much of a candidate's (API) diff the judges are given."""


@dataclass(frozen=True)
class Verification:
    """What stands for one candidate: a verdict and the API's diff, or a refusal."""

    verdict: Mapping[str, Any] | None
    diff: str = ""
    code: str = ""
    message: str = ""

    @property
    def accepted(self) -> bool:
        return self.verdict is not None and not self.code


def shared_heads(candidates: Sequence[CandidatePR]) -> dict[str, list[int]]:
    """Head SHAs that more than one candidate has, with their pull request numbers."""
    by_sha: dict[str, list[int]] = {}
    for cand in candidates:
        by_sha.setdefault(cand.head_sha, []).append(cand.number)
    return {sha: sorted(numbers) for sha, numbers in by_sha.items() if len(numbers) > 1}


def collect_verifications(
    repo: Repository,
    *,
    contract: Contract,
    candidates: Sequence[CandidatePR],
    artifacts: Path,
    verified: dict[str, Any],
    run: VerifyRun | None,
) -> dict[int, Verification]:
    """The verification of every candidate that has one (``verified`` is updated in place).

    ``run`` is the verify run of the triggering ``workflow_run`` event; ``None`` is a
    maintainer's local call with artifacts they produced: every artifact is read, the
    pull requests' files are still checked, and there is no workflow to check."""
    shared = shared_heads(candidates)
    own = [c for c in own_candidates(candidates, run, artifacts) if c.head_sha not in shared]
    checks = check_artifacts(artifacts, expected={c.number: c.head_sha for c in own})
    workflow = WorkflowCheck(repo, contract) if run is not None else None
    found: dict[int, Verification] = {}
    for cand in candidates:
        if cand.head_sha in shared:
            found[cand.number] = _duplicate(cand, shared[cand.head_sha])
        elif cand in own:
            check = checks[cand.number]
            problems = list(check.problems) or _verdict_problems(check.verdict, contract)
            if problems:
                refusal = Verification(None, "", "artifact_rejected", "; ".join(problems))
                found[cand.number] = refusal
            else:
                found[cand.number] = _trusted(repo, contract, run, workflow, cand, check.verdict)
            _record(verified, cand, found[cand.number])
        else:
            recorded = _recorded(repo, contract, verified.get(str(cand.number)), cand)
            if recorded is not None:
                found[cand.number] = recorded
            else:
                log.info("#%d: not verified yet at %s", cand.number, cand.head_sha[:12])
    return found


def own_candidates(
    candidates: Sequence[CandidatePR], run: VerifyRun | None, artifacts: Path
) -> list[CandidatePR]:
    """The candidates whose artifact this run may carry: its own pull request's, or for a
    dispatched run (the default branch's workflow, one job per pull request it was given)
    each candidate it uploaded an artifact for; with no run, every candidate."""
    if run is None:
        return list(candidates)
    if run.dispatched:
        return [c for c in candidates if (artifacts / candidate_dirname(c.number)).is_dir()]
    return [c for c in candidates if run.speaks_for(c)]


def _duplicate(cand: CandidatePR, numbers: Sequence[int]) -> Verification:
    others = ", ".join(f"#{n}" for n in numbers if n != cand.number)
    message = (
        f"head commit {cand.head_sha[:12]} is also the head of {others}: a verification of one "
        "commit cannot speak for two candidates, so none of them can win until each has its "
        "own head commit"
    )
    return Verification(None, "", "duplicate_head", message)


def _verdict_problems(verdict: Mapping[str, Any] | None, contract: Contract) -> list[str]:
    if verdict is None:
        return ["no verdict"]
    problems = []
    sha = (verdict.get("contract") or {}).get("sha256")
    if sha != contract.sha256:
        problems.append(
            f"verdict measured against another contract (sha256 {str(sha)[:12]}, the base "
            f"branch's is {contract.sha256[:12]})"
        )
    if verdict.get("trust") != "isolated":
        problems.append("verdict not produced by the isolated launcher")
    return problems


def _trusted(
    repo: Repository,
    contract: Contract,
    run: VerifyRun | None,
    workflow: WorkflowCheck | None,
    cand: CandidatePR,
    verdict: Mapping[str, Any] | None,
) -> Verification:
    """The run's verdict for ``cand`` if the run deserves trust, else the refusal."""
    assert verdict is not None
    if run is not None and workflow is not None:
        trust = check_run(repo, contract, run, cand.number, workflow)
        problems, diff = list(trust.problems), trust.diff
    else:
        files = pull_files(repo, cand.number)
        touched = touched_protected(files, protected_patterns(contract))
        problems = [f"the pull request changes {', '.join(touched[:5])}"] if touched else []
        diff = diff_of(files)
    isolation = isolation_problem(verdict, contract)
    if isolation is not None:
        problems.append(isolation)
    if problems:
        message = "; ".join(problems) + ". " + UNTRUSTED_HELP
        return Verification(None, "", "verification_untrusted", message)
    return Verification(verdict, diff[:STATE_DIFF_CHARS])


def _record(verified: dict[str, Any], cand: CandidatePR, found: Verification) -> None:
    record: dict[str, Any] = {"head_sha": cand.head_sha}
    if found.accepted and found.verdict is not None:
        record["verdict"] = dict(found.verdict)  # the diff is the API's, read again each time
    else:
        record["refused"] = {"code": found.code, "message": found.message[:1000]}
    verified[str(cand.number)] = record


def _recorded(
    repo: Repository, contract: Contract, record: Any, cand: CandidatePR
) -> Verification | None:
    """The verification recorded for ``cand``'s current head (the API's), or None.

    A recorded verdict is checked again as if its artifact had just arrived: its schema and
    head, the contract it was measured against, the launcher and the isolation that produced
    it, and the pull request's files as they are now; the diff is the API's again, never the
    recorded text. A recorded refusal stands as it is (refusing needs no proof)."""
    if not isinstance(record, Mapping) or record.get("head_sha") != cand.head_sha:
        return None
    refused = record.get("refused")
    if isinstance(refused, Mapping):
        return Verification(None, "", str(refused.get("code")), str(refused.get("message")))
    verdict = record.get("verdict")
    problems = verdict_problems(verdict, cand.head_sha)
    if problems or not isinstance(verdict, Mapping):
        message = "; ".join(f"recorded verification: {p}" for p in problems)
        return Verification(None, "", "artifact_rejected", message)
    problems = _verdict_problems(verdict, contract)
    if problems:
        message = "; ".join(f"recorded verification: {p}" for p in problems)
        return Verification(None, "", "artifact_rejected", message)
    return _trusted(repo, contract, None, None, cand, verdict)
