"""The candidate as ``verify`` sees it: its tree in git objects and its diff from the baseline.

The working tree is snapshotted into git objects first, so what is judged cannot change under
the run: every later step reads blobs, never the candidate's files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.snapshot import snapshot_worktree
from pytest_loopcontract.workspace import (
    TreeEntry,
    changed_paths,
    diff_text,
    list_tree_sized,
    resolve_commit,
    tree_differs,
    tree_of,
)

__all__ = ["Candidate", "read_candidate"]


@dataclass(frozen=True)
class Candidate:
    """The tree under verification and what it changed against the baseline's tree."""

    tree: str
    commit: str
    dirty: bool
    files: dict[str, TreeEntry]
    size: int  # bytes in the tree's blobs: decides where its scratch copies go
    changed: list[tuple[str, str]]
    patch: str


def read_candidate(root: Path, baseline: BaselineRecord, candidate_ref: str | None) -> Candidate:
    """The working tree (snapshotted into git objects) or the named commit, with its diff."""
    if candidate_ref is None:
        tree = snapshot_worktree(root)
        commit = resolve_commit(root, "HEAD")
        dirty = tree_differs(root, commit, tree)
    else:
        commit, dirty = resolve_commit(root, candidate_ref), False
        tree = tree_of(root, commit)
    files, size = list_tree_sized(root, tree)
    return Candidate(
        tree=tree,
        commit=commit,
        dirty=dirty,
        files=files,
        size=size,
        changed=changed_paths(root, baseline.tree, tree),
        patch=diff_text(root, baseline.tree, tree),
    )
