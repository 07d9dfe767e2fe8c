"""Snapshots of the work tree through a throwaway index: what git would commit now, tracked
and untracked files, ignored ones left out, the user's own staging area never touched.

Apart from :mod:`.workspace` (git's other plumbing) because the in-process verdict reads its
snapshot at every session's end and has its own way of doing it (:func:`snapshot_against`).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.workspace import (
    StartedGit,
    TreeEntry,
    WorkspaceError,
    git,
    make_scratch,
    remove_tree,
)

__all__ = ["PendingSnapshot", "Snapshot", "ThrowawayIndex", "snapshot_worktree"]


def snapshot_worktree(
    root: Path, exclude: Sequence[str] = (StateDir.NAME,), real_index: Path | None = None
) -> str:
    """Tree id of the working tree as it is now: tracked and untracked, ignored files left out.

    Uses a throwaway index so the user's staging area is never touched. ``real_index`` is
    the user's index file when the caller knows it already (:func:`repo_head`).
    """
    with ThrowawayIndex(root, real_index) as index:
        git(root, "add", "-A", "--", ".", env=index.env)
        if exclude:
            _remove_cached(root, exclude, index.env)
        return _write_tree(root, index.env)


class ThrowawayIndex:
    """An index file of our own in a temporary folder, started from a copy of the real one
    (``real_index``, else git is asked where it is): its stat data lets ``git add`` skip
    re-hashing unchanged files, and only the copy is written, so the user's staging area is
    never touched. Made ahead of time by the in-process verdict (while the tests are
    collected); correct whenever it was copied, since ``git add -A`` re-reads every file whose
    stat data differs."""

    def __init__(self, root: Path, real_index: Path | None = None) -> None:
        self._folder = make_scratch("loopcontract-index-")
        self.path = self._folder / "index"
        _seed_index(root, self.path, real_index)
        self.env = {"GIT_INDEX_FILE": str(self.path)}

    def close(self) -> None:
        remove_tree(self._folder)

    def __enter__(self) -> ThrowawayIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Snapshot(NamedTuple):
    """The work tree as git would commit it (the state folder left out), beside a commit."""

    files: dict[str, TreeEntry]
    differs: bool  # from the commit: what :func:`is_dirty` says of the work tree
    tree: str | None  # its tree id, written only when asked for


# One process for the whole snapshot: add the tree to the throwaway index, list the index,
# then (after a marker record, which has no tab, so no listing record looks like it) the paths
# that differ from the commit, "$@" being the commit and the pathspec.
_SNAPSHOT_SCRIPT = (
    "git add -A -- . && git ls-files -s -z && printf 'end-of-listing\\0' && "
    'git diff-index --cached --name-only -z "$@"'
)
_MARKER = b"\0end-of-listing\0"


class PendingSnapshot:
    """:func:`snapshot_worktree`'s files, listed from ``index`` rather than from a written
    tree, and whether they differ from ``commit``: one ``sh`` chain of ``git add``,
    ``ls-files`` and ``diff-index``, started at once and read by :meth:`result`. The tree
    itself is written only when ``with_tree`` asks (a diff needs it), the state folder taken
    out first if it was added. The listing goes to a file beside the index, so a large tree
    never waits on a full pipe."""

    def __init__(
        self,
        root: Path,
        commit: str,
        index: ThrowawayIndex,
        *,
        exclude: Sequence[str] = (StateDir.NAME,),
        with_tree: bool = False,
    ) -> None:
        self.root, self.index, self.exclude, self.with_tree = root, index, exclude, with_tree
        self._out = index.path.with_name("snapshot.out")
        pathspec = ["--", ".", *(f":(exclude){p}" for p in exclude)]
        argv = ["sh", "-c", _SNAPSHOT_SCRIPT, "sh", commit, *pathspec]
        with self._out.open("wb") as out:
            self._git = StartedGit(root, argv, index.env, stdout=out, what="git's snapshot")

    def result(self) -> Snapshot:
        self._git.output()
        listing, marker, changed = (b"\0" + self._out.read_bytes()).partition(_MARKER)
        if not marker:
            raise WorkspaceError("git's snapshot ended without its listing")
        added = _parse_index(listing)
        files = {path: e for path, e in added.items() if not _under(path, self.exclude)}
        tree = None
        if self.with_tree:
            if len(files) != len(added):
                _remove_cached(self.root, self.exclude, self.index.env)
            tree = _write_tree(self.root, self.index.env)
        return Snapshot(files, bool(changed.strip(b"\0")), tree)


def _under(path: str, tops: Sequence[str]) -> bool:
    return any(path == top or path.startswith(top + "/") for top in tops)


def _parse_index(out: bytes) -> dict[str, TreeEntry]:
    """``git ls-files -s -z`` records: mode, blob, stage, then the path after a tab."""
    entries: dict[str, TreeEntry] = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, blob, _stage = meta.decode().split()
            entries[path.decode("utf-8", "surrogateescape")] = TreeEntry(mode, blob)
    return entries


def _remove_cached(root: Path, exclude: Sequence[str], env: Mapping[str, str]) -> None:
    git(root, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *exclude, env=env)


def _write_tree(root: Path, env: Mapping[str, str]) -> str:
    return git(root, "write-tree", env=env).decode().strip()


def _seed_index(root: Path, index: Path, real: Path | None = None) -> None:
    """Start the throwaway index from a copy of the real one: its stat data lets ``git add``
    skip re-hashing unchanged files. Only a copy is used, so the user's index is untouched."""
    try:
        if real is None:
            real = Path(git(root, "rev-parse", "--git-path", "index").decode().strip())
            real = real if real.is_absolute() else root / real
        shutil.copy2(real, index)  # keeps its mtime: git's racy-clean check depends on it
    except (OSError, WorkspaceError):
        index.unlink(missing_ok=True)
