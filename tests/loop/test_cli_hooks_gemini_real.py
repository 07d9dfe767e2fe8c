"""The Gemini CLI hooks (``loop-contract hook install gemini``) proven with the real Gemini CLI
(the pinned release) and a scripted Gemini API server, on the slugify example:

* the model asks for ``git push``: the BeforeTool hook blocks it and the model receives the
  reason ("Tool execution blocked: ...");
* the model asks ``write_file`` to overwrite a pinned test: blocked before the write, the path
  named;
* the model says it is done while the contract is not met: the AfterAgent hook sends it back
  with the failing tests named, until the contract's iteration cap ends the run;
* the hook's interpreter is gone: the guard still blocks, the stop gate blocks once.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testing.agent_clis import gemini_home
from testing.hooks import break_interpreter, iteration_numbers, stop_records
from testing.loop_project import make_repo
from testing.model_servers import Block, GeminiServer, text, tool
from testing.repos import run_cli


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = make_repo(tmp_path, budget="{iterations: 2}")
    installed = run_cli(made, "hook", "install", "gemini")
    assert installed.returncode == 0, installed.stderr
    return made


def gemini(repo: Path, tmp_path: Path, turns: list[list[Block]]) -> tuple[str, list[str]]:
    """Run the real CLI in ``repo`` (every tool allowed: only the hooks stand in the way) on
    the script; its stdout and, per request, the last content Gemini sent."""
    with GeminiServer(turns) as server:
        env = {**os.environ, **gemini_home(tmp_path / "home", server.base_url)}
        argv = ["gemini", "-p", "Make the slug tests pass.", "--output-format", "json",
                "--approval-mode", "yolo"]  # fmt: skip
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
        sent = [json.dumps(r["contents"][-1]) for r in server.agent_requests]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, sent


def test_a_push_is_blocked_and_the_model_is_told_why(repo: Path, tmp_path: Path) -> None:
    script = [[tool("run_shell_command", command="git push origin main")], [text("Done.")]]
    _, sent = gemini(repo, tmp_path, script)
    assert "Tool execution blocked" in sent[1]
    assert "Pushing publishes the agent's work" in sent[1]
    assert "loop-contract checkpoint resolve cp-" in sent[1]
    assert stop_records(repo)[-1]["reason"] == "checkpoint"  # the stop waits for a person


def test_a_pinned_test_is_not_written(repo: Path, tmp_path: Path) -> None:
    target = repo / "tests" / "test_slug.py"
    before = target.read_bytes()
    script = [
        [tool("write_file", file_path=str(target), content="def test_ok():\n    assert True\n")],
        [text("Done.")],
    ]
    _, sent = gemini(repo, tmp_path, script)
    assert "Tool execution blocked" in sent[1] and "tests/test_slug.py is pinned" in sent[1]
    assert target.read_bytes() == before


def test_a_premature_stop_is_sent_back_until_the_cap(repo: Path, tmp_path: Path) -> None:
    _, sent = gemini(repo, tmp_path, [[text("Finished.")], [text("Finished.")]])
    feedback = [s for s in sent if "not met yet" in s]
    assert feedback, sent
    assert "tests/test_slug.py::test_accents_are_transliterated" in feedback[0]  # named
    assert iteration_numbers(repo) == [1, 2]
    assert stop_records(repo)[-1]["reason"] == "iteration_cap"  # the contract's cap ended it


def test_a_hook_that_cannot_start_blocks(repo: Path, tmp_path: Path) -> None:
    break_interpreter(repo / ".gemini" / "settings.json", tmp_path / "gone" / "python")
    script = [[tool("run_shell_command", command="ls")], [text("Done.")]]
    _, sent = gemini(repo, tmp_path, script)
    assert "the gemini-pre-tool-use hook could not run (exit 127), so this is blocked" in sent[1]
    assert "the gemini-stop hook could not run (exit 127), so this is blocked" in sent[2]
    assert len(sent) == 3
