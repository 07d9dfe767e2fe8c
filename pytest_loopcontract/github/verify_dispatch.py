"""Start a verify run for a pull request that no ``pull_request`` event will verify.

Why it is built this way:

* **GitHub starts no run for what ``GITHUB_TOKEN`` did**, except ``workflow_dispatch`` and
  ``repository_dispatch``. A pull request that the propose job opened, or a branch it
  force-pushed, with that token therefore gets no ``pull_request`` run: without this, no
  dispatched seat would ever be verified on GitHub.
* **So the verify workflow also takes ``workflow_dispatch``** with the pull request's number,
  and the caller dispatches it on the default branch: the run then uses the default branch's
  workflow and action (never the pull request's), checks out the head from the API as data,
  and publish treats it as that pull request's run (:mod:`.trust`, :mod:`.verification`).
* **The same call heals a missing verification.** A candidate whose head has no verification
  (its run was cancelled by a newer one in its concurrency group, or its record was ignored)
  is dispatched again by the next publish, once per head (the state remembers the request).
* **A refusal is logged, never fatal**: a workflow without ``actions: write``, or a verify
  workflow without the trigger, leaves the pull request to its own events, as before.

A GitHub App's installation token (or a person's token) would make the propose job's
``pull_request`` events start runs by themselves; the dispatch makes that unnecessary and keeps
the job on ``GITHUB_TOKEN``. Requests: two per dispatch (the workflow, the dispatch), and one
or two per publish with a candidate to verify again (the queued and the running runs).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.pulls import CandidatePR

__all__ = ["PR_INPUT", "request_verification", "reverify_missing", "verify_workflow_path"]

log = logging.getLogger("loopcontract.github")

PR_INPUT = "pr"
"""The verify workflow's ``workflow_dispatch`` input: the pull request's number."""
_RUN_NUMBER = re.compile(r"#(\d{1,9})$")


def verify_workflow_path(contract: Contract) -> str:
    """The verify workflow file (``github.verify_workflow``, else the default)."""
    return contract.github.verify_workflow


def reverify_missing(
    repo: Repository,
    contract: Contract,
    missing: Sequence[CandidatePR],
    requested: Mapping[str, str],
) -> dict[str, str]:
    """Request verification of each candidate in ``missing`` (no verification at its head)
    unless it was requested at that head before or a verify run of that head is still
    queued or running (its own ``pull_request`` run); ``requested`` updated (pull request
    number -> head)."""
    out = {number: head for number, head in requested.items() if isinstance(head, str)}
    wanted = [c for c in missing if out.get(str(c.number)) != c.head_sha]
    if not wanted:
        return out
    heads, numbers = _pending(repo, contract)
    for cand in wanted:
        if cand.head_sha in heads or cand.number in numbers:
            continue
        if not request_verification(repo, contract, cand.number):
            break  # refused (no permission, no trigger): the others would be refused too
        out[str(cand.number)] = cand.head_sha
    return out


def _pending(repo: Repository, contract: Contract) -> tuple[set[str], set[int]]:
    """What verify runs still queued or running will verify: the heads of ``pull_request``
    runs, and the numbers dispatched runs on the default branch carry in their run name
    (``run-name: ... #<pr>``, set by the verify workflow; a pull request's own workflow
    cannot dispatch there)."""
    heads: set[str] = set()
    numbers: set[int] = set()
    path = verify_workflow_path(contract)
    for status in ("queued", "in_progress"):
        for run in repo.get_workflow_runs(status=status):
            if run.path.split("@", 1)[0] != path:
                continue
            if run.event == "pull_request":
                heads.add(run.head_sha)
            elif run.head_branch == run.repository.default_branch:  # a dispatched run
                found = _RUN_NUMBER.search(run.display_title or "")
                numbers.update([int(found.group(1))] if found else [])
    return heads, numbers


def request_verification(repo: Repository, contract: Contract, number: int) -> bool:
    """Dispatch the verify workflow on the default branch for pull request ``number``;
    whether GitHub accepted it."""
    name = PurePosixPath(verify_workflow_path(contract)).name
    try:
        workflow = repo.get_workflow(name)
        workflow.create_dispatch(repo.default_branch, {PR_INPUT: str(number)}, throw=True)
    except GithubException as exc:
        if exc.status not in (403, 404, 422):
            raise
        message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
        log.warning(
            "#%d: could not start %s (%s %s); it is verified on its next pull_request event",
            number,
            name,
            exc.status,
            message,
        )
        return False
    log.info("#%d: verification requested (%s on %s)", number, name, repo.default_branch)
    return True
