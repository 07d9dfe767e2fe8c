"""The Claude Code hooks, end to end: installed settings, the commands run through the shell
the way Claude Code runs them, and the answers read with Claude Code's rules (exit 2 or a JSON
decision blocks; anything else lets the action through).

Real repositories, the real command line in subprocesses, real state files broken for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_loopcontract.loop.cli_hooks import DIALECTS
from pytest_loopcontract.loop.state import reduce
from testing.hooks import (
    STATE,
    bash,
    checkpoint_ids,
    commit_all,
    installed_command,
    kinds,
    payload,
    records,
    resolve,
    run_hook,
    run_installed,
    stop,
    write,
)
from testing.repos import CLIResult, assert_valid_verdict, git, run_cli

BARE_PATH = "/usr/bin:/bin"  # no virtualenv, no loop-contract


def _install_claude(repo: Path) -> CLIResult:
    return run_cli(repo, "hook", "install", "claude-code")


def _installed(repo: Path) -> tuple[str, str]:
    result = _install_claude(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    return installed_command(repo, "PreToolUse"), installed_command(repo, "Stop")


def _bare_env() -> dict[str, str]:
    assert shutil.which("loop-contract", path=BARE_PATH) is None
    return {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/tmp")}


def blocks(result: subprocess.CompletedProcess[str], event: str) -> bool:
    """Claude Code's reading of a hook's answer: does it block the call / the stop?"""
    if result.returncode == 2:
        return True
    if result.returncode != 0 or not result.stdout.strip():
        return False
    answer = json.loads(result.stdout)
    if event == "PreToolUse":
        return bool(answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny")
    return bool(answer.get("decision") == "block")


def _commands(groups: list[dict[str, Any]]) -> list[str]:
    return [h["command"] for g in groups for h in g["hooks"]]


# --------------------------------------------------------------------------- install


def test_install_writes_readable_settings_with_this_interpreter(example_repo: Path) -> None:
    result = _install_claude(example_repo)
    assert result.returncode == 0, result.stderr
    text = (example_repo / ".claude/settings.json").read_text("utf-8")
    assert text.startswith('{\n  "hooks"')  # indented, for people to read
    settings = json.loads(text)
    (pre,) = settings["hooks"]["PreToolUse"]
    matcher = DIALECTS["claude-code"].matcher
    assert pre["matcher"] == matcher == "Bash|Write|Edit|MultiEdit|NotebookEdit"
    (stop_group,) = settings["hooks"]["Stop"]
    for handler in (*pre["hooks"], *stop_group["hooks"]):
        assert handler["type"] == "command"
        assert f"{sys.executable} -m pytest_loopcontract hook run" in handler["command"]
        assert isinstance(handler["timeout"], int)
    # the contract caps at 5 iterations; Claude Code's own block cap is not below it
    assert int(settings["env"]["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"]) >= 5


def test_install_merges_into_existing_settings_and_is_idempotent(example_repo: Path) -> None:
    path = example_repo / ".claude" / "settings.json"
    path.parent.mkdir()
    old_ours = "loop-contract hook run claude-stop"  # what an older install wrote
    theirs: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"]},
        "env": {"FOO": "1"},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt-check"}]},
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "audit-bash", "timeout": 5}],
                },
            ],
            "Stop": [
                {"hooks": [{"type": "command", "command": "notify-send done"}]},
                {"hooks": [{"type": "command", "command": old_ours}]},
            ],
            "PostToolUse": [
                {"matcher": "Write", "hooks": [{"type": "command", "command": "ruff format"}]}
            ],
        },
    }
    path.write_text(json.dumps(theirs), "utf-8")

    result = _install_claude(example_repo)
    assert result.returncode == 0, result.stderr
    merged = json.loads(path.read_text("utf-8"))
    for key in ("model", "permissions"):
        assert merged[key] == theirs[key]
    assert merged["env"]["FOO"] == "1"
    assert merged["hooks"]["PostToolUse"] == theirs["hooks"]["PostToolUse"]
    pre, stops = merged["hooks"]["PreToolUse"], merged["hooks"]["Stop"]
    assert pre[:2] == theirs["hooks"]["PreToolUse"]
    assert stops[0] == theirs["hooks"]["Stop"][0]
    # the old bare command was replaced in place, not kept beside the new one
    assert old_ours not in _commands(stops)
    assert len(stops) == 2 and len(pre) == 3
    assert installed_command(example_repo, "Stop") in _commands(stops)

    again = _install_claude(example_repo)
    assert again.returncode == 0, again.stderr
    assert json.loads(path.read_text("utf-8")) == merged


def test_install_moves_our_entry_out_of_a_users_group(example_repo: Path) -> None:
    path = example_repo / ".claude" / "settings.json"
    path.parent.mkdir()
    old_ours = {"type": "command", "command": "loop-contract hook run claude-pre-tool-use"}
    audit = {"type": "command", "command": "audit-bash"}
    path.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [audit, old_ours]}]}}),
        "utf-8",
    )
    assert _install_claude(example_repo).returncode == 0
    theirs, ours = json.loads(path.read_text("utf-8"))["hooks"]["PreToolUse"]
    assert theirs == {"matcher": "Bash", "hooks": [audit]}  # their matcher still covers theirs
    assert ours["matcher"] == DIALECTS["claude-code"].matcher
    assert _commands([ours]) == [installed_command(example_repo, "PreToolUse")]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_install_refuses_a_broken_settings_file(example_repo: Path, content: str) -> None:
    path = example_repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content, "utf-8")
    result = _install_claude(example_repo)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "settings.json" in result.stderr and "JSON" in result.stderr
    assert path.read_text("utf-8") == content  # left exactly as it was


def test_installed_hooks_leave_the_tree_ready_for_a_baseline(example_repo: Path) -> None:
    for target in ("claude-code", "pre-push"):
        result = run_cli(example_repo, "hook", "install", target)
        assert result.returncode == 0, result.stderr
    baseline = run_cli(example_repo, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert (example_repo / STATE / "baseline.json").exists()


# --------------------------------------------------------------------------- fail closed


def test_installed_command_blocks_without_loop_contract_on_path(baselined_repo: Path) -> None:
    repo = baselined_repo
    pre, stop_command = _installed(repo)
    env = _bare_env()

    # the cheat an older install fell for: a bare command is "not found" (127), which Claude
    # Code reads as "go ahead"
    bare = run_installed(repo, "loop-contract hook run claude-pre-tool-use", "{}", env=env)
    assert bare.returncode == 127 and not blocks(bare, "PreToolUse")

    stopped = run_installed(repo, stop_command, stop(repo), env=env)
    assert blocks(stopped, "Stop"), stopped.stderr
    assert "hard_gate_failed" in json.loads(stopped.stdout)["reason"]

    denied = run_installed(repo, pre, bash(repo, "git push --force origin main"), env=env)
    assert blocks(denied, "PreToolUse"), denied.stderr
    assert checkpoint_ids(denied.stdout)
    allowed = run_installed(repo, pre, bash(repo, "ls"), env=env)
    assert allowed.returncode == 0 and not blocks(allowed, "PreToolUse"), allowed.stderr


def test_a_missing_interpreter_blocks(baselined_repo: Path) -> None:
    pre, stop_command = _installed(baselined_repo)
    gone = str(baselined_repo / "deleted-venv" / "bin" / "python")
    for command, event, stdin in (
        (pre, "PreToolUse", bash(baselined_repo, "ls")),
        (stop_command, "Stop", stop(baselined_repo)),
    ):
        result = run_installed(baselined_repo, command.replace(sys.executable, gone, 1), stdin)
        assert result.returncode == 2, result.stderr
        assert blocks(result, event)
        assert "could not run (exit 127)" in result.stderr


def test_a_corrupt_state_file_blocks(baselined_repo: Path) -> None:
    repo = baselined_repo
    pre, stop_command = _installed(repo)
    (repo / STATE / "baseline.json").write_text('{"commit": "abc", "pins": ', "utf-8")
    target = str(repo / "src" / "textkit" / "slug.py")
    for command, event, stdin in (
        (stop_command, "Stop", stop(repo)),
        (pre, "PreToolUse", bash(repo, "git status")),
        (pre, "PreToolUse", write(repo, "Write", target)),
    ):
        result = run_installed(repo, command, stdin)
        assert result.returncode == 2, (event, result.stdout, result.stderr)
        assert "baseline.json" in result.stderr
        assert "Traceback" not in result.stderr


def test_a_crash_blocks(baselined_repo: Path) -> None:
    """The history is a folder: reading it raises IsADirectoryError, a bug-shaped crash."""
    repo = baselined_repo
    pre, stop_command = _installed(repo)
    history = repo / STATE / "history.jsonl"
    if history.exists():
        history.unlink()
    history.mkdir()
    for command, event, stdin in (
        (stop_command, "Stop", stop(repo)),
        (pre, "PreToolUse", bash(repo, "git push --force origin main")),
    ):
        result = run_installed(repo, command, stdin)
        assert result.returncode == 2, (event, result.stdout, result.stderr)
        assert "IsADirectoryError" in result.stderr
        assert "fails closed" in result.stderr


def test_a_hook_that_runs_past_its_deadline_blocks(baselined_repo: Path) -> None:
    _, stop_command = _installed(baselined_repo)
    env = {**os.environ, "LOOP_CONTRACT_HOOK_DEADLINE": "0.5"}
    result = run_installed(baselined_repo, stop_command, stop(baselined_repo), env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "did not finish within 0.5s" in result.stderr


@pytest.mark.parametrize("stdin", ["ls -la", "[1, 2]", '"Bash"'])
def test_malformed_input_blocks_clearly(example_repo: Path, stdin: str) -> None:
    for event in ("claude-pre-tool-use", "claude-stop"):
        result = run_hook(example_repo, event, stdin)
        assert result.returncode == 2
        assert result.stdout == ""
        assert "Traceback" not in result.stderr
        assert "loop-contract" in result.stderr and "JSON" in result.stderr


def test_hook_run_outside_a_repository_blocks(tmp_path: Path) -> None:
    result = run_hook(tmp_path, "claude-stop", stop(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "git" in result.stderr


# --------------------------------------------------------------------------- PreToolUse


def _decision(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    output: dict[str, Any] = json.loads(result.stdout)["hookSpecificOutput"]
    return output


def test_pre_tool_use_denies_a_force_push_until_cleared_once(baselined_repo: Path) -> None:
    repo = baselined_repo
    command = "git push --force origin main"

    denied = _decision(run_hook(repo, "claude-pre-tool-use", bash(repo, command)))
    assert denied["hookEventName"] == "PreToolUse"
    assert denied["permissionDecision"] == "deny"
    reason = denied["permissionDecisionReason"]
    (cid,) = checkpoint_ids(reason)
    assert f"checkpoint resolve {cid}" in reason
    assert "force push" in reason.lower()

    again = _decision(run_hook(repo, "claude-pre-tool-use", bash(repo, command)))
    assert checkpoint_ids(again["permissionDecisionReason"]) == [cid]  # same pending request

    resolve(repo, cid, "dave")
    allowed = run_hook(repo, "claude-pre-tool-use", bash(repo, command))
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout == ""  # no deny: Claude Code's own permission rules decide

    next_time = _decision(run_hook(repo, "claude-pre-tool-use", bash(repo, command)))
    assert checkpoint_ids(next_time["permissionDecisionReason"]) == [f"{cid}.2"]  # single use


def test_pre_tool_use_sees_through_shell_wrappers(example_repo: Path) -> None:
    command = "bash -c 'cd . && git push origin HEAD:main'"
    denied = _decision(run_hook(example_repo, "claude-pre-tool-use", bash(example_repo, command)))
    assert denied["permissionDecision"] == "deny"
    assert checkpoint_ids(denied["permissionDecisionReason"])


def test_pre_tool_use_lets_harmless_calls_through(example_repo: Path) -> None:
    repo = example_repo
    for stdin in (
        bash(repo, "ls"),
        bash(repo, "python -m pytest -q"),
        write(repo, "Write", "x.sh"),  # a new script whose text mentions a push is just text
        write(repo, "Write", str(repo / "src" / "textkit" / "new.py")),
        payload(repo, "PreToolUse", tool_name="Read", tool_input={"file_path": "tests/a.py"}),
        payload(repo, "PreToolUse", tool_name="Bash", tool_input="git push --force origin main"),
        payload(repo, "PreToolUse", tool_name="Bash", tool_input={"description": "no command"}),
    ):
        result = run_hook(repo, "claude-pre-tool-use", stdin)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "", stdin
    assert not kinds(repo, "checkpoint_raised")


def test_pre_tool_use_denies_writing_a_pinned_path_before_it_happens(
    baselined_repo: Path, tmp_path: Path
) -> None:
    repo = baselined_repo
    (repo / "src" / "textkit" / "link.py").symlink_to(repo / "tests" / "test_slug.py")
    denied = {
        ("Write", str(repo / "tests" / "test_slug.py")): "tests/test_slug.py is pinned",
        ("Edit", str(repo / "loopcontract.yml")): "loopcontract.yml is the contract",
        ("MultiEdit", str(repo / "conftest.py")): "conftest.py matches a protected glob",
        ("Edit", str(repo / "src" / "textkit" / "link.py")): "tests/test_slug.py is pinned",
        ("NotebookEdit", str(repo / ".claude" / "settings.json")): ".claude/settings.json is a",
        ("Write", str(repo / ".git" / "hooks" / "pre-push")): ".git/hooks/pre-push is a harness",
        ("Write", str(repo / ".git" / "config")): "inside git's own folder",
        ("Write", str(repo / STATE / "baseline.json")): "inside the loop's state folder",
    }
    before = (repo / "tests" / "test_slug.py").read_bytes()
    for (tool, target), why in denied.items():
        answer = _decision(run_hook(repo, "claude-pre-tool-use", write(repo, tool, target)))
        assert answer["permissionDecision"] == "deny", (tool, target)
        assert target in answer["permissionDecisionReason"]
        assert why in answer["permissionDecisionReason"], answer["permissionDecisionReason"]
    assert (repo / "tests" / "test_slug.py").read_bytes() == before
    # the honest look-alikes: the code under test, a new module, a file outside the repository
    for target in (
        str(repo / "src" / "textkit" / "slug.py"),
        str(repo / "src" / "textkit" / "tests_helper.py"),
        str(tmp_path / "notes.txt"),
    ):
        result = run_hook(repo, "claude-pre-tool-use", write(repo, "Edit", target))
        assert result.returncode == 0 and result.stdout == "", (target, result.stdout)


def test_codex_and_gemini_writes_are_guarded_in_their_own_words(baselined_repo: Path) -> None:
    """Codex's apply_patch names its files inside the patch; Gemini's tools take file_path.
    Both get the blocking form they read: exit 2, the reason on stderr."""
    repo = baselined_repo
    patch = (
        "*** Begin Patch\n*** Update File: src/textkit/slug.py\n@@\n-a\n+b\n"
        "*** Update File: tests/test_slug.py\n@@\n-a\n+b\n*** End Patch\n"
    )
    pinned = str(repo / "tests" / "test_slug.py")
    for event, tool, tool_input in (
        ("codex-pre-tool-use", "apply_patch", {"command": patch}),
        ("gemini-pre-tool-use", "write_file", {"file_path": pinned, "content": "x"}),
        ("gemini-pre-tool-use", "replace", {"file_path": pinned, "old_string": "a"}),
    ):
        stdin = payload(repo, "PreToolUse", tool_name=tool, tool_input=tool_input)
        result = run_hook(repo, event, stdin)
        assert result.returncode == 2 and result.stdout == "", (event, result.stdout)
        assert "tests/test_slug.py is pinned" in result.stderr, result.stderr
    honest = patch.split("*** Update File: tests/")[0] + "*** End Patch\n"
    for event, tool, tool_input in (
        ("codex-pre-tool-use", "apply_patch", {"command": honest}),
        (
            "gemini-pre-tool-use",
            "write_file",
            {"file_path": str(repo / "src" / "textkit" / "slug.py")},
        ),
        ("gemini-pre-tool-use", "read_file", {"file_path": pinned}),
    ):
        stdin = payload(repo, "PreToolUse", tool_name=tool, tool_input=tool_input)
        result = run_hook(repo, event, stdin)
        assert result.returncode == 0 and result.stdout == "", (event, result.stderr)


def test_a_write_tool_without_a_path_is_denied(example_repo: Path) -> None:
    stdin = payload(example_repo, "PreToolUse", tool_name="Write", tool_input={"content": "x"})
    answer = _decision(run_hook(example_repo, "claude-pre-tool-use", stdin))
    assert answer["permissionDecision"] == "deny"


# --------------------------------------------------------------------------- Stop


def _answer(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_stop_blocks_with_the_verifiers_reasons_until_the_contract_is_met(
    baselined_repo: Path, candidates: ModuleType
) -> None:
    repo = baselined_repo  # fix mode: the unmodified tree fails its acceptance tests

    decision = _answer(run_hook(repo, "claude-stop", stop(repo)))
    assert decision["decision"] == "block"
    verdict = json.loads((repo / STATE / "verdict.json").read_text("utf-8"))
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "fail" and verdict["loop"]["decision"] == "continue"
    for reason in verdict["reasons"]:
        assert f"{reason['code']}: {reason['message']}" in decision["reason"]
    assert "iteration 1 of 5: the contract's iteration cap decides" in decision["reason"]
    assert "iteration 1/5" in decision["systemMessage"]

    candidates.honest(repo)
    met = _answer(run_hook(repo, "claude-stop", stop(repo, active=True)))
    assert "decision" not in met  # Claude may stop, and the user is told why
    assert "contract met" in met["systemMessage"]

    assert [r.data["verdict"] for r in kinds(repo, "iteration")] == ["fail", "pass"]
    state = reduce(records(repo))
    assert state["loop"]["status"] == "done"
    assert state["loop"]["command"] == ["claude-code", "session-1"]

    # Claude continuing after the run ended: not verified again
    ended = _answer(run_hook(repo, "claude-stop", stop(repo, active=True)))
    assert "decision" not in ended and "ended" in ended["systemMessage"]
    assert len(kinds(repo, "iteration")) == 2
    # a person spoke since (stop_hook_active false): a new run verifies the tree again
    later = _answer(run_hook(repo, "claude-stop", stop(repo)))
    assert "decision" not in later
    assert len(kinds(repo, "iteration")) == 3 and len(kinds(repo, "loop_started")) == 2


def test_stop_respects_the_iteration_cap_and_says_so(example_repo: Path) -> None:
    repo = example_repo
    contract = repo / "loopcontract.yml"
    contract.write_text(
        contract.read_text("utf-8").replace("iterations: 5", "iterations: 2"), "utf-8"
    )
    commit_all(repo, "cap at two iterations")
    assert run_cli(repo, "baseline").returncode == 0

    assert _answer(run_hook(repo, "claude-stop", stop(repo)))["decision"] == "block"
    # the second stop is the last iteration: the cap ends the run there
    second = _answer(run_hook(repo, "claude-stop", stop(repo, active=True)))
    assert "decision" not in second
    assert "iteration cap reached (2/2)" in second["systemMessage"]
    assert "exit 23" in second["systemMessage"]
    third = _answer(run_hook(repo, "claude-stop", stop(repo, active=True)))
    assert "decision" not in third

    assert [r.data["n"] for r in kinds(repo, "iteration")] == [1, 2]
    (stopped,) = kinds(repo, "stop")
    assert stopped.data["reason"] == "iteration_cap" and stopped.data["exit_code"] == 23


def test_stop_notes_when_claude_codes_own_cap_could_end_a_turn_first(example_repo: Path) -> None:
    repo = example_repo
    contract = repo / "loopcontract.yml"
    contract.write_text(
        contract.read_text("utf-8").replace("iterations: 5", "iterations: 12"), "utf-8"
    )
    commit_all(repo, "cap at twelve iterations")
    assert run_cli(repo, "baseline").returncode == 0
    env = {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": ""}
    low = _answer(run_hook(repo, "claude-stop", stop(repo), env=env))
    assert "Claude Code ends a turn itself after 8 blocks in a row" in low["reason"]
    high = _answer(
        run_hook(repo, "claude-stop", stop(repo), env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"})
    )
    assert "iteration 2 of 12" in high["reason"]
    assert "Claude Code ends a turn itself" not in high["reason"]


def test_stop_waiting_for_a_person_is_allowed_but_never_silent(baselined_repo: Path) -> None:
    repo = baselined_repo
    git(repo, "config", "user.name", "Ada Lovelace")  # named by the printed commands
    denied = _decision(
        run_hook(repo, "claude-pre-tool-use", bash(repo, "git push --force origin main"))
    )
    (cid,) = checkpoint_ids(denied["permissionDecisionReason"])
    approve = f'loop-contract checkpoint resolve {cid} --by "Ada Lovelace"'
    assert f"'{approve}'" in denied["permissionDecisionReason"]

    for _ in range(2):  # every stop while it waits says so
        answer = _answer(run_hook(repo, "claude-stop", stop(repo)))
        assert "decision" not in answer
        message = answer["systemMessage"]
        assert cid in message
        assert f"'{approve}'" in message and f"'{approve} --deny'" in message
        assert "NAME" not in message and "[--deny]" not in message
    recorded = kinds(repo, "stop")
    assert recorded and all(cid in r.data["message"] for r in recorded)
    assert recorded[-1].data["decision"] == "await_human"

    resolve(repo, cid, "erin")
    resumed = _answer(run_hook(repo, "claude-stop", stop(repo)))
    assert resumed["decision"] == "block"  # cleared: the contract decides again
    assert kinds(repo, "resumed")


def test_stop_in_a_new_session_starts_a_new_run(baselined_repo: Path) -> None:
    repo = baselined_repo
    assert _answer(run_hook(repo, "claude-stop", stop(repo, "a")))["decision"] == "block"
    assert _answer(run_hook(repo, "claude-stop", stop(repo, "b")))["decision"] == "block"
    started = kinds(repo, "loop_started")
    assert [r.data["command"] for r in started] == [["claude-code", "a"], ["claude-code", "b"]]


def test_stop_without_an_adopted_contract_blocks(example_repo: Path) -> None:
    result = run_hook(example_repo, "claude-stop", stop(example_repo))
    assert result.returncode == 2
    assert blocks(result, "Stop")
    assert "loop-contract baseline" in result.stderr


def test_stop_hook_inside_a_governed_loop_leaves_the_loop_in_charge(
    baselined_repo: Path, tmp_path: Path
) -> None:
    """``loop-contract loop -- claude …`` with the hooks installed: the Stop hook fires inside
    each agent turn. The governed loop verifies after the turn and owns the history; the hook
    must neither start a run of its own (that would reset the loop's counters) nor block."""
    repo = baselined_repo
    log = tmp_path / "hook-calls.jsonl"
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, os, subprocess, sys\n"
        "sys.stdin.read()\n"
        "payload = {'session_id': 'inside', 'transcript_path': '/dev/null', 'cwd': os.getcwd(),"
        " 'hook_event_name': 'Stop', 'stop_hook_active': False}\n"
        "proc = subprocess.run([sys.executable, '-m', 'pytest_loopcontract', 'hook', 'run',"
        " 'claude-stop'], input=json.dumps(payload), capture_output=True, text=True)\n"
        f"with open({str(log)!r}, 'a') as fh:\n"
        "    fh.write(json.dumps({'rc': proc.returncode, 'out': proc.stdout}) + '\\n')\n",
        "utf-8",
    )
    result = run_cli(repo, "loop", "--", sys.executable, str(agent))
    assert result.returncode == 22, result.stdout + result.stderr  # no progress, 3 in a row

    calls = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    assert len(calls) == 3
    for call in calls:
        assert call["rc"] == 0
        assert "governed loop" in json.loads(call["out"])["systemMessage"]
        assert "decision" not in json.loads(call["out"])
    assert len(kinds(repo, "loop_started")) == 1
    assert [r.data["n"] for r in kinds(repo, "iteration")] == [1, 2, 3]
    (stopped,) = kinds(repo, "stop")
    assert stopped.data["reason"] == "no_progress"


def test_a_push_to_a_branch_the_contract_protects_is_a_protected_push(
    baselined_repo: Path,
) -> None:
    """The contract's ``push.protected`` reaches the agent hooks' scanner (before, the scanner
    kept its own list without ``production``, so this push was only ``git-push``)."""
    repo = baselined_repo
    for branch, protected in (("production", True), ("main", True), ("feature/x", False)):
        answer = _decision(
            run_hook(repo, "claude-pre-tool-use", bash(repo, f"git push origin {branch}"))
        )
        assert answer["permissionDecision"] == "deny"
        raised = kinds(repo, "checkpoint_raised")[-1].data
        found = [m["pattern_id"] for m in raised["matches"]]
        assert ("git-push-protected" in found) is protected and "git-push" in found, found
