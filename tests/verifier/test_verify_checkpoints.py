"""A checkpoint the tree raised is looked at again by the next verify of the work tree (issue
34, point 2): when its cause is gone it is withdrawn (a ``checkpoint_withdrawn`` record says
which and why) and nothing waits on it; one whose cause is still there stays pending, and a
person's decision stands. Real repositories, the real CLI, the commands it prints run in a
shell as printed.

The user's case: an untracked ``scratch.py`` with a syntax error (the reward rules cannot
parse it, so a person must look) in a repository whose contract sets no boundaries.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_loopcontract.history import History
from testing.hooks import checkpoint_ids, kinds
from testing.loop_project import STATE, fast_contract, make_repo
from testing.printed import printed_commands, run_printed
from testing.repos import CLIResult, git, run_cli

NAME = "Ada Lovelace"  # the repository's git user: the name a printed command carries
SCRATCH = "def f(:\n    pass\n"  # does not parse
BOUNDARIES = '\nboundaries:\n  allow: ["src/**"]\n'


def no_boundaries() -> str:
    """The fast contract without its boundaries: a new file anywhere is the agent's to add."""
    text = fast_contract()
    assert BOUNDARIES in text
    return text.replace(BOUNDARIES, "\n")


@pytest.fixture
def repo(tmp_path: Path, candidates: ModuleType) -> Path:
    """Baselined, the honest fix applied (the contract is met but for what a test adds)."""
    repo = make_repo(tmp_path, contract=no_boundaries())
    candidates.honest(repo)
    git(repo, "config", "user.name", NAME)
    return repo


def verify(repo: Path, *args: str) -> CLIResult:
    return run_cli(repo, "verify", *args)


def pending(repo: Path) -> list[str]:
    return [cp["id"] for cp in run_cli(repo, "checkpoint", "list", "--json").json()]


def every(repo: Path) -> dict[str, dict[str, Any]]:
    listed = run_cli(repo, "checkpoint", "list", "--all", "--json").json()
    return {cp["id"]: cp for cp in listed}


def withdrawn(repo: Path) -> list[dict[str, Any]]:
    return [r.data for r in kinds(repo, "checkpoint_withdrawn")]


def test_a_deleted_file_takes_its_checkpoint_with_it(repo: Path) -> None:
    scratch = repo / "scratch.py"
    scratch.write_text(SCRATCH, "utf-8")
    first = verify(repo)
    assert first.returncode == 24, first.stdout + first.stderr
    assert "scratch.py" in first.stdout and "could not parse" in first.stdout
    (cid,) = checkpoint_ids(first.stdout)
    assert pending(repo) == [cid]

    scratch.unlink()
    second = verify(repo)
    assert second.returncode == 0, second.stdout + second.stderr
    why = "scratch.py is no longer in the candidate's diff"
    assert f"checkpoint {cid} withdrawn: {why}" in second.stdout

    listed = run_cli(repo, "checkpoint", "list")
    assert listed.returncode == 0 and listed.stdout.strip() == "no pending checkpoints"
    assert pending(repo) == []
    entry = every(repo)[cid]
    assert (entry["status"], entry["withdrawn"]) == ("withdrawn", why)
    assert f"{cid} [withdrawn] diff:" in run_cli(repo, "checkpoint", "list", "--all").stdout
    assert withdrawn(repo) == [
        {"id": cid, "base": cid, "kind": "diff", "subject": "diff:scratch.py", "why": why}
    ]
    assert History(repo / STATE).read().ok
    assert run_cli(repo, "status", "--json").json()["checkpoints_pending"] == []

    # nothing waits for a decision any more, and the next verify has nothing to withdraw
    late = run_cli(repo, "checkpoint", "resolve", cid, "--by", NAME)
    assert late.returncode != 0 and f"checkpoint {cid} was withdrawn" in late.stderr
    assert verify(repo).returncode == 0
    assert len(withdrawn(repo)) == 1


def test_a_cause_still_there_stays_pending_and_a_changed_one_is_asked_anew(repo: Path) -> None:
    scratch = repo / "scratch.py"
    scratch.write_text(SCRATCH, "utf-8")
    assert verify(repo).returncode == 24
    (cid,) = pending(repo)
    again = verify(repo)
    assert again.returncode == 24 and cid in again.stdout
    assert pending(repo) == [cid]
    assert withdrawn(repo) == []

    scratch.write_text("x = 1\n\n" + SCRATCH, "utf-8")  # unparsable at another line
    third = verify(repo)
    assert third.returncode == 24, third.stdout + third.stderr
    (new,) = pending(repo)
    assert new != cid
    why = f"scratch.py changed; what it holds now is {new}"
    assert [(w["id"], w["why"]) for w in withdrawn(repo)] == [(cid, why)]
    assert f"checkpoint {cid} withdrawn: {why}" in third.stdout


def test_a_decision_a_person_made_stands_when_the_cause_is_gone(repo: Path) -> None:
    (repo / "scratch.py").write_text(SCRATCH, "utf-8")
    (repo / "notes.py").write_text(SCRATCH, "utf-8")
    first = verify(repo)
    assert first.returncode == 24, first.stdout + first.stderr
    subjects = {cp["subject"]: cp["id"] for cp in every(repo).values()}
    approve = subjects["diff:scratch.py"]
    refuse = subjects["diff:notes.py"]

    # the verdict's message carries the whole command, with this repository's git user
    commands = printed_commands(first.stdout)
    command = f'loop-contract checkpoint resolve {approve} --by "{NAME}"'
    assert command in commands, commands
    ran = run_printed(repo, command)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"{approve} approved by {NAME}" in ran.stdout
    denied = run_cli(repo, "checkpoint", "resolve", refuse, "--by", "bob", "--deny")
    assert denied.returncode == 0, denied.stderr

    (repo / "scratch.py").unlink()
    (repo / "notes.py").unlink()
    assert verify(repo).returncode == 0
    assert withdrawn(repo) == []
    decided = every(repo)
    assert (decided[approve]["status"], decided[approve]["by"]) == ("approved", NAME)
    assert (decided[refuse]["status"], decided[refuse]["by"]) == ("denied", "bob")


def test_a_cause_that_comes_back_asks_again_under_the_next_id(repo: Path) -> None:
    scratch = repo / "scratch.py"
    scratch.write_text(SCRATCH, "utf-8")
    assert verify(repo).returncode == 24
    (cid,) = pending(repo)
    scratch.unlink()
    assert verify(repo).returncode == 0

    scratch.write_text(SCRATCH, "utf-8")  # the same bytes again: a new question
    back = verify(repo)
    assert back.returncode == 24, back.stdout + back.stderr
    assert pending(repo) == [f"{cid}.2"]
    (command,) = printed_commands(back.stdout)
    assert command == f'loop-contract checkpoint resolve {cid}.2 --by "{NAME}"'
    ran = run_printed(repo, command)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert verify(repo).returncode == 0  # cleared: that content stands approved
    assert every(repo)[cid]["status"] == "withdrawn"


def test_a_verify_of_another_tree_leaves_the_work_trees_checkpoints(repo: Path) -> None:
    (repo / "scratch.py").write_text(SCRATCH, "utf-8")
    assert verify(repo).returncode == 24
    (cid,) = pending(repo)
    other = verify(repo, "--candidate", "HEAD")  # the base commit: no scratch.py in it
    assert other.returncode != 24, other.stdout + other.stderr
    assert "withdrawn" not in other.stdout
    assert pending(repo) == [cid]
    assert withdrawn(repo) == []
    (repo / "scratch.py").unlink()  # the work tree itself, verified: now it goes
    assert verify(repo).returncode == 0
    assert [w["id"] for w in withdrawn(repo)] == [cid]
