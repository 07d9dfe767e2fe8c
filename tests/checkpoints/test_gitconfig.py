"""Git aliases a real repository defines: ``git ship`` is judged as the push it is.

The alias is written with real ``git config`` in one step and used in another, the way an agent
would split it over two tool calls; the scan only sees the second command.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_loopcontract.checkpoints.gitconfig import repo_git_aliases
from pytest_loopcontract.checkpoints.patterns import default_patterns
from pytest_loopcontract.checkpoints.scan import scan_command
from testing.repos import git, init_repo

PATTERNS = default_patterns()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the user's ~/.gitconfig stays out of the test
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (tmp_path / "repo").mkdir()
    return init_repo(tmp_path / "repo")


def ids(command: str, repo: Path) -> set[str]:
    return {m.pattern_id for m in scan_command(command, PATTERNS, workspace=repo)}


def test_an_alias_defined_in_an_earlier_call_is_read_as_a_push(repo: Path) -> None:
    assert ids("git ship origin feature", repo) == set()
    git(repo, "config", "alias.ship", "push")
    assert "git-push" in ids("git ship origin feature", repo)
    assert "git-push-protected" in ids("git ship origin main", repo)


def test_a_shell_alias_and_a_forcing_alias(repo: Path) -> None:
    git(repo, "config", "alias.yolo", "push --force")
    git(repo, "config", "alias.out", "!git push origin HEAD")
    assert "git-force-push" in ids("git yolo origin feature", repo)
    assert "git-push" in ids("git out", repo)


def test_the_users_global_alias_counts_too(repo: Path) -> None:
    git(repo, "config", "--global", "alias.pp", "push")
    assert "git-push" in ids("git pp origin feature", repo)


def test_benign_aliases_stay_benign(repo: Path) -> None:
    git(repo, "config", "alias.st", "status")
    git(repo, "config", "alias.save", "stash push")
    assert ids("git st", repo) == set()
    assert ids("git save -m wip", repo) == set()


def test_a_changed_alias_is_seen_at_once(repo: Path) -> None:
    git(repo, "config", "alias.go", "status")
    assert ids("git go", repo) == set()
    time.sleep(0.01)
    git(repo, "config", "alias.go", "push")
    config = repo / ".git" / "config"
    os.utime(config, ns=(time.time_ns(), time.time_ns()))
    assert "git-push" in ids("git go origin x", repo)


def test_no_repository_no_aliases(tmp_path: Path) -> None:
    assert repo_git_aliases(tmp_path) == {}
    assert repo_git_aliases(None) == {}


def test_explicit_aliases_override_the_lookup(repo: Path) -> None:
    git(repo, "config", "alias.ship", "push")
    found = scan_command("git ship origin x", PATTERNS, workspace=repo, git_aliases={})
    assert found == []
