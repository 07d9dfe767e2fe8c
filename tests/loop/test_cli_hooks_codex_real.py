"""The Codex hooks (``loop-contract hook install codex``) proven with the real Codex (the
pinned release) and a scripted Responses API server, on the slugify example:

* the model asks for ``git push``: the PreToolUse hook blocks it and the model receives the
  reason ("Command blocked by PreToolUse hook: ...");
* the model overwrites a pinned test through the shell (no file tool to guard): the stop gate
  catches it as tampering and the run stops for a person;
* the model says it is done while the contract is not met: the Stop hook sends it back with
  the failing tests named, until the contract's iteration cap ends the run;
* the hook's interpreter is gone: the guard still blocks (fails closed), and the stop gate
  blocks once, then lets the agent stop (Codex would otherwise go on for ever).

Codex runs a project's hooks only when the project and its hooks are trusted; the run passes
``--trust --dangerously-bypass-hook-trust``, as the installer's note tells a user to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopcontract.history import History
from testing.agent_clis import codex_home
from testing.hooks import break_interpreter, iteration_numbers, kinds, stop_records
from testing.loop_project import STATE, make_repo
from testing.model_servers import Block, ResponsesServer, text, tool
from testing.repos import run_cli


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = make_repo(tmp_path, budget="{iterations: 2}")
    installed = run_cli(made, "hook", "install", "codex")
    assert installed.returncode == 0, installed.stderr
    assert "--dangerously-bypass-hook-trust" in installed.stdout  # the note on trust
    return made


def codex(repo: Path, tmp_path: Path, turns: list[list[Block]]) -> tuple[str, list[str]]:
    """Run the real CLI in ``repo`` on the script; its stdout and, per request, the last item
    Codex sent (a command's output, a hook's feedback)."""
    with ResponsesServer(turns) as server:
        env = codex_home(tmp_path / "codex", server.base_url)
        argv = ["codex", "exec", "--json", "--sandbox", "workspace-write", "--trust",
                "--dangerously-bypass-hook-trust", "Make the slug tests pass."]  # fmt: skip
        proc = subprocess.run(argv, cwd=repo, env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
        sent = [json.dumps(r["input"][-1]) for r in server.agent_requests]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, sent


def test_a_push_is_blocked_and_the_model_is_told_why(repo: Path, tmp_path: Path) -> None:
    script = [[tool("exec_command", cmd="git push origin main")], [text("Done.")]]
    _, sent = codex(repo, tmp_path, script)
    assert "Command blocked by PreToolUse hook" in sent[1]
    assert "Pushing publishes the agent's work" in sent[1]
    assert "loop-contract checkpoint resolve cp-" in sent[1]
    assert stop_records(repo)[-1]["reason"] == "checkpoint"  # the stop waits for a person


def test_a_premature_stop_is_sent_back_until_the_cap(repo: Path, tmp_path: Path) -> None:
    _, sent = codex(repo, tmp_path, [[text("Finished.")], [text("Finished.")]])
    feedback = [s for s in sent if "not met yet" in s]
    assert feedback, sent
    assert "tests/test_slug.py::test_accents_are_transliterated" in feedback[0]  # named
    assert iteration_numbers(repo) == [1, 2]
    assert stop_records(repo)[-1]["reason"] == "iteration_cap"  # the contract's cap ended it


def test_a_pinned_test_rewritten_through_the_shell_is_caught_at_the_stop(
    repo: Path, tmp_path: Path
) -> None:
    rewrite = "printf 'def test_ok():\\n    assert True\\n' > tests/test_slug.py"
    script = [[tool("exec_command", cmd=rewrite)], [text("All green.")]]
    codex(repo, tmp_path, script)
    ended = stop_records(repo)[-1]
    assert (ended["reason"], ended["exit_code"]) == ("tamper", 25)  # a person must look
    iteration = [r.data for r in History(repo / STATE).read().records if r.kind == "iteration"]
    assert iteration[-1]["verdict"] != "pass"


def test_a_hook_that_cannot_start_blocks(repo: Path, tmp_path: Path) -> None:
    break_interpreter(repo / ".codex" / "hooks.json", tmp_path / "gone" / "python")
    script = [[tool("exec_command", cmd="ls")], [text("Done.")]]
    _, sent = codex(repo, tmp_path, script)
    assert "the codex-pre-tool-use hook could not run (exit 127), so this is blocked" in sent[1]
    # The broken stop hook blocks the first stop and lets the next one through: Codex has no
    # cap of its own on blocked stops, so blocking every one would never end.
    assert "the codex-stop hook could not run (exit 127), so this is blocked" in sent[2]
    assert len(sent) == 3


def test_the_loop_drives_the_real_cli_and_counts_what_it_printed(tmp_path: Path) -> None:
    """``loop-contract loop -- codex exec --json ...`` for three turns: each turn's spend is
    the ``turn.completed`` usage Codex printed (it prints no cost); no change in any turn, so
    no progress (or the cap) ends the run, and the history holds every turn's spend."""
    repo = make_repo(tmp_path, budget="{iterations: 3, tokens: 100000}")
    script = [[text("I looked; I change nothing this turn.")]] * 3
    with ResponsesServer(script, usage=(2000, 150)) as server:
        env = {**os.environ, **codex_home(tmp_path / "codex", server.base_url)}
        agent = ["codex", "exec", "--json", "--sandbox", "workspace-write", "{prompt}"]
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_loopcontract", "loop", "--", *agent],
            cwd=repo, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        turns = len(server.agent_requests)
    assert proc.returncode in (22, 23), proc.stdout + proc.stderr  # no progress, or the cap
    spends = [r.data for r in kinds(repo, "spend")]
    assert len(spends) == len(iteration_numbers(repo)) == turns >= 2
    assert all(s["tokens"] == 2150 and s["source"] == "cli" for s in spends), spends
    assert all(s.get("usd") is None for s in spends), spends  # no cost printed, none made up
    assert stop_records(repo)[-1]["reason"] in ("no_progress", "iteration_cap")
