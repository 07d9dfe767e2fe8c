"""The candidate's "dirty" flag from objects alone (``tree_differs``, and the in-process
snapshot's ``differs``) says what a work-tree scan (``is_dirty``) says, for every kind of change
a work tree can hold; the snapshot listed from its index is the tree written from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_loopcontract.verifier.snapshot import (
    PendingSnapshot,
    ThrowawayIndex,
    snapshot_worktree,
)
from pytest_loopcontract.workspace import (
    WorkspaceError,
    find_repo,
    is_dirty,
    list_tree,
    repo_head,
    resolve_commit,
    tree_differs,
)
from testing.repos import git, init_repo


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "core.py").write_text("VALUE = 1\n", "utf-8")
    root = init_repo(tmp_path)
    (root / ".gitignore").write_text(".loop-contract/\n*.log\n", "utf-8")
    git(root, "commit", "-qam", "ignore logs")
    return root


def _modify(root: Path) -> None:
    (root / "core.py").write_text("VALUE = 2\n", "utf-8")


def _add_untracked(root: Path) -> None:
    (root / "new.py").write_text("NEW = 1\n", "utf-8")


def _delete(root: Path) -> None:
    (root / "core.py").unlink()


def _add_ignored(root: Path) -> None:
    (root / "run.log").write_text("noise\n", "utf-8")


def _add_odd_names(root: Path) -> None:
    """Names the listing's parser must take as they are: a tab, a newline, non-ASCII."""
    for name in ("tab\there.py", "new\nline.py", "Ærøskøbing.py", "end-of-listing"):
        (root / name).write_text("X = 1\n", "utf-8")


def _touch_state_folder(root: Path) -> None:
    (root / ".loop-contract").mkdir(exist_ok=True)
    (root / ".loop-contract" / "verdict.json").write_text("{}", "utf-8")


@pytest.mark.parametrize(
    ("change", "dirty"),
    [
        (lambda root: None, False),
        (_modify, True),
        (_add_untracked, True),
        (_delete, True),
        (_add_ignored, False),
        (_touch_state_folder, False),
    ],
    ids=["clean", "modified", "untracked", "deleted", "ignored", "state-folder"],
)
def test_tree_differs_answers_as_the_work_tree_scan(
    tmp_path: Path, change: Callable[[Path], None], dirty: bool
) -> None:
    root = _repo(tmp_path)
    change(root)
    tree = snapshot_worktree(root)
    commit = resolve_commit(root, "HEAD")
    assert tree_differs(root, commit, tree) is dirty
    with ThrowawayIndex(root) as index:
        assert PendingSnapshot(root, commit, index).result().differs is dirty
    assert is_dirty(root) is dirty


def _unignore_state_folder(root: Path) -> None:
    (root / ".gitignore").write_text("*.log\n", "utf-8")
    _touch_state_folder(root)


def _commit_state_folder(root: Path) -> None:
    _touch_state_folder(root)
    git(root, "add", "-f", ".loop-contract/verdict.json")
    git(root, "commit", "-qm", "a state file committed")
    (root / ".loop-contract" / "verdict.json").write_text('{"changed": true}', "utf-8")


@pytest.mark.parametrize(
    "change",
    [
        _modify,
        _add_untracked,
        _delete,
        _touch_state_folder,
        _unignore_state_folder,
        _commit_state_folder,
        _add_odd_names,
    ],
    ids=["modified", "untracked", "deleted", "state-folder", "unignored", "committed", "names"],
)
@pytest.mark.parametrize("with_tree", [False, True], ids=["listed", "written"])
def test_the_pending_snapshot_lists_what_the_written_snapshot_holds(
    tmp_path: Path, change: Callable[[Path], None], with_tree: bool
) -> None:
    """Listed from a throwaway index (no tree written unless asked), the snapshot's files
    are the written snapshot's, without the state folder, whether the folder is ignored, not
    ignored, or committed; asked for, its tree is :func:`snapshot_worktree`'s."""
    root = _repo(tmp_path)
    change(root)
    with ThrowawayIndex(root) as index:
        commit = resolve_commit(root, "HEAD")
        snapshot = PendingSnapshot(root, commit, index, with_tree=with_tree).result()
    assert snapshot.files == list_tree(root, snapshot_worktree(root))
    assert snapshot.tree == (snapshot_worktree(root) if with_tree else None)
    assert not any(path.startswith(".loop-contract") for path in snapshot.files)


@pytest.mark.parametrize("where", [".", "sub/deeper"])
def test_repo_head_answers_what_three_calls_answer(tmp_path: Path, where: str) -> None:
    root = _repo(tmp_path)
    start = root / where
    start.mkdir(parents=True, exist_ok=True)
    head = repo_head(start)
    assert head.root == find_repo(start)
    assert head.commit == resolve_commit(root, "HEAD")
    assert head.index_file.resolve() == (root / ".git" / "index").resolve()
    _modify(root)
    assert snapshot_worktree(root, real_index=head.index_file) == snapshot_worktree(root)


def test_repo_head_before_the_first_commit_has_no_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    head = repo_head(tmp_path)
    assert (head.root, head.commit) == (tmp_path.resolve(), None)


def test_repo_head_outside_a_repository_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="run 'git init'"):
        repo_head(tmp_path)


def test_an_index_copied_before_the_changes_snapshots_them(tmp_path: Path) -> None:
    """The in-process verdict copies the index while the tests are collected: what they
    change afterwards, even within the second the copy was made, is in the snapshot."""
    root = _repo(tmp_path)
    commit = resolve_commit(root, "HEAD")
    with ThrowawayIndex(root) as index:
        _modify(root)
        _add_untracked(root)
        snapshot = PendingSnapshot(root, commit, index).result()
    assert snapshot.differs
    assert snapshot.files == list_tree(root, snapshot_worktree(root))
    assert index.path.parent.exists() is False
