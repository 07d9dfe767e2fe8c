"""The ``claude-code`` preset against the real Claude Code (the pinned release, from the npm
registry) and a scripted Messages API server: the argv the preset gives works, the agent can
edit files and run the project's tests but nothing else, and the seat record carries the
tokens and cost the CLI itself printed. Before: the preset's ``acceptEdits`` refused every
shell command, so an agent could not run the tests (the first test below shows the denial)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.contest.presets.claude_code import GENERATE
from testing.agent_clis import CALC, CLAUDE_CODE, PINNED, calc_work, require_cli, run_preset
from testing.model_servers import AnthropicServer, text, tool


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    program = require_cli(CLAUDE_CODE)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the CLI's settings, a fresh user
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-scripted")
    (tmp_path / "home").mkdir()
    return program


def tool_results(server: AnthropicServer) -> list[str]:
    """The text of every tool result the CLI sent back, in order."""
    found = []
    for request in server.agent_requests:
        for block in request["messages"][-1].get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = " ".join(str(c.get("text", "")) for c in content)
                found.append(str(content))
    return found


def test_the_preset_lets_the_agent_edit_and_run_the_tests_and_nothing_else(
    tmp_path: Path, cli: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = calc_work(tmp_path)
    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout
    assert version.startswith(PINNED[CLAUDE_CODE]), version  # the release the preset is proven on
    script = [
        [text("Writing calc.py."), tool("Write", file_path=str(folder / "calc.py"), content=CALC)],
        [tool("Bash", command="python3 -m pytest -q", description="run the tests")],
        [tool("Bash", command="curl -s http://127.0.0.1:9/x", description="fetch something")],
        [text("calc.add is implemented and the tests pass.")],
    ]
    with AnthropicServer(script, usage=(1000, 100)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        run = run_preset(tmp_path, folder, "claude-code")
        results = tool_results(server)
        sent_key = {h.get("x-api-key") for h in server.headers}
    assert run.status == "ok", (run.reason, run.stderr_tail)
    assert (folder / "calc.py").read_text("utf-8") == CALC
    assert "1 passed" in results[1]  # the tests ran, through the preset's allowed commands
    assert "requires approval" in results[2]  # curl: refused
    result = json.loads(run.stdout_text or "{}")
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    usage = result["usage"]
    assert usage["input_tokens"] == 4000 and usage["output_tokens"] == 400  # 4 turns, scripted
    assert run.tokens == 4400  # what the CLI printed, as the preset reads it
    assert run.cost_usd is not None and run.cost_usd > 0
    assert run.cost_usd == pytest.approx(result["total_cost_usd"])
    assert sent_key == {"sk-ant-scripted"}  # ANTHROPIC_API_KEY, sent as x-api-key
    assert not any("proven on release" in note for note in run.notes)  # the proven release


def test_the_old_argv_could_not_run_the_tests(tmp_path: Path, cli: Path) -> None:
    """acceptEdits alone (the preset before this change): Bash is denied outright."""
    folder = calc_work(tmp_path)
    script = [[tool("Bash", command="python3 -m pytest -q", description="run the tests")]]
    old = [word for word in GENERATE if not word.startswith("Bash(")][:-1]  # no --allowedTools
    assert "--allowedTools" not in old
    with AnthropicServer(script) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url}
        argv = [w.replace("{prompt_file}", str(tmp_path / "p.md")) for w in old]
        (tmp_path / "p.md").write_text("Run the tests.\n", "utf-8")
        proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        results = tool_results(server)
    assert proc.returncode == 0, proc.stderr
    assert results and "requires approval" in results[0]


@pytest.mark.parametrize(("status", "outcome"), [(401, "auth_failed"), (429, "rate_limited")])
def test_an_api_error_is_its_outcome(
    tmp_path: Path, cli: Path, monkeypatch: pytest.MonkeyPatch, status: int, outcome: str
) -> None:
    """The CLI retries 401 and 429 for minutes; CLAUDE_CODE_MAX_RETRIES=0 (what a contract's
    seat can set in its environment) makes it report at once, as its result object."""
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    folder = calc_work(tmp_path)
    with AnthropicServer([[text("never sent")]]) as server:
        server.fail_with = status  # however often the CLI asks
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        run = run_preset(tmp_path, folder, "claude-code")
    assert run.status == outcome, (run.status, run.reason, run.stdout_text)
    assert str(status) in run.reason
