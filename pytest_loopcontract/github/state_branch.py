"""State between runs (ledger, lessons, routes) as reviewable files on a data branch.

Why it is built this way:

* **A branch, not a cache.** The contest's memory is plain files on ``loop-contract-data``:
  people can read, diff, review and revert it like code, and nothing needs a secret store.
* **Git data API, one commit per write.** Blobs, one tree on top of the branch's tree, one
  commit, then a *non-forced* ref update. Several files change atomically, and a write never
  drops another writer's commit: GitHub refuses an update that is not a fast-forward (422).
* **Conflicts are normal.** Two workflow runs may publish at the same time. On a refused
  update the branch is read again and the change re-applied on top of the new head, up to
  ``attempts`` times, with a short randomised pause so racers separate. ``update_files``
  gives the change function a reader of the current head, so appends (ledger lines) are
  recomputed against what the other writer left, not lost.
* **Paths are checked.** Only relative paths of ordinary segments are written: no ``..``,
  no ``.git``, no absolute or backslashed paths, no control characters.
* **No empty commits.** A change that leaves the tree as it was writes nothing.
* Git objects are content-addressed, so a blob/tree POST that failed with a 5xx is safely
  posted again (the transport itself never repeats POSTs).
"""

from __future__ import annotations

import base64
import logging
import random
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TypeVar

from github.GitCommit import GitCommit
from github.GithubException import GithubException
from github.GitRef import GitRef
from github.InputGitTreeElement import InputGitTreeElement
from github.Repository import Repository

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.github.not_found import is_missing

__all__ = [
    "DATA_BRANCH",
    "FileReader",
    "StateConflictError",
    "read_file",
    "update_files",
    "validate_path",
    "write_files",
]

log = logging.getLogger("loopcontract.github")

DATA_BRANCH = "loop-contract-data"
DEFAULT_ATTEMPTS = 5
MAX_PATH = 255
POST_ATTEMPTS = 3
FileReader = Callable[[str], "bytes | None"]
_T = TypeVar("_T")


class StateConflictError(LoopContractError):
    """The branch kept moving under us for every attempt."""


def validate_path(path: str) -> str:
    """``path`` when it is a safe relative file path on the data branch, else ValueError."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH:
        raise ValueError(f"invalid state path {path!r}")
    if path.startswith("/") or "\\" in path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise ValueError(f"invalid state path {path!r}")
    for segment in path.split("/"):
        if segment in ("", ".", "..") or segment.casefold() == ".git":
            raise ValueError(f"invalid state path {path!r}")
    return path


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, GithubException):
        return exc.status >= 500
    return isinstance(exc, OSError)


def _post(action: Callable[[], _T]) -> _T:
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            return action()
        except (GithubException, OSError) as exc:
            if not _is_transient(exc) or attempt == POST_ATTEMPTS:
                raise
            log.warning("git data write failed (%s); posting again", exc)
    raise AssertionError("unreachable")


def _ref(repo: Repository, branch: str) -> GitRef | None:
    try:
        ref = repo.get_git_ref(f"heads/{branch}")
        ref.object  # noqa: B018 - completes a lazy ref, so a missing branch raises here
    except GithubException as exc:
        if not is_missing(exc):
            raise
        return None
    return ref


def _read_at(repo: Repository, path: str, ref: str) -> bytes | None:
    try:
        content = repo.get_contents(path, ref=ref)
    except GithubException as exc:
        if not is_missing(exc):  # the wording of a 404 varies: "No commit found for the ref"
            raise
        return None
    if isinstance(content, list):
        raise IsADirectoryError(f"{path} is a directory on {ref}")
    if content.encoding == "base64":
        return content.decoded_content
    # Files over 1 MB come back without content: read the blob instead.
    return base64.b64decode(repo.get_git_blob(content.sha).content)


def read_file(repo: Repository, path: str, *, branch: str = DATA_BRANCH) -> bytes | None:
    """The file's bytes on ``branch``; None when the file or the branch does not exist."""
    return _read_at(repo, validate_path(path), branch)


def update_files(
    repo: Repository,
    change: Callable[[FileReader], Mapping[str, bytes | None]],
    message: str,
    *,
    branch: str = DATA_BRANCH,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff: float = 0.5,
) -> str | None:
    """Apply ``change`` on top of the branch head and commit it; returns the new head SHA.

    ``change(read)`` gets a reader of the head being written on (``read(path) -> bytes |
    None``) and returns ``{path: bytes}`` to write, ``{path: None}`` to delete. It is called
    again after a conflict, so it must be a pure function of what it reads. The branch is
    created (an orphan commit) when missing. Returns the unchanged head SHA when the change
    leaves the tree as it was (None if the branch does not exist and nothing was written).
    Raises :class:`StateConflictError` when every attempt lost a race."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    blobs: dict[bytes, str] = {}
    for attempt in range(1, attempts + 1):
        ref = _ref(repo, branch)
        head_sha = ref.object.sha if ref is not None else None
        head: GitCommit | None = repo.get_git_commit(head_sha) if head_sha else None

        def read(path: str, at: str | None = head_sha) -> bytes | None:
            return None if at is None else _read_at(repo, validate_path(path), at)

        wanted = {validate_path(p): data for p, data in change(read).items()}
        elements = _tree_elements(repo, wanted, read if head is not None else None, blobs)
        commit = _commit(repo, elements, head, message) if elements else None
        if commit is None:
            return head_sha
        if _advance(repo, ref, branch, commit.sha):
            log.info("%s: %s (%s)", branch, message.splitlines()[0] if message else "", commit.sha)
            return commit.sha
        log.info("%s moved under us (attempt %d/%d): re-applying", branch, attempt, attempts)
        if backoff > 0:
            time.sleep(random.uniform(0, backoff * attempt))
    raise StateConflictError(f"{branch}: could not write after {attempts} attempts")


def _tree_elements(
    repo: Repository,
    wanted: Mapping[str, bytes | None],
    read_head: FileReader | None,
    blobs: dict[bytes, str],
) -> list[InputGitTreeElement]:
    """The tree entries for ``wanted``: a blob per content (posted once, kept in ``blobs``
    across attempts), a deletion only for a path the head has."""
    elements: list[InputGitTreeElement] = []
    for path, data in sorted(wanted.items()):
        if data is None:
            if read_head is not None and read_head(path) is not None:
                elements.append(InputGitTreeElement(path, "100644", "blob", sha=None))
            continue
        if data not in blobs:
            encoded = base64.b64encode(data).decode("ascii")
            blobs[data] = _post(partial(repo.create_git_blob, encoded, "base64")).sha
        elements.append(InputGitTreeElement(path, "100644", "blob", sha=blobs[data]))
    return elements


def _commit(
    repo: Repository,
    elements: list[InputGitTreeElement],
    head: GitCommit | None,
    message: str,
) -> GitCommit | None:
    """A commit of the head's tree with ``elements`` applied; ``None`` when that tree is the
    head's own (nothing changed)."""
    if head is not None:
        base = head.tree
        tree = _post(partial(repo.create_git_tree, elements, base))
        if tree.sha == base.sha:
            return None
    else:
        tree = _post(partial(repo.create_git_tree, elements))
    parents = [head] if head is not None else []
    return _post(partial(repo.create_git_commit, message, tree, parents))


def _advance(repo: Repository, ref: GitRef | None, branch: str, sha: str) -> bool:
    """Move the branch to ``sha`` (create it when missing); ``False`` when it moved under us
    or the write failed transiently, so the caller re-applies the change."""
    try:
        if ref is None:
            repo.create_git_ref(f"refs/heads/{branch}", sha)
        else:
            ref.edit(sha, force=False)
    except (GithubException, OSError) as exc:
        conflict = isinstance(exc, GithubException) and exc.status in (409, 422)
        if not (conflict or _is_transient(exc)):
            raise
        return False
    return True


def write_files(
    repo: Repository,
    files: Mapping[str, bytes],
    message: str,
    *,
    branch: str = DATA_BRANCH,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff: float = 0.5,
) -> str | None:
    """Write ``files`` (path -> bytes) in one commit on ``branch``; see :func:`update_files`."""
    fixed: dict[str, bytes | None] = {validate_path(p): bytes(d) for p, d in files.items()}
    return update_files(
        repo, lambda _read: fixed, message, branch=branch, attempts=attempts, backoff=backoff
    )
