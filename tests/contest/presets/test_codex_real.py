"""The ``codex`` preset against the real Codex CLI (the pinned release, from the npm registry)
and a scripted Responses API server: the argv the preset gives works on 0.171 (the old
``--full-auto`` is gone), the agent edits files and runs the project's tests inside Codex's
own ``workspace-write`` sandbox, where the network is off, and the seat record carries the
tokens Codex printed (Codex prints no cost). A 401 and a 429 are their outcomes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from testing.agent_clis import CALC, CODEX, PINNED, calc_work, codex_home, require_cli, run_preset
from testing.model_servers import ResponsesServer, text, tool

WRITE_CALC = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py"


def outputs(server: ResponsesServer) -> list[str]:
    """What each command the model asked for printed, as Codex sent it back."""
    last = server.agent_requests[-1]["input"]  # each request carries the whole history
    return [str(item.get("output")) for item in last if item.get("type") == "function_call_output"]


def test_the_preset_lets_the_agent_edit_and_run_the_tests_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = require_cli(CODEX)
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True).stdout
    assert PINNED[CODEX] in version, version  # the release the preset is proven on
    folder = calc_work(tmp_path)
    with ResponsesServer([], usage=(1000, 100)) as server:
        server.turns = [
            [text("Writing calc.py."), tool("exec_command", cmd=WRITE_CALC)],
            [tool("exec_command", cmd="python3 -m pytest -q -p no:cacheprovider")],
            [tool("exec_command", cmd=f"curl -s -m 5 {server.base_url}/v1/models; echo rc=$?")],
            [text("calc.add is implemented and the tests pass.")],
        ]
        for name, value in codex_home(tmp_path / "codex", server.base_url).items():
            monkeypatch.setenv(name, value)
        run = run_preset(tmp_path, folder, "codex")
        said = outputs(server)
        keys = {h.get("authorization") for h in server.headers}
        asked = len(server.requests)
    assert run.status == "ok", (run.reason, run.stderr_tail)
    assert (folder / "calc.py").read_text("utf-8") == CALC
    assert "1 passed" in said[1]  # the tests ran inside the sandbox
    assert "rc=0" not in said[2] and asked == 4  # curl reached nothing: the network is off
    events = [json.loads(line) for line in (run.stdout_text or "").splitlines() if line]
    usage = [e["usage"] for e in events if e["type"] == "turn.completed"]
    assert usage == [{"input_tokens": 4000, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
                      "output_tokens": 400, "reasoning_output_tokens": 0}]  # fmt: skip
    assert run.tokens == 4400 and run.cost_usd is None  # what Codex printed; it prints no cost
    assert keys == {"Bearer sk-scripted"}  # the provider's env_key, as a bearer token
    assert not any("proven on release" in note for note in run.notes)


@pytest.mark.parametrize(("status", "outcome"), [(401, "auth_failed"), (429, "rate_limited")])
def test_an_api_error_is_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, outcome: str
) -> None:
    """Codex retries a 429 by default; ``request_max_retries = 0`` in the provider's
    configuration makes it report at once, as ``turn.failed``."""
    folder = calc_work(tmp_path)
    with ResponsesServer([[text("never sent")]]) as server:
        server.fail_with = status
        for name, value in codex_home(tmp_path / "codex", server.base_url, retries=0).items():
            monkeypatch.setenv(name, value)
        run = run_preset(tmp_path, folder, "codex")
    assert run.status == outcome, (run.status, run.reason, run.stdout_text)
    assert str(status) in run.reason
