"""The Claude Code hooks (``loop-contract hook install claude-code``) proven with the real Claude
Code (the pinned release) and a scripted Messages API server, on the slugify example:

* the model asks for ``git push``: the PreToolUse hook blocks it, the model receives the reason
  as the tool's error, and the stop that follows waits for a person (the checkpoint);
* the model says it is done while the contract is not met: the Stop hook sends it back with the
  failing tests named, until the contract's iteration cap ends the run;
* the hook's interpreter is gone: the hook still blocks (fails closed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.history import History
from testing.agent_clis import CLAUDE_CODE, require_cli
from testing.hooks import break_interpreter, iteration_numbers, stop_records
from testing.loop_project import STATE, make_repo
from testing.model_servers import AnthropicServer, Block, text, tool
from testing.repos import run_cli


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = make_repo(tmp_path, budget="{iterations: 2}")
    installed = run_cli(made, "hook", "install", "claude-code")
    assert installed.returncode == 0, installed.stderr
    return made


def claude(
    repo: Path, tmp_path: Path, turns: list[list[Block]]
) -> tuple[dict[str, Any], list[str]]:
    """Run the real CLI in ``repo`` on the script; its result object and, per request, the
    text of the last message the CLI sent (tool results, hook feedback)."""
    program = require_cli(CLAUDE_CODE)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    with AnthropicServer(turns) as server:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        argv = [str(program), "-p", "Make the slug tests pass.", "--output-format", "json"]
        argv += ["--permission-mode", "acceptEdits", "--allowedTools", "Bash(git push:*)"]
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        sent = [json.dumps(r["messages"][-1]) for r in server.agent_requests]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), sent


def test_a_push_is_blocked_and_the_model_is_told_why(repo: Path, tmp_path: Path) -> None:
    """Even with the push allowed by the CLI's own permissions, the hook blocks it."""
    script = [[tool("Bash", command="git push origin main", description="push")], [text("Done.")]]
    result, sent = claude(repo, tmp_path, script)
    assert "PreToolUse:Bash hook error" in sent[1] and "git push" not in result["result"]
    assert "Pushing publishes the agent's work" in sent[1]
    assert "loop-contract checkpoint resolve cp-" in sent[1]
    assert stop_records(repo)[-1]["reason"] == "checkpoint"  # the stop waits for a person


def test_a_premature_stop_is_sent_back_with_the_failing_tests(repo: Path, tmp_path: Path) -> None:
    result, sent = claude(repo, tmp_path, [[text("Finished.")]])
    feedback = [s for s in sent if "Stop hook" in s]
    assert feedback, sent
    assert "not met yet" in feedback[0]
    assert "tests/test_slug.py::test_accents_are_transliterated" in feedback[0]  # named
    assert iteration_numbers(repo) == [1, 2]
    assert stop_records(repo)[-1]["reason"] == "iteration_cap"  # the contract's cap ended it
    assert result["num_turns"] >= 2


def test_a_hook_that_cannot_start_blocks(repo: Path, tmp_path: Path) -> None:
    break_interpreter(repo / ".claude" / "settings.json", tmp_path / "gone" / "python")
    script = [[tool("Bash", command="ls", description="look")], [text("Done.")]]
    _, sent = claude(repo, tmp_path, script)
    assert "the claude-pre-tool-use hook could not run (exit 127), so this is blocked" in sent[1]


def test_the_loop_drives_the_real_cli_and_counts_what_it_printed(tmp_path: Path) -> None:
    """``loop-contract loop -- claude ...`` for three turns: each turn's spend is the usage and
    cost the CLI printed in its result object; no change in any turn, so no progress (or the
    cap) ends the run, and the history holds every turn's spend."""
    repo = make_repo(tmp_path, budget="{iterations: 3, tokens: 100000}")
    program = require_cli(CLAUDE_CODE)
    home = tmp_path / "home"
    home.mkdir()
    script = [[text("I looked; I change nothing this turn.")]] * 3
    with AnthropicServer(script, usage=(2000, 150)) as server:
        env = {
            **os.environ,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        agent = [str(program), "-p", "{prompt}", "--output-format", "json"]
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_loopcontract", "loop", "--", *agent],
            cwd=repo, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        turns = len(server.agent_requests)
    assert proc.returncode in (22, 23), proc.stdout + proc.stderr  # no progress, or the cap
    records = History(repo / STATE).read().records
    spends = [r.data for r in records if r.kind == "spend"]
    iterations = [r.data for r in records if r.kind == "iteration"]
    assert len(spends) == len(iterations) == turns >= 2
    assert all(s["tokens"] == 2150 and s["source"] == "cli" for s in spends)
    assert all(s["usd"] > 0 for s in spends)  # the CLI's own total_cost_usd, never a guess
    assert stop_records(repo)[-1]["reason"] in ("no_progress", "iteration_cap")
