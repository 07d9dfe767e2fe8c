"""The governed loop and the checkpoints the tree raised (issue 34, point 2): the loop does not
stop on a checkpoint whose cause is gone (it verifies the tree again before it waits on one),
and every command its stop messages print runs as printed. Real repositories, the real CLI,
scripted agents; the printed commands go through a shell.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_loopcontract.history import History
from testing.hooks import checkpoint_ids
from testing.loop_project import STATE, fast_contract, make_repo, write_agent
from testing.printed import printed_commands, run_printed
from testing.repos import ROOT, CLIResult, git, run_cli

SCRIPTED = ROOT / "examples" / "agents" / "scripted_agent.py"
NAME = "Ada Lovelace"  # the repository's git user: the name a printed command carries
SCRATCH = "def f(:\n    pass\n"  # does not parse: the reward rules ask a person
BOUNDARIES = '\nboundaries:\n  allow: ["src/**"]\n'
PLACEHOLDERS = ("--by NAME", "resolve ID", "[--deny]", "<your name>", "'loop --resume'")


def repo_without_boundaries(tmp_path: Path) -> Path:
    """The fast contract without boundaries (a new file anywhere is allowed), baselined."""
    text = fast_contract()
    assert BOUNDARIES in text
    repo = make_repo(tmp_path, contract=text.replace(BOUNDARIES, "\n"))
    git(repo, "config", "user.name", NAME)
    return repo


def loop(repo: Path, *args: str) -> CLIResult:
    return run_cli(repo, "loop", *args)


def records(repo: Path, kind: str) -> list[dict[str, Any]]:
    return [r.data for r in History(repo / STATE).read().records if r.kind == kind]


def pending(repo: Path) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = run_cli(repo, "checkpoint", "list", "--json").json()
    return listed


def assert_runnable(message: str) -> list[str]:
    """The commands ``message`` prints: no placeholder left, each one a whole command."""
    for placeholder in PLACEHOLDERS:
        assert placeholder not in message, (placeholder, message)
    commands = printed_commands(message)
    assert commands, message
    for command in commands:
        assert shlex.split(command)[0] == "loop-contract", command
    return commands


SCRATCHER = """
turn = turn_of(Path(sys.argv[1]).read_text())
fix()
if turn == 1:
    for name in sys.argv[2:]:
        Path(name).write_text("def f(:\\n    pass\\n")
"""


def scratcher(tmp_path: Path, *files: str) -> list[str]:
    """An agent that fixes the code and, on its first turn, leaves unparsable ``files``."""
    agent = write_agent(tmp_path, "scratcher", SCRATCHER)
    return [sys.executable, str(agent), "{prompt_file}", *files]


def test_a_checkpoint_withdrawn_by_verify_does_not_stop_the_loop(
    tmp_path: Path, candidates: ModuleType
) -> None:
    """The user's steps: verify waits on scratch.py (24); it is deleted; verify passes; the loop
    then runs instead of stopping at once on the old checkpoint."""
    repo = repo_without_boundaries(tmp_path)
    candidates.honest(repo)  # the work is done but for scratch.py
    scratch = repo / "scratch.py"
    scratch.write_text(SCRATCH, "utf-8")
    assert run_cli(repo, "verify").returncode == 24
    [raised] = pending(repo)
    scratch.unlink()
    assert run_cli(repo, "verify").returncode == 0
    assert pending(repo) == []

    ran = loop(repo, "--", sys.executable, str(SCRIPTED), "fix-on-turn-1", "{prompt_file}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "waiting on a person" not in ran.stdout
    assert [i["n"] for i in records(repo, "iteration")] == [1]
    assert [s["reason"] for s in records(repo, "stop")] == ["met"]
    assert [w["id"] for w in records(repo, "checkpoint_withdrawn")] == [raised["id"]]


def test_a_resume_after_the_file_is_deleted_goes_on(tmp_path: Path) -> None:
    """The loop stopped on scratch.py; a person deletes it and resumes with the command the
    stop printed, without a verify in between: the loop looks again, withdraws, goes on."""
    repo = repo_without_boundaries(tmp_path)
    first = loop(repo, "--", *scratcher(tmp_path, "scratch.py"))
    assert first.returncode == 24, first.stdout + first.stderr
    [raised] = pending(repo)
    cid = raised["id"]
    assert raised["subject"] == "diff:scratch.py"
    stopped = records(repo, "stop")[-1]["message"]
    assert cid in stopped and "scratch.py" in stopped
    assert f'loop-contract checkpoint resolve {cid} --by "{NAME}"' in assert_runnable(stopped)

    # while the file is there, a resume looks again and waits again, without an agent turn
    again = loop(repo, "--resume")
    assert again.returncode == 24, again.stdout + again.stderr
    assert [i["n"] for i in records(repo, "iteration")] == [1]
    assert records(repo, "checkpoint_withdrawn") == []
    waiting = records(repo, "stop")[-1]["message"]
    assert f"{cid}: scratch.py: " in waiting
    commands = assert_runnable(waiting)
    approve = f'loop-contract checkpoint resolve {cid} --by "{NAME}"'
    assert commands == [approve, f"{approve} --deny", "loop-contract loop --resume"]

    (repo / "scratch.py").unlink()
    resumed = run_printed(repo, commands[-1])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    why = "scratch.py is no longer in the candidate's diff"
    assert f"[loop] checkpoint {cid} withdrawn: {why}" in resumed.stdout
    assert [(w["id"], w["why"]) for w in records(repo, "checkpoint_withdrawn")] == [(cid, why)]
    assert [i["n"] for i in records(repo, "iteration")] == [1, 2]
    assert records(repo, "stop")[-1]["reason"] == "met"
    assert pending(repo) == []
    assert History(repo / STATE).read().ok


def test_the_stop_messages_commands_run_as_printed(tmp_path: Path) -> None:
    """Two files wait; the person approves one and refuses the other with the commands the
    stop message printed, then resumes with the printed command; the decisions stand."""
    repo = repo_without_boundaries(tmp_path)
    first = loop(repo, "--", *scratcher(tmp_path, "scratch.py", "notes.py"))
    assert first.returncode == 24, first.stdout + first.stderr
    ids = {cp["subject"]: cp["id"] for cp in pending(repo)}
    keep, refuse = ids["diff:scratch.py"], ids["diff:notes.py"]
    assert loop(repo, "--resume").returncode == 24  # both still there: the loop waits
    message = records(repo, "stop")[-1]["message"]
    assert message in run_cli(repo, "loop", "--resume").stdout  # as the person saw it
    commands = assert_runnable(message)
    approve = f'loop-contract checkpoint resolve {keep} --by "{NAME}"'
    deny = f'loop-contract checkpoint resolve {refuse} --by "{NAME}" --deny'
    assert approve in commands and deny in commands
    assert commands[-1] == "loop-contract loop --resume"

    for command, said in ((approve, "approved"), (deny, "denied")):
        ran = run_printed(repo, command)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert f"{said} by {NAME}" in ran.stdout
    (repo / "notes.py").unlink()  # the refused file goes; scratch.py stays, approved
    resumed = run_printed(repo, commands[-1])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{refuse} DENIED by {NAME}" in (repo / STATE / "prompt.md").read_text("utf-8")
    assert records(repo, "stop")[-1]["reason"] == "met"
    assert records(repo, "checkpoint_withdrawn") == []  # decided: nothing to withdraw

    (repo / "scratch.py").unlink()
    assert run_cli(repo, "verify").returncode == 0
    every = run_cli(repo, "checkpoint", "list", "--all", "--json").json()
    assert {cp["id"]: cp["status"] for cp in every} == {keep: "approved", refuse: "denied"}
    assert records(repo, "checkpoint_withdrawn") == []


def test_a_stop_rule_whose_path_is_restored_is_withdrawn(tmp_path: Path) -> None:
    """A touched ``stop_when`` path waits for a person; restored to its baseline bytes, the
    resumed loop withdraws the request and goes on (touching it again asks anew)."""
    repo = make_repo(tmp_path, extra='stop_when: {paths_touched: ["src/textkit/slug.py"]}\n')
    git(repo, "config", "user.name", NAME)
    slug = repo / "src" / "textkit" / "slug.py"
    original = slug.read_bytes()
    first = loop(repo, "--", sys.executable, str(SCRIPTED), "fix-on-turn-2", "{prompt_file}")
    assert first.returncode == 24, first.stdout + first.stderr
    [request] = pending(repo)
    assert request["kind"] == "stop_rule"

    slug.write_bytes(original)  # a person puts the guarded file back
    resumed = loop(repo, "--resume")
    assert resumed.returncode == 24, resumed.stdout + resumed.stderr
    why = "the candidate's diff no longer touches src/textkit/slug.py"
    assert f"[loop] checkpoint {request['id']} withdrawn: {why}" in resumed.stdout
    assert [i["n"] for i in records(repo, "iteration")] == [1, 2]  # it went on: turn 2
    [again] = pending(repo)  # turn 2's fix touches the path again: a new question
    assert again["id"] == f"{request['id']}.2"
    assert checkpoint_ids(records(repo, "stop")[-1]["message"]) == [again["id"]]
