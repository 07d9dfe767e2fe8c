"""Helpers for the hook tests: real ``git push`` runs, hook commands run the way git and
Claude Code run them, and readers of what the hooks left in the history."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_loopcontract.history import History
from testing.repos import GIT_ENV, git, run_cli

CP_ID = re.compile(r"\bcp-[0-9a-f]{10}(?:\.\d+)?")
STATE = ".loop-contract"


def push(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A real ``git push`` (the installed hook runs); not asserted, the caller judges it."""
    return subprocess.run(
        ["git", "push", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def said(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def checkpoint_ids(text: str) -> list[str]:
    return list(dict.fromkeys(CP_ID.findall(text)))


def resolve(repo: Path, cid: str, by: str = "alice", *extra: str) -> None:
    result = run_cli(repo, "checkpoint", "resolve", cid, "--by", by, *extra)
    assert result.returncode == 0, result.stdout + result.stderr


def records(repo: Path) -> list[Any]:
    return History(repo / STATE).read().records


def kinds(repo: Path, kind: str) -> list[Any]:
    return [r for r in records(repo) if r.kind == kind]


def add_remote(repo: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")  # the base is on the remote before any hook
    return remote


def install_pre_push(repo: Path) -> Path:
    result = run_cli(repo, "hook", "install", "pre-push")
    assert result.returncode == 0, result.stdout + result.stderr
    hook = Path(git(repo, "rev-parse", "--git-path", "hooks").strip())
    return (hook if hook.is_absolute() else repo / hook) / "pre-push"


def run_hook(
    cwd: Path, event: str, stdin: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``loop-contract hook run EVENT`` the way git, pre-commit or Claude Code call it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", "hook", "run", event],
        cwd=cwd,
        input=stdin,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def installed_command(repo: Path, claude_event: str) -> str:
    """The command ``hook install claude-code`` wrote for ``PreToolUse`` or ``Stop``."""
    settings = json.loads((repo / ".claude" / "settings.json").read_text("utf-8"))
    commands = [
        h["command"]
        for group in settings["hooks"][claude_event]
        for h in group["hooks"]
        if "pytest_loopcontract hook run" in h["command"]
    ]
    assert len(commands) == 1, commands
    return str(commands[0])


def run_installed(
    repo: Path, command: str, stdin: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an installed hook command as Claude Code does: through the shell, in the project,
    with ``env`` as the whole environment when given (e.g. a PATH without loop-contract)."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=repo,
        input=stdin,
        env=env if env is not None else {**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=600,
    )


def payload(cwd: Path, event: str, session: str = "session-1", **extra: Any) -> str:
    """A hook input as Claude Code documents it."""
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / "transcript.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": event,
            **extra,
        }
    )


def bash(cwd: Path, command: str, session: str = "session-1") -> str:
    return payload(
        cwd,
        "PreToolUse",
        session,
        tool_name="Bash",
        tool_input={"command": command, "description": "run it"},
    )


def write(cwd: Path, tool: str, target: str, session: str = "session-1") -> str:
    """A file-writing tool call (absolute paths, as Claude Code sends them)."""
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return payload(
        cwd, "PreToolUse", session, tool_name=tool, tool_input={key: target, "content": "x = 1\n"}
    )


def stop(cwd: Path, session: str = "session-1", active: bool = False) -> str:
    return payload(cwd, "Stop", session, stop_hook_active=active)


def remote_heads(repo: Path) -> dict[str, str]:
    heads = {}
    for line in git(repo, "ls-remote", "--heads", "origin").splitlines():
        sha, ref = line.split()
        heads[ref.removeprefix("refs/heads/")] = sha
    return heads


def stop_records(repo: Path) -> list[dict[str, Any]]:
    """The ``stop`` records of the loop's history, oldest first."""
    return [r.data for r in kinds(repo, "stop")]


def iteration_numbers(repo: Path) -> list[int]:
    """The numbers of the verified iterations in the loop's history."""
    return [int(r.data["n"]) for r in kinds(repo, "iteration")]


def break_interpreter(settings: Path, gone: Path) -> None:
    """Point every hook command in an agent CLI's settings file at an interpreter that does
    not exist (a deleted virtual environment), as a user's machine might."""
    document = json.loads(settings.read_text("utf-8"))
    for groups in document["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = hook["command"].replace(sys.executable, str(gone))
    settings.write_text(json.dumps(document), "utf-8")
