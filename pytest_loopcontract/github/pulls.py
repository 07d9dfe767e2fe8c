"""Finding a contest's candidate pull requests through the API.

Why it is built this way:

* **The API is the source of truth, the event is a hint.** A ``workflow_run`` event names the
  pull requests it ran for, but lists none for a fork (GitHub leaves ``pull_requests`` empty
  there), and may name pull requests of *other* repositories whose head is the same branch.
  So every pull request is read back from this repository, and it only counts when its
  current head SHA is the SHA the run tested: a verdict for an older push is not a verdict
  for the pull request as it stands.
* **Forks are found by SHA.** Without ``pull_requests`` the run's ``head_sha`` is looked up
  (commit -> pulls API first, then the open pull requests, paginated), never by trusting the
  branch name alone: two forks may use the same branch name.
* **One base.** Only a pull request against the contest's base branch (the contract's
  ``github.base``, else the repository's default branch, read from the listed pull requests
  themselves: no extra request) is a candidate; one against another branch is logged and left
  out. Its baseline, its protected paths and its contract would be another branch's.
* Candidacy itself (branch or label, seat) is decided by the pure :mod:`.events`; whether the
  author may hold the seat it claims, by :mod:`.seat_claims`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.events import contest_of_pull, is_valid_id

__all__ = [
    "CandidatePR",
    "candidate_from_pull",
    "contest_base",
    "contest_pulls",
    "is_commit_sha",
    "list_candidates",
    "pr_for_workflow_run",
]

log = logging.getLogger("loopcontract.github")

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


@dataclass(frozen=True)
class CandidatePR:
    """One pull request competing in a contest, as the API reports it now: its number, its
    head, the seat it claims, its author and where its head lives (``head_repo``: owner/name,
    empty when that repository was deleted) and which branch it targets."""

    number: int
    head_sha: str
    head_ref: str
    seat: str
    author: str
    fork: bool
    state: str
    head_repo: str = ""
    base_ref: str = ""
    base_sha: str = ""  # the base commit the API reports ("" when it is no commit id)


def is_commit_sha(value: object) -> bool:
    """A full lower-case hex commit id (SHA-1, or SHA-256 for SHA-256 repositories)."""
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def candidate_from_pull(pr: PullRequest, contract_id: str | None = None) -> CandidatePR | None:
    """The pull request as a candidate (of ``contract_id`` when given), else None."""
    author = pr.user.login if pr.user is not None else ""
    ref = contest_of_pull(pr.head.ref, pr.labels, author, contract_id)
    if ref is None:
        return None
    if not is_commit_sha(pr.head.sha):
        log.warning("pull request #%d: head SHA %r is not a commit id", pr.number, pr.head.sha)
        return None
    head_repo = pr.head.repo
    base_repo = pr.base.repo
    fork = head_repo is None or head_repo.full_name != base_repo.full_name
    return CandidatePR(
        number=pr.number,
        head_sha=pr.head.sha,
        head_ref=pr.head.ref,
        seat=ref.seat,
        author=author,
        fork=fork,
        state=pr.state,
        head_repo=head_repo.full_name if head_repo is not None else "",
        base_ref=pr.base.ref,
        base_sha=pr.base.sha if is_commit_sha(pr.base.sha) else "",
    )


def contest_base(contract: Contract) -> str | None:
    """The branch the contest's candidates target: ``github.base``, None for the repository's
    default branch."""
    base = contract.github.base
    return str(base) if base else None


def _claims(repo: Repository, contract_id: str) -> Iterator[tuple[PullRequest, CandidatePR]]:
    """Every open pull request that claims contest ``contract_id`` (all pages read)."""
    if not is_valid_id(contract_id):
        raise ValueError(f"invalid contract id {contract_id!r}")
    for pr in repo.get_pulls(state="open"):
        candidate = candidate_from_pull(pr, contract_id)
        if candidate is not None:
            yield pr, candidate


def contest_pulls(repo: Repository, contract_id: str) -> list[CandidatePR]:
    """Every open pull request that claims contest ``contract_id``, whatever its base and
    whoever opened it, by number: everyone who takes part (the gate's wide net)."""
    return sorted((c for _, c in _claims(repo, contract_id)), key=lambda c: c.number)


def list_candidates(
    repo: Repository, contract_id: str, *, base: str | None = None
) -> list[CandidatePR]:
    """The open pull requests of contest ``contract_id`` against ``base`` (None: the
    repository's default branch), by number; the others are logged and left out."""
    found = []
    for pr, candidate in _claims(repo, contract_id):
        wanted = base or pr.base.repo.default_branch
        if candidate.base_ref == wanted:
            found.append(candidate)
        else:
            log.info(
                "pull request #%d targets %r, not the contest's base %r: not a candidate",
                candidate.number,
                candidate.base_ref,
                wanted,
            )
    return sorted(found, key=lambda c: c.number)


def _event_numbers(run: Mapping[str, Any], head_sha: str) -> list[int]:
    numbers: list[int] = []
    entries = run.get("pull_requests")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        number = entry.get("number")
        head = entry.get("head")
        sha = head.get("sha") if isinstance(head, Mapping) else None
        if isinstance(number, int) and not isinstance(number, bool) and sha == head_sha:
            numbers.append(number)
    return sorted(set(numbers))


def _open_pulls_at(pulls: Iterable[PullRequest], repo: Repository, sha: str) -> list[PullRequest]:
    return [
        pr
        for pr in pulls
        if pr.state == "open" and pr.head.sha == sha and pr.base.repo.full_name == repo.full_name
    ]


def _pulls_by_sha(repo: Repository, sha: str) -> list[PullRequest]:
    try:
        found = _open_pulls_at(repo.get_commit(sha).get_pulls(), repo, sha)
    except GithubException as exc:
        log.info("commit %s: pulls lookup failed (%s); listing open pulls", sha[:12], exc.status)
        found = []
    if found:
        return found
    return _open_pulls_at(repo.get_pulls(state="open"), repo, sha)


def pr_for_workflow_run(
    repo: Repository, event: Mapping[str, Any], contract_id: str | None = None
) -> list[CandidatePR]:
    """The open candidate pull requests whose current head is the run's ``head_sha``.

    Uses ``workflow_run.pull_requests`` when it names any (each read back from ``repo``),
    else looks the SHA up (forks). ``contract_id`` limits the answer to that contest."""
    run = event.get("workflow_run")
    if not isinstance(run, Mapping):
        raise ValueError("not a workflow_run event: no workflow_run object")
    head_sha = run.get("head_sha")
    if not is_commit_sha(head_sha):
        raise ValueError(f"workflow_run.head_sha {head_sha!r} is not a commit id")
    assert isinstance(head_sha, str)
    pulls: list[PullRequest] = []
    for number in _event_numbers(run, head_sha):
        try:
            pulls.append(repo.get_pull(number))
        except GithubException as exc:
            log.warning("pull request #%d named by the event: %s", number, exc.status)
    pulls = _open_pulls_at(pulls, repo, head_sha)
    if not pulls:
        pulls = _pulls_by_sha(repo, head_sha)
    candidates = {
        c.number: c for pr in pulls if (c := candidate_from_pull(pr, contract_id)) is not None
    }
    return [candidates[n] for n in sorted(candidates)]
