"""Clearance in the history (issue 34, point 2): a pending request the tree raised is withdrawn
when its cause is gone, a decided one and an agent's request never are; and the resolve command
every message prints is one whole command, with a real name. A real history file, real git,
the printed commands run by a shell."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.clearance import (
    Clearance,
    ClearanceError,
    person_name,
    resolve_command,
)
from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.state import reduce
from testing.printed import run_printed
from testing.repos import git

STATE = ".loop-contract"


def unparsable(path: str = "scratch.py") -> Match:
    return Match("reward_rules_not_run", "reward", "a file the rules could not parse", "", path, 1)


def ask(history: History, path: str = "scratch.py") -> Clearance:
    return clearance.request(
        history, f"diff:{path}", [unparsable(path)], kind="diff", standing=True
    )


def test_a_withdrawn_request_is_no_longer_pending_and_says_why(tmp_path: Path) -> None:
    history = History(tmp_path / STATE)
    asked = ask(history)
    assert asked.status == "pending"
    assert clearance.withdraw(history, "diff", lambda raised, records: None) == []  # kept

    gone = clearance.withdraw(history, "diff", lambda raised, records: "scratch.py is gone")
    assert [r.kind for r in gone] == ["checkpoint_withdrawn"]
    assert gone[0].data == {
        "id": asked.id,
        "base": asked.id,
        "kind": "diff",
        "subject": "diff:scratch.py",
        "why": "scratch.py is gone",
    }
    records = history.read().records
    assert clearance.status_of(records, asked.id) == Clearance(
        asked.id, "withdrawn", message="scratch.py is gone"
    )
    assert clearance.pending(records) == []
    state = reduce(records)
    entry = state["checkpoints"][asked.id]
    assert (entry["status"], entry["withdrawn"]) == ("withdrawn", "scratch.py is gone")
    assert state["anomalies"] == []
    with pytest.raises(ClearanceError, match=f"{asked.id} was withdrawn .scratch.py is gone"):
        clearance.resolve(history, asked.id, by="ada")
    assert clearance.withdraw(history, "diff", lambda raised, records: "again") == []

    # the same cause again is a new question, under the next generation's id
    again = ask(history)
    assert (again.id, again.status) == (f"{asked.id}.2", "pending")
    assert clearance.latest_id(history.read().records, asked.id) == again.id
    clearance.resolve(history, again.id, by="ada")
    assert ask(history).status == "cleared"  # the approval stands for it


def test_decided_requests_and_an_agents_requests_are_never_withdrawn(tmp_path: Path) -> None:
    history = History(tmp_path / STATE)
    approved, denied = ask(history, "a.py"), ask(history, "b.py")
    clearance.resolve(history, approved.id, by="ada")
    clearance.resolve(history, denied.id, by="bob", deny=True)
    command = clearance.request(history, "git push", [unparsable("")], kind="command")
    with pytest.raises(ValueError, match="kind 'command'"):
        clearance.withdraw(history, "command", lambda raised, records: "gone")
    assert clearance.withdraw(history, "diff", lambda raised, records: "gone") == []
    records = history.read().records
    assert clearance.status_of(records, approved.id) == Clearance(
        approved.id, "cleared", "ada", "cleared by ada"
    )
    assert clearance.status_of(records, denied.id) == Clearance(
        denied.id, "denied", "bob", "denied by bob"
    )
    assert [r.data["id"] for r in clearance.pending(records)] == [command.id]


def test_nothing_to_withdraw_writes_nothing(tmp_path: Path) -> None:
    history = History(tmp_path / STATE)
    assert clearance.withdraw(history, "harness", lambda raised, records: "gone") == []
    assert not history.path.exists()


def test_the_reducer_keeps_a_decision_over_a_late_withdrawal(tmp_path: Path) -> None:
    history = History(tmp_path / STATE)
    asked = ask(history)
    clearance.resolve(history, asked.id, by="ada")
    history.append("checkpoint_withdrawn", {"id": asked.id, "why": "written by hand"})
    history.append("checkpoint_withdrawn", {"id": "cp-0000000000", "why": "never raised"})
    state = reduce(history.read().records)
    assert state["checkpoints"][asked.id]["status"] == "approved"
    assert "cp-0000000000" not in state["checkpoints"]
    assert len(state["anomalies"]) == 2


@pytest.mark.parametrize(
    "name", ["alice", "Ada Lovelace", "O'Brien", 'say "hi"', "$HOME and `id`", "back\\slash"]
)
def test_the_printed_command_records_exactly_the_name_it_shows(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    history = History(repo / STATE)
    asked = ask(history)
    command = resolve_command(asked.id, name)
    argv = ["loop-contract", "checkpoint", "resolve", asked.id, "--by", name]
    assert shlex.split(command) == argv
    ran = run_printed(repo, command)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [decision] = [r.data for r in history.read().records if r.kind == "checkpoint_resolved"]
    assert (decision["by"], decision["decision"]) == (name, "approve")
    assert resolve_command(asked.id, name, deny=True) == command + " --deny"


def test_with_no_name_known_the_command_says_so() -> None:
    assert resolve_command("cp-0123456789", "  ") == (
        'loop-contract checkpoint resolve cp-0123456789 --by "<your name>"'
    )


def test_the_name_is_the_repositorys_git_user_else_the_login_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-such-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for variable in ("LOGNAME", "USER"):
        monkeypatch.setenv(variable, "grace")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    assert person_name(repo) == "grace"  # no git user anywhere: the login name
    git(repo, "config", "user.name", "Ada Lovelace")
    assert person_name(repo) == "Ada Lovelace"
    assert person_name(tmp_path / "gone") == "grace"  # no such folder: the login name
