"""The contest's state file on the data branch: ``loop-contract/<id>/state.json``.

Publish writes it, the gate reads and rewrites it, and both must agree
on where it lives and on what "no state yet" looks like. Before the first publish the data
branch does not exist, and GitHub answers the read with 404 "No commit found for the ref
loop-contract-data" (not "Not Found"), so absence is decided by :func:`.missing.is_missing`.
One read returns the document and its blob sha, which the next write passes to GitHub, so a
writer that lost a race retries instead of overwriting.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.github.not_found import is_missing
from pytest_loopcontract.github.records import record_writer

__all__ = [
    "DATA_BRANCH",
    "StateRead",
    "read_state",
    "read_state_and_sha",
    "read_trusted_state",
    "state_path",
    "write_state",
]

log = logging.getLogger("loopcontract.github")

DATA_BRANCH = "loop-contract-data"


def state_path(contract_id: str) -> str:
    return f"loop-contract/{contract_id}/state.json"


def read_state(repo: Repository, contract_id: str) -> dict[str, Any] | None:
    """The last published state of a contest from the data branch, or None."""
    return read_state_and_sha(repo, contract_id)[0]


_UNKNOWN = "unknown"


def read_state_and_sha(
    repo: Repository, contract_id: str
) -> tuple[dict[str, Any] | None, str | None]:
    """The state and its blob sha (None: no file yet), in one request."""
    try:
        content = repo.get_contents(state_path(contract_id), ref=DATA_BRANCH)
    except GithubException as exc:
        if not is_missing(exc):  # 404 "No commit found for the ref ..." is not Unknown...
            raise
        return None, None
    if isinstance(content, list):
        return None, None
    try:
        document = json.loads(content.decoded_content)
    except ValueError:
        log.warning("the state file on %s is not JSON: ignored", DATA_BRANCH)
        return None, content.sha
    return (document if isinstance(document, dict) else None), content.sha


@dataclass(frozen=True)
class StateRead:
    """The state as the action may use it: ``document`` is None when there is none or when
    its newest writer is not the action (``problem`` says why); ``sha`` is the file's blob
    sha either way, for the next write."""

    document: dict[str, Any] | None
    sha: str | None
    problem: str | None = None


def read_trusted_state(repo: Repository, contract_id: str, *, bot_login: str) -> StateRead:
    """The contest's state when the action wrote it (:mod:`.records`), else no state.

    An untrusted state is logged and left out whole: its verifications, its proposed winner
    and a person's recorded decision all count for nothing, and the next publish verifies
    the candidates again and writes a state of its own."""
    document, sha = read_state_and_sha(repo, contract_id)
    if document is None:
        return StateRead(None, sha)
    problem = record_writer(repo, state_path(contract_id), branch=DATA_BRANCH).problem(bot_login)
    if problem is not None:
        log.warning("the recorded state is ignored: %s", problem)
        return StateRead(None, sha, problem)
    return StateRead(document, sha)


def write_state(
    repo: Repository,
    contract_id: str,
    state: Mapping[str, Any],
    *,
    known_sha: str | None = _UNKNOWN,
) -> None:
    """Write the state file on the data branch (created from the default branch if missing).

    ``known_sha``: the file's blob sha as just read (None: no file), which saves a read; a
    conflict (someone wrote in between) re-reads and retries.
    """
    path = state_path(contract_id)
    text = json.dumps(state, indent=1, sort_keys=True) + "\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    message = f"loop-contract: state of contest {contract_id} ({digest})"
    sha = known_sha
    for _ in range(3):
        try:
            if sha == _UNKNOWN:
                sha = read_state_and_sha(repo, contract_id)[1]
            if sha is None:
                repo.create_file(path, message, text, branch=DATA_BRANCH)
            else:
                repo.update_file(path, message, text, sha, branch=DATA_BRANCH)
            return
        except GithubException as exc:
            if exc.status == 404 or (exc.status == 422 and "branch" in str(exc.data).lower()):
                _create_data_branch(repo)
                sha = _UNKNOWN
                continue
            if exc.status in (409, 422):
                log.info("state file changed under us (%s); retrying", exc.status)
                sha = _UNKNOWN
                continue
            raise
    raise RuntimeError(f"could not write {path} on {DATA_BRANCH} after 3 attempts")


def _create_data_branch(repo: Repository) -> None:
    base = repo.get_branch(repo.default_branch)
    try:
        repo.create_git_ref(f"refs/heads/{DATA_BRANCH}", base.commit.sha)
    except GithubException as exc:
        if exc.status != 422:  # already exists: a concurrent run made it
            raise
