"""May publish believe a verify run? Trust the workflow that ran, never the run itself.

Why it is built this way:

* **A dispatched run is the default branch's.** ``workflow_dispatch`` runs the workflow file of
  the ref it names, so such a run counts only when that ref is the default branch (and the
  workflow is the configured one, byte for byte): the propose job and publish dispatch there.
* **A pull request writes its own run.** For ``pull_request`` GitHub takes the workflow files
  from the pull request, so a candidate that adds ``.github/workflows/evil.yml`` (named like the
  verify workflow, which is all ``workflow_run: workflows:`` matches on) or edits the verify
  workflow or the action gets a run that uploads whatever verdict it likes. So a run counts
  only when (a) the workflow file that ran, ``workflow_run.path`` (from GitHub's event, matched
  by *path*, never by name), is the configured verify workflow, (b) its bytes at the run's head
  SHA are the default branch's bytes, and (c) the pull request's file list (from the API, every
  page) touches nothing under ``.github/``, the action, the contract or another protected path.
  Anything else makes the candidate ``verification_untrusted``: never a winner.
* **The verdict must come from the sandbox.** Candidate code that outlives ``verify`` could
  rewrite the verdict before the upload step; only the sandbox (bubblewrap: own PID namespace,
  no view of the artifact folder) rules that out. A verdict without ``isolation: sandbox`` is
  refused unless the contract says ``github: {require_sandbox: false}``; a verdict written
  before the key existed counts as ``process``.
* **The diff the judges read comes from the API**, built from the same file list (its
  ``patch`` fields), never from the artifact a candidate's run uploaded.

Requests: the pull request's files (one per 100 files) and two contents reads for the workflow
file (the default branch's copy is read once per publish).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from github.ContentFile import ContentFile
from github.GithubException import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.not_found import is_missing
from pytest_loopcontract.github.pulls import CandidatePR, is_commit_sha
from pytest_loopcontract.workspace import match_glob

__all__ = [
    "UNTRUSTED_HELP",
    "PullFile",
    "TrustCheck",
    "VerifyRun",
    "WorkflowCheck",
    "check_run",
    "diff_of",
    "isolation_problem",
    "protected_patterns",
    "pull_files",
    "touched_protected",
]

log = logging.getLogger("loopcontract.github")

ALWAYS_PROTECTED = (".github/", "/action/", "/action.yml", "/action.yaml")
"""Workflows and the action's own files: what decides how a verify run behaves."""
UNTRUSTED_HELP = (
    "A maintainer can land the workflow, action or contract change on the default branch in "
    "its own pull request; this candidate is then verified again on its next push."
)
MAX_FILES = 3000
"""GitHub lists at most 3000 files of a pull request; a longer list cannot be checked."""


@dataclass(frozen=True)
class VerifyRun:
    """The verify run that triggered this publish, as GitHub's ``workflow_run`` event says:
    its head, the workflow file that ran, the pull requests it names (none for a fork's run)
    and where its head lives (``head_repo`` owner/name, ``head_branch``)."""

    id: str
    head_sha: str
    path: str
    event: str
    pull_numbers: tuple[int, ...] = ()
    head_repo: str = ""
    head_branch: str = ""

    @property
    def dispatched(self) -> bool:
        """Started by ``workflow_dispatch`` (by the propose job, publish or a person): its
        head is the ref it was dispatched on, and the candidates it verified are the ones
        its artifacts name, each checked against the API's head."""
        return self.event == "workflow_dispatch"

    def speaks_for(self, cand: CandidatePR) -> bool:
        """Whether this is ``cand``'s run: the same head SHA *and* the same pull request, by
        the number the event names or, for a fork's run (GitHub names none there), by its
        head repository and branch. So a copy of a candidate's head commit in someone else's
        pull request never gets that candidate's verification written, good or bad. A run
        that says neither (no event around it) is matched by its SHA alone."""
        if cand.head_sha != self.head_sha:
            return False
        if self.pull_numbers:
            return cand.number in self.pull_numbers
        if self.head_repo:
            head = (cand.head_repo.casefold(), cand.head_ref)
            return head == (self.head_repo.casefold(), self.head_branch)
        return True

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> VerifyRun | None:
        """The run of a ``workflow_run`` event; None when the event is none."""
        run = event.get("workflow_run")
        if not isinstance(run, Mapping) or not is_commit_sha(run.get("head_sha")):
            return None
        numbers = [
            entry.get("number")
            for entry in run.get("pull_requests") or []
            if isinstance(entry, Mapping)
        ]
        # A called (reusable) workflow reports "path@ref"; the file is the part before "@".
        path = str(run.get("path") or "").split("@", 1)[0]
        head = run.get("head_repository")
        return cls(
            id=str(run.get("id") or ""),
            head_sha=str(run["head_sha"]),
            path=path,
            event=str(run.get("event") or ""),
            pull_numbers=tuple(sorted(n for n in numbers if type(n) is int)),
            head_repo=str((head if isinstance(head, Mapping) else {}).get("full_name") or ""),
            head_branch=str(run.get("head_branch") or ""),
        )


@dataclass(frozen=True)
class PullFile:
    """One entry of ``GET /pulls/{n}/files``."""

    filename: str
    previous_filename: str | None
    status: str
    patch: str | None

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches (a rename touches two)."""
        return (self.filename,) + ((self.previous_filename,) if self.previous_filename else ())


@dataclass(frozen=True)
class TrustCheck:
    """Why a verify run cannot speak for its candidate (empty: it can), and the API's diff."""

    problems: list[str] = field(default_factory=list)
    diff: str = ""

    @property
    def trusted(self) -> bool:
        return not self.problems


def pull_files(repo: Repository, number: int) -> list[PullFile]:
    """The pull request's changed files, every page (ValueError past GitHub's 3000-file cap).

    The pull request object is built without completing it: its files are one request per
    page, not one more for the pull request itself."""
    pull = PullRequest(repo.requester, url=f"{repo.url}/pulls/{number}", completed=False)
    files: list[PullFile] = []
    for f in pull.get_files():
        files.append(PullFile(f.filename, f.previous_filename, f.status, f.patch))
        if len(files) > MAX_FILES:
            raise ValueError(f"the pull request changes more than {MAX_FILES} files")
    return files


def diff_of(files: Sequence[PullFile]) -> str:
    """A unified diff of the pull request, from the API's per-file ``patch`` hunks."""
    parts = []
    for f in files:
        old = f.previous_filename or f.filename
        head = f"diff --git a/{old} b/{f.filename}\n--- a/{old}\n+++ b/{f.filename}\n"
        body = f.patch if f.patch is not None else "(no textual diff: binary or too large)"
        parts.append(head + body.rstrip("\n") + "\n")
    return "".join(parts)


def protected_patterns(contract: Contract) -> tuple[str, ...]:
    """Globs a candidate may not change for its run to count (see the module docstring)."""
    return (
        *ALWAYS_PROTECTED,
        "/" + _contract_path(contract),
        *contract.protect.paths,
        *contract.github.protect,
    )


def _contract_path(contract: Contract) -> str:
    try:
        return contract.path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return contract.path.name


def touched_protected(files: Sequence[PullFile], patterns: Sequence[str]) -> list[str]:
    """The protected paths among the files a pull request changes, sorted."""
    return sorted(
        {path for f in files for path in f.paths if any(match_glob(path, p) for p in patterns)}
    )


def isolation_problem(verdict: Mapping[str, Any], contract: Contract) -> str | None:
    """Why the verdict's isolation is not enough for this contract (None: it is)."""
    isolation = verdict.get("isolation", "process")  # older verdicts: no key, no sandbox
    if isolation == "sandbox" or not contract.github.require_sandbox:
        return None
    return (
        f"the verdict ran with isolation {isolation!r}, not in the sandbox: candidate code could "
        "have outlived the verifier and rewritten it (the contract can accept process isolation "
        "with github: {require_sandbox: false})"
    )


class WorkflowCheck:
    """Compares the workflow file that ran with the default branch's copy (read once)."""

    def __init__(self, repo: Repository, contract: Contract) -> None:
        self._repo = repo
        self.path = contract.github.verify_workflow
        self._default: bytes | None = None

    def problem(self, run: VerifyRun) -> str | None:
        if run.dispatched:
            default = self._repo.default_branch
            if run.head_branch != default:
                return (
                    f"the run was dispatched on {run.head_branch or 'an unknown ref'!r}, not on "
                    f"the default branch {default!r}: its workflow is that branch's"
                )
        elif run.event != "pull_request":
            return (
                f"the run was started by {run.event or 'an unknown event'!r}, not pull_request "
                "or workflow_dispatch"
            )
        if run.path != self.path:
            return (
                f"the workflow that ran is {run.path or 'unknown'!r}, not the verify workflow "
                f"{self.path!r} (a workflow is trusted by its path, never by its name)"
            )
        if self._default is None:
            self._default = self._read(None)  # no ref: the default branch, without asking its name
            if self._default is None:
                return f"{self.path} does not exist on the default branch"
        if self._read(run.head_sha) != self._default:
            return f"{self.path} at {run.head_sha[:12]} differs from the default branch's copy"
        return None

    def _read(self, ref: str | None) -> bytes | None:
        try:
            if ref is None:
                content = self._repo.get_contents(self.path)
            else:
                content = self._repo.get_contents(self.path, ref=ref)
        except GithubException as exc:
            if not is_missing(exc):
                raise
            return None
        if not isinstance(content, ContentFile) or content.encoding != "base64":
            return None  # a folder, or a file too large to be a workflow
        return content.decoded_content


def check_run(
    repo: Repository,
    contract: Contract,
    run: VerifyRun,
    number: int,
    workflow: WorkflowCheck,
) -> TrustCheck:
    """Whether ``run`` may speak for pull request ``number``, which is its own (the same head
    SHA and pull request: :meth:`VerifyRun.speaks_for`)."""
    problem = workflow.problem(run)
    problems = [] if problem is None else [problem]
    try:
        files = pull_files(repo, number)
    except ValueError as exc:
        return TrustCheck([*problems, str(exc)])
    touched = touched_protected(files, protected_patterns(contract))
    if touched:
        more = f" and {len(touched) - 5} more" if len(touched) > 5 else ""
        shown = ", ".join(touched[:5]) + more
        problems.append(
            f"the pull request changes {shown}: workflows, the action, the contract and "
            "protected paths decide how its own verification runs"
        )
    for problem in problems:
        log.warning("#%d: verification untrusted: %s", number, problem)
    return TrustCheck(problems, diff_of(files))
