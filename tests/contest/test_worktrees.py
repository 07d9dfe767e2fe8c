"""Candidate worktrees: real git repositories, real worktrees, seats simulated by file edits and
git commands run in the worktree (what an agent would do)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.contest.worktrees import (
    CandidateError,
    Captured,
    Worktree,
    add_checkout,
    add_worktree,
    branch_name,
    capture_candidate,
    group_by_tree,
    prune,
    remove_checkout,
    remove_worktree,
)
from testing.repos import GIT_ENV, git, init_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root)
    (root / ".gitignore").write_text(".loop-contract/\n__pycache__/\n*.log\n")
    (root / "keep.txt").write_text("keep\n")
    (root / "edit.txt").write_text("old\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    return root


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def files_of(root: Path, rev: str) -> dict[str, str]:
    names = git(root, "ls-tree", "-r", "--name-only", rev).split()
    return {n: git(root, "show", f"{rev}:{n}") for n in names}


def add(root: Path, seat: str = "alpha", parent: Path | None = None) -> Worktree:
    return add_worktree(
        root,
        contract_id="demo",
        seat=seat,
        base_commit=head(root),
        parent=parent or root / ".loop-contract" / "worktrees" / "demo",
    )


def test_add_worktree_makes_a_fresh_worktree_on_the_seat_branch(repo: Path) -> None:
    base = head(repo)
    wt = add(repo)
    assert wt.seat == "alpha"
    assert wt.branch == "loop-contract/demo/alpha"
    assert wt.base_commit == base
    assert wt.path == (repo / ".loop-contract" / "worktrees" / "demo" / "alpha").resolve()
    assert (wt.path / "edit.txt").read_text() == "old\n"
    assert git(repo, "rev-parse", wt.branch).strip() == base
    assert git(wt.path, "symbolic-ref", "HEAD").strip() == f"refs/heads/{wt.branch}"


def test_capture_records_added_modified_deleted_and_untracked_files(repo: Path) -> None:
    base = head(repo)
    wt = add(repo)
    (wt.path / "edit.txt").write_text("new\n")
    (wt.path / "gone.txt").unlink()
    (wt.path / "pkg" / "new.py").write_text("y = 2\n")  # untracked, never staged
    (wt.path / "debug.log").write_text("ignored\n")  # ignored by .gitignore
    (wt.path / ".loop-contract").mkdir()
    (wt.path / ".loop-contract" / "state.json").write_text("{}")
    os.symlink("keep.txt", wt.path / "link")
    captured = capture_candidate(repo, wt, message="candidate of alpha")
    assert isinstance(captured, Captured)
    assert captured.changed_paths == ("edit.txt", "gone.txt", "link", "pkg/new.py")
    files = files_of(repo, captured.commit)
    assert files["edit.txt"] == "new\n"
    assert files["pkg/new.py"] == "y = 2\n"
    assert files["keep.txt"] == "keep\n"
    assert "gone.txt" not in files
    assert "debug.log" not in files
    assert not any(name.startswith(".loop-contract") for name in files)
    assert git(repo, "rev-parse", f"{captured.commit}^{{tree}}").strip() == captured.tree
    assert git(repo, "rev-list", "--parents", "-n1", captured.commit).split() == [
        captured.commit,
        base,
    ]
    assert git(repo, "rev-parse", wt.branch).strip() == captured.commit
    who = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", captured.commit).strip()
    assert (
        who
        == "loop-contract <loop-contract@localhost>|loop-contract <loop-contract@localhost>|"
        + ("candidate of alpha")
    )
    # the user's own checkout is untouched
    assert head(repo) == base
    assert git(repo, "status", "--porcelain").strip() == ""


def test_only_the_files_count_not_what_the_seat_did_to_git(repo: Path) -> None:
    base = head(repo)
    wt = add(repo)
    # the seat commits twice, branches off, switches branch, stages and unstages things
    (wt.path / "edit.txt").write_text("committed by the seat\n")
    git(wt.path, "commit", "-q", "-am", "seat commit 1")
    git(wt.path, "checkout", "-q", "-b", "seat-own-branch")
    (wt.path / "pkg" / "mod.py").write_text("x = 2\n")
    git(wt.path, "commit", "-q", "-am", "seat commit 2")
    (wt.path / "staged-then-deleted.txt").write_text("s\n")
    git(wt.path, "add", "staged-then-deleted.txt")
    (wt.path / "staged-then-deleted.txt").unlink()
    git(wt.path, "rm", "-q", "--cached", "keep.txt")  # still on disk
    (wt.path / "forced.log").write_text("ignored but force-added\n")
    git(wt.path, "add", "-f", "forced.log")
    captured = capture_candidate(repo, wt, message="m")
    files = files_of(repo, captured.commit)
    assert files["edit.txt"] == "committed by the seat\n"
    assert files["pkg/mod.py"] == "x = 2\n"
    assert files["keep.txt"] == "keep\n"
    assert "staged-then-deleted.txt" not in files
    assert "forced.log" not in files
    assert git(repo, "rev-parse", f"{captured.commit}^").strip() == base
    assert captured.changed_paths == ("edit.txt", "pkg/mod.py")


def test_no_git_hook_runs(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hooks = repo / ".git" / "hooks"
    for name in ("post-checkout", "reference-transaction", "pre-commit", "post-commit"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
        hook.chmod(0o755)
    wt = add(repo)
    (wt.path / "edit.txt").write_text("new\n")
    capture_candidate(repo, wt, message="m")
    remove_worktree(repo, wt)
    assert not marker.exists(), marker.read_text()


def test_a_seat_that_deleted_its_worktree_has_no_candidate(repo: Path) -> None:
    wt = add(repo)
    shutil.rmtree(wt.path)
    with pytest.raises(CandidateError, match="seat 'alpha' deleted its worktree"):
        capture_candidate(repo, wt, message="m")


def test_a_seat_that_unmade_its_worktree_has_no_candidate(repo: Path) -> None:
    wt = add(repo, "beta")
    (wt.path / ".git").unlink()
    with pytest.raises(CandidateError, match="no longer a worktree"):
        capture_candidate(repo, wt, message="m")
    # a repository of its own in place of the worktree does not count either
    git(wt.path, "init", "-q")
    with pytest.raises(CandidateError, match="no longer a worktree"):
        capture_candidate(repo, wt, message="m")
    # and a .git file pointing at another repository is caught too
    other = repo.parent / "other"
    other.mkdir()
    init_repo(other)
    shutil.rmtree(wt.path / ".git")
    (wt.path / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(CandidateError, match="no longer a worktree"):
        capture_candidate(repo, wt, message="m")


def test_rerun_on_an_existing_branch_resets_it(repo: Path) -> None:
    base = head(repo)
    first = add(repo)
    (first.path / "edit.txt").write_text("attempt one\n")
    (first.path / "leftover.txt").write_text("junk\n")
    captured = capture_candidate(repo, first, message="attempt 1")
    assert git(repo, "rev-parse", first.branch).strip() == captured.commit

    # the stale worktree is still there: a new attempt replaces it
    second = add(repo)
    assert second.path == first.path
    assert git(repo, "rev-parse", second.branch).strip() == base
    assert (second.path / "edit.txt").read_text() == "old\n"
    assert not (second.path / "leftover.txt").exists()

    # after a removal the branch is kept, and a third attempt resets it again
    (second.path / "edit.txt").write_text("attempt two\n")
    two = capture_candidate(repo, second, message="attempt 2")
    remove_worktree(repo, second)
    assert not second.path.exists()
    assert git(repo, "rev-parse", second.branch).strip() == two.commit
    third = add(repo)
    assert git(repo, "rev-parse", third.branch).strip() == base
    assert (third.path / "edit.txt").read_text() == "old\n"


def test_stale_directories_and_worktrees_elsewhere_are_cleared(repo: Path, tmp_path: Path) -> None:
    parent = tmp_path / "wts"
    stale = parent / "alpha"
    stale.mkdir(parents=True)
    (stale / "junk").mkdir()
    (stale / "junk" / "file").write_text("x")
    (stale / "junk").chmod(stat.S_IRUSR | stat.S_IXUSR)  # a seat made it read-only
    wt = add(repo, parent=parent)
    assert not (wt.path / "junk").exists()
    # the same branch checked out in a worktree under another parent (an earlier layout)
    moved = add(repo, parent=tmp_path / "elsewhere")
    assert not wt.path.exists()
    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(moved.path) in listed and str(wt.path) not in listed


def test_remove_and_prune(repo: Path) -> None:
    wt = add(repo)
    shutil.rmtree(wt.path)  # a worktree whose folder vanished is forgotten by prune
    assert str(wt.path) in git(repo, "worktree", "list", "--porcelain")
    prune(repo)
    assert str(wt.path) not in git(repo, "worktree", "list", "--porcelain")
    # removing an already removed worktree is fine
    remove_worktree(repo, wt)
    assert git(repo, "rev-parse", "--verify", wt.branch).strip() == wt.base_commit


def test_identical_trees_are_grouped(repo: Path) -> None:
    trees: dict[str, str | None] = {}
    for seat, content in (("alpha", "same\n"), ("beta", "other\n"), ("gamma", "same\n")):
        wt = add(repo, seat)
        (wt.path / "edit.txt").write_text(content)
        trees[seat] = capture_candidate(repo, wt, message=seat).tree
    trees["delta"] = None
    trees["epsilon"] = None
    assert trees["alpha"] == trees["gamma"] != trees["beta"]
    assert group_by_tree(trees) == [
        ("alpha", "gamma"),
        ("beta",),
        ("delta",),
        ("epsilon",),
    ]


def test_group_by_tree_is_deterministic() -> None:
    trees = {"c": "t1", "a": "t2", "b": "t1", "d": None, "e": "t2"}
    assert group_by_tree(trees) == [("a", "e"), ("b", "c"), ("d",)]
    assert group_by_tree(dict(reversed(list(trees.items())))) == group_by_tree(trees)
    assert group_by_tree({}) == []


def check_ref_format(name: str) -> bool:
    proc = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True)
    return proc.returncode == 0


@pytest.mark.parametrize(
    ("contract_id", "seat"),
    [
        ("demo", "alpha"),
        ("rolling.v2", "claude_sonnet-4.5"),
        ("a.", "b"),
        ("x", "y.lock"),
        ("x..y", "z"),
        ("demo", "alpha."),
        ("demo", ".hidden"),
        ("demo", "a b"),
        ("demo", "a~1"),
        ("demo", "a:b"),
        ("demo", "a@{1}"),
        ("demo", "a\\b"),
        ("demo", "a*"),
        ("demo", "a?"),
        ("demo", "a[b"),
        ("demo", "tab\tname"),
    ],
)
def test_branch_name_follows_git_check_ref_format(contract_id: str, seat: str) -> None:
    expected = f"loop-contract/{contract_id}/{seat}"
    if check_ref_format(expected):
        assert branch_name(contract_id, seat) == expected
    else:
        with pytest.raises(ValueError, match="not a valid git branch name"):
            branch_name(contract_id, seat)


@pytest.mark.parametrize(("contract_id", "seat"), [("demo", ""), ("", "a"), ("demo", "a/b")])
def test_branch_name_needs_single_components(contract_id: str, seat: str) -> None:
    with pytest.raises(ValueError, match="one non-empty name"):
        branch_name(contract_id, seat)


def test_branch_name_rejects_what_git_rejects(repo: Path) -> None:
    for seat in ("y.lock", "alpha.", ".hidden", "a b", "a..b"):
        with pytest.raises(ValueError):
            branch_name("demo", seat)
    with pytest.raises(ValueError):
        add_worktree(repo, contract_id="demo", seat="x.lock", base_commit="HEAD", parent=repo)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_the_state_folder_keeps_its_base_content(repo: Path) -> None:
    (repo / ".loop-contract").mkdir()
    (repo / ".loop-contract" / "pinned.txt").write_text("base\n")
    git(repo, "add", "-f", ".loop-contract/pinned.txt")
    git(repo, "commit", "-q", "-m", "tracked state")
    wt = add(repo)
    (wt.path / ".loop-contract" / "pinned.txt").write_text("seat\n")
    (wt.path / ".loop-contract" / "new.txt").write_text("seat\n")
    (wt.path / "edit.txt").write_text("new\n")
    captured = capture_candidate(repo, wt, message="m")
    files = files_of(repo, captured.commit)
    assert files[".loop-contract/pinned.txt"] == "base\n"
    assert ".loop-contract/new.txt" not in files
    assert captured.changed_paths == ("edit.txt",)


def test_a_seat_that_left_a_merge_conflict_is_captured_as_its_files(repo: Path) -> None:
    wt = add(repo)
    git(wt.path, "checkout", "-q", "-b", "side")
    (wt.path / "edit.txt").write_text("side\n")
    git(wt.path, "commit", "-q", "-am", "side")
    git(wt.path, "checkout", "-q", wt.branch)
    (wt.path / "edit.txt").write_text("main\n")
    git(wt.path, "commit", "-q", "-am", "main")
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", "merge", "side"], cwd=wt.path, env=env, capture_output=True)
    assert proc.returncode != 0  # a conflict: the seat's index has unmerged entries
    captured = capture_candidate(repo, wt, message="m")
    content = files_of(repo, captured.commit)["edit.txt"]
    assert "<<<<<<<" in content and "side" in content and "main" in content
    assert captured.changed_paths == ("edit.txt",)


def test_a_checkout_of_its_own_holds_the_base_commit_only(repo: Path, tmp_path: Path) -> None:
    """add_checkout (what a local contest gives each seat): a new repository outside the
    repository's folder, a depth-1 fetch of the base, so no other branch or later commit, and
    what the seat does to its own git never reaches the candidate."""
    base = head(repo)
    git(repo, "checkout", "-q", "-b", "loop-contract/c1/other")
    (repo / "later.txt").write_text("another seat's work\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-qm", "later")
    later = head(repo)
    git(repo, "checkout", "-q", "-")
    wt = add_checkout(repo, contract_id="c1", seat="alpha", base_commit=base,
                      parent=tmp_path / "seats")  # fmt: skip
    assert wt.own_repository and not wt.path.is_relative_to(repo)
    assert git(wt.path, "log", "--all", "--format=%H").split() == [base]
    assert git(wt.path, "for-each-ref").strip() == ""
    assert subprocess.run(["git", "cat-file", "-e", later], cwd=wt.path).returncode != 0
    assert git(repo, "for-each-ref", "refs/loop-contract/").strip() == ""  # hand-off ref gone
    (wt.path / "answer.txt").write_text("42\n")
    git(wt.path, "add", "answer.txt")
    git(wt.path, "commit", "-qm", "the seat's own commit, which does not count")
    (wt.path / "late.txt").write_text("left uncommitted\n")
    captured = capture_candidate(repo, wt, message="candidate")
    assert git(repo, "rev-parse", f"{captured.commit}^").strip() == base
    assert captured.changed_paths == ("answer.txt", "late.txt")
    assert git(repo, "rev-parse", wt.branch).strip() == captured.commit
    shutil.rmtree(wt.path / ".git")
    with pytest.raises(CandidateError, match="deleted its checkout"):
        capture_candidate(repo, wt, message="m")
    remove_checkout(wt)
    assert not wt.path.exists()
