"""Candidate worktrees: one git worktree and one branch per seat, and the seat's files captured
as one commit on top of the base.

Why it works this way:

* **Only the files count.** A seat may commit, rebase, switch branches, stage things or break
  its index; none of that is the candidate. The candidate is the worktree's final file tree,
  read with a throwaway index seeded from the base commit (so "tracked" means tracked at the
  base, and untracked files count unless ignored), written as exactly one commit whose parent
  is the base commit. ``.loop-contract/`` inside the worktree is never part of it.
* **The repository is ours, not the seat's.** Capturing reads the worktree through the main
  repository's git directory, never through the seat's ``.git`` file, so a seat cannot point
  the capture at another repository. Git hooks and fsmonitor are disabled on every call, and
  the commit uses a fixed identity from environment variables, so neither a hook the seat
  planted nor the user's global configuration changes what is recorded.
* **Reruns start clean.** A worktree or directory left by an earlier run is removed, and the
  seat's branch is reset to the base commit, so attempt two never inherits attempt one.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.workspace import (
    WorkspaceError,
    changed_paths,
    git,
    resolve_commit,
    scratch_folder,
)

__all__ = [
    "BRANCH_PREFIX",
    "IDENTITY",
    "CandidateError",
    "Captured",
    "Worktree",
    "add_checkout",
    "add_worktree",
    "branch_name",
    "capture_candidate",
    "group_by_tree",
    "prune",
    "remove_checkout",
    "remove_worktree",
]

BRANCH_PREFIX = "loop-contract"

IDENTITY: Mapping[str, str] = {
    "GIT_AUTHOR_NAME": "loop-contract",
    "GIT_AUTHOR_EMAIL": "loop-contract@localhost",
    "GIT_COMMITTER_NAME": "loop-contract",
    "GIT_COMMITTER_EMAIL": "loop-contract@localhost",
}
"""Who candidate commits are by: the contest, not whoever runs it (no global config needed)."""

# Every git call here runs without hooks (a seat shares the repository's git directory and can
# plant one) and without fsmonitor (a configured command).
_SAFE_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")

# Worktree administration (add, remove, prune) touches shared files in the git directory;
# seats are prepared from parallel threads, so those steps take turns.
_ADMIN_LOCK = threading.RLock()

_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


class CandidateError(LoopContractError):
    """A seat left nothing that can be captured (it deleted or broke its worktree)."""


@dataclass(frozen=True)
class Worktree:
    seat: str
    path: Path
    branch: str
    base_commit: str
    own_repository: bool = False  # add_checkout: a repository of its own, never read


@dataclass(frozen=True)
class Captured:
    """A captured candidate: its commit (parent: the base commit), tree, and the paths that
    differ from the base (sorted; added, modified and deleted alike)."""

    commit: str
    tree: str
    changed_paths: tuple[str, ...]


def branch_name(contract_id: str, seat: str) -> str:
    """``loop-contract/<contract_id>/<seat>``, or ``ValueError`` if that is not a valid branch
    name by the rules of ``git check-ref-format --branch``."""
    for label, part in (("contract id", contract_id), ("seat name", seat)):
        if not part or "/" in part:
            raise ValueError(
                f"{label} {part!r} cannot be used in a branch name: it must be one non-empty "
                "name without '/'"
            )
    name = f"{BRANCH_PREFIX}/{contract_id}/{seat}"
    problem = _ref_format_problem(name)
    if problem is not None:
        raise ValueError(f"{name!r} is not a valid git branch name: {problem}")
    return name


def _ref_format_problem(name: str) -> str | None:
    """Why ``name`` fails ``git check-ref-format --branch``, or ``None``."""
    if name.startswith("-"):
        return "it starts with '-'"
    if name == "@":
        return "it is '@'"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "it has an empty path component"
    if name.endswith("."):
        return "it ends with '.'"
    if ".." in name:
        return "it contains '..'"
    if "@{" in name:
        return "it contains '@{'"
    bad = _REF_FORBIDDEN.search(name)
    if bad is not None:
        return f"it contains the forbidden character {bad.group(0)!r}"
    for component in name.split("/"):
        if component.startswith("."):
            return f"the component {component!r} starts with '.'"
        if component.endswith(".lock"):
            return f"the component {component!r} ends with '.lock'"
    return None


def _git(
    root: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
) -> bytes:
    try:
        return git(root, *_SAFE_CONFIG, *args, env=env, input_bytes=input_bytes)
    except WorkspaceError as exc:
        # workspace.git names the first two arguments, which here are our "-c" options.
        message = str(exc).replace(
            f"git {' '.join(_SAFE_CONFIG[:2])} failed", f"git {' '.join(args[:2])} failed", 1
        )
        raise WorkspaceError(message, exc.exit_code) from None


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


def _common_dir(root: Path) -> Path:
    out = git(root, "rev-parse", "--git-common-dir").decode().strip()
    return Path(_real(Path(root, out)))


@dataclass(frozen=True)
class _Registered:
    path: str
    branch: str | None
    locked: bool
    main: bool


def _registered(root: Path) -> list[_Registered]:
    out = _git(root, "worktree", "list", "--porcelain").decode("utf-8", "surrogateescape")
    entries: list[_Registered] = []
    for block in out.split("\n\n"):
        path: str | None = None
        branch: str | None = None
        locked = False
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            if key == "worktree":
                path = value
            elif key == "branch":
                branch = value
            elif key == "locked":
                locked = True
        if path is not None:
            entries.append(_Registered(_real(path), branch, locked, main=not entries))
    return entries


def add_worktree(
    root: Path, *, contract_id: str, seat: str, base_commit: str, parent: Path
) -> Worktree:
    """A fresh worktree at ``parent/<seat>`` on branch ``loop-contract/<contract_id>/<seat>``,
    reset to ``base_commit``. A worktree or directory left there by an earlier run, and any
    other worktree that has the branch checked out, are removed first."""
    branch = branch_name(contract_id, seat)
    base = resolve_commit(root, base_commit)
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(_real(parent)) / seat
    with _ADMIN_LOCK:
        _git(root, "worktree", "prune")
        for entry in _registered(root):
            if entry.path != str(path) and entry.branch != f"refs/heads/{branch}":
                continue
            if entry.main:
                raise WorkspaceError(
                    f"branch {branch} is checked out in the main worktree {entry.path}: "
                    "switch it to another branch first"
                )
            _remove_registered(root, entry)
        if os.path.lexists(path):
            _force_remove(path)
        _git(root, "worktree", "prune")
        _git(root, "worktree", "add", "--force", "-B", branch, str(path), base)
    return Worktree(seat=seat, path=path, branch=branch, base_commit=base)


def add_checkout(
    root: Path, *, contract_id: str, seat: str, base_commit: str, parent: Path
) -> Worktree:
    """A checkout of its own at ``parent/<seat>``, holding the base commit and nothing else:
    a new repository with a depth-1 fetch of that commit, so no other seat's branch, no later
    history, no reflog and no object of the repository is in it (a git worktree shares all of
    them). Its candidate is captured like a worktree's, into ``loop-contract/<id>/<seat>``."""
    branch = branch_name(contract_id, seat)
    base = resolve_commit(root, base_commit)
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(_real(parent)) / seat
    if os.path.lexists(path):
        _force_remove(path)
    handoff = f"refs/loop-contract/handoff/{seat}"
    with _ADMIN_LOCK:
        _git(root, "update-ref", handoff, base)
        try:
            _git(parent, "init", "-q", str(path))
            _git(path, "fetch", "-q", "--depth", "1", "--no-tags", str(root), handoff)
            _git(path, "checkout", "-q", "--detach", "FETCH_HEAD")
        finally:
            _try_git(root, "update-ref", "-d", handoff)
    return Worktree(seat=seat, path=path, branch=branch, base_commit=base, own_repository=True)


def _remove_registered(root: Path, entry: _Registered) -> None:
    if entry.locked:
        _try_git(root, "worktree", "unlock", entry.path)
    _try_git(root, "worktree", "remove", "--force", "--force", entry.path)
    if os.path.lexists(entry.path):  # e.g. a worktree holding submodules: git refuses
        _force_remove(Path(entry.path))
    _git(root, "worktree", "prune")


def _try_git(root: Path, *args: str) -> bool:
    try:
        _git(root, *args)
    except WorkspaceError:
        return False
    return True


def _force_remove(path: Path) -> None:
    """Delete a file, link or folder tree, also one whose folders a seat made read-only."""
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return

    def make_writable(func: Callable[..., Any], target: str, _exc: Any) -> None:
        folder = os.path.dirname(target)
        os.chmod(folder, os.stat(folder).st_mode | stat.S_IRWXU)
        if os.path.isdir(target) and not os.path.islink(target):
            os.chmod(target, os.stat(target).st_mode | stat.S_IRWXU)
        func(target)

    shutil.rmtree(path, onerror=make_writable)


def capture_candidate(root: Path, worktree: Worktree, *, message: str) -> Captured:
    """Record the seat's final files as one commit on top of the base and point the seat's
    branch at it. Raises :class:`CandidateError` if the worktree is gone or no longer one."""
    common = _common_dir(root)
    if worktree.own_repository:  # add_checkout: the seat's git is never read, only its files
        if not os.path.lexists(worktree.path / ".git"):
            raise CandidateError(
                f"seat {worktree.seat!r} deleted its checkout (or its .git): {worktree.path}"
            )
        own_git_dir = Path(tempfile.gettempdir()) / "loopcontract-no-index"
    else:
        own_git_dir = _check_worktree(root, worktree, common)
    with scratch_folder("loopcontract-capture-") as tmp:
        index = tmp / "index"
        env = {
            "GIT_DIR": str(common),
            "GIT_WORK_TREE": str(worktree.path),
            "GIT_INDEX_FILE": str(index),
        }
        _seed_index(worktree.path, own_git_dir / "index", index, worktree.base_commit, env)
        _git(worktree.path, "add", "-A", "--", ".", env=env)
        _restore_state_dir(worktree.path, worktree.base_commit, env)
        tree = _git(worktree.path, "write-tree", env=env).decode().strip()
    commit = (
        _git(
            root,
            "commit-tree",
            "--no-gpg-sign",
            tree,
            "-p",
            worktree.base_commit,
            "-m",
            message,
            env=IDENTITY,
        )
        .decode()
        .strip()
    )
    _git(
        root,
        "update-ref",
        "-m",
        f"loop-contract: candidate of {worktree.seat}",
        f"refs/heads/{worktree.branch}",
        commit,
    )
    paths = sorted({p for _status, p in changed_paths(root, worktree.base_commit, tree)})
    return Captured(commit=commit, tree=tree, changed_paths=tuple(paths))


def _check_worktree(root: Path, worktree: Worktree, common: Path) -> Path:
    """The worktree's own git directory, after checking it still is a worktree of ``root``."""
    path = worktree.path
    where = f"seat {worktree.seat!r}"
    if not path.is_dir():
        raise CandidateError(f"{where} deleted its worktree: {path} no longer exists")
    if not (path / ".git").is_file():
        raise CandidateError(
            f"{where} deleted or replaced its worktree's .git file: {path} is no longer a "
            "worktree of the repository"
        )
    try:
        out = git(path, "rev-parse", "--git-common-dir", "--show-toplevel", "--absolute-git-dir")
        common_out, top, own = out.decode("utf-8", "surrogateescape").splitlines()[:3]
    except (WorkspaceError, ValueError):
        raise CandidateError(
            f"{where} broke its worktree: {path} is no longer a git worktree"
        ) from None
    if _real(Path(path, common_out)) != str(common) or _real(top) != _real(path):
        raise CandidateError(
            f"{where} broke its worktree: {path} is no longer a worktree of {root}"
        )
    return Path(own)


def _restore_state_dir(workdir: Path, base: str, env: Mapping[str, str]) -> None:
    """Whatever the seat wrote under ``.loop-contract/`` is not part of its candidate: those
    index entries go back to what the base commit had there (usually nothing). (An exclude
    pathspec on ``git add`` fails when the folder is ignored, hence two steps.)"""
    _git(workdir, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", StateDir.NAME, env=env)
    entries = _git(workdir, "ls-tree", "-r", "-z", base, "--", StateDir.NAME, env=env)
    if entries:
        _git(workdir, "update-index", "-z", "--index-info", env=env, input_bytes=entries)


def _seed_index(
    workdir: Path, own_index: Path, index: Path, base: str, env: Mapping[str, str]
) -> None:
    """Start the throwaway index as the base commit's tree. The seat's own index, when it can
    be read, lends its stat data (``read-tree -m`` keeps it for entries whose content matches
    the base) so unchanged files are not hashed again; its content never counts."""
    try:
        shutil.copy2(own_index, index)  # keeps the mtime: git's racy-clean check needs it
        _git(workdir, "read-tree", "-m", base, env=env)
        return
    except (OSError, WorkspaceError):
        index.unlink(missing_ok=True)
    _git(workdir, "read-tree", base, env=env)


def remove_worktree(root: Path, worktree: Worktree) -> None:
    """Remove the worktree (its files and its registration); the branch stays."""
    path = _real(worktree.path)
    top = _real(root)
    if path == top or top.startswith(path.rstrip("/") + "/"):
        raise WorkspaceError(f"refusing to remove {path}: it holds the repository {root}")
    with _ADMIN_LOCK:
        for entry in _registered(root):
            if entry.path == path and not entry.main:
                _remove_registered(root, entry)
        if os.path.lexists(path):
            _force_remove(Path(path))
        _git(root, "worktree", "prune")


def remove_checkout(worktree: Worktree) -> None:
    """Delete a seat's own checkout (:func:`add_checkout`) once its candidate is captured."""
    if os.path.lexists(worktree.path):
        _force_remove(worktree.path)


def prune(root: Path) -> None:
    """Forget worktrees whose folders are gone (``git worktree prune``)."""
    with _ADMIN_LOCK:
        _git(root, "worktree", "prune")


def group_by_tree(trees: Mapping[str, str | None]) -> list[tuple[str, ...]]:
    """Seats grouped by identical tree id, every seat exactly once: each group sorted, the
    groups ordered by their first seat. A seat without a tree (``None``) is always alone."""
    by_tree: dict[str, list[str]] = {}
    groups: list[tuple[str, ...]] = []
    for seat, tree in trees.items():
        if tree is None:
            groups.append((seat,))
        else:
            by_tree.setdefault(tree, []).append(seat)
    groups.extend(tuple(sorted(seats)) for seats in by_tree.values())
    return sorted(groups)
