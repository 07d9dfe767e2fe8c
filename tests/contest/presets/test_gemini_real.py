"""The ``gemini`` preset against the real Gemini CLI (the pinned release, from the npm
registry) and a scripted Gemini API server: the argv works on 0.61, the agent edits files and
runs the project's tests and nothing else (before: ``auto_edit`` offered no shell at all), the
seat record carries the tokens Gemini printed, and a 401 and a 429 are their outcomes although
the CLI prints its error object on stderr."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.contest.presets import PRESETS
from pytest_loopcontract.contest.presets.gemini import ALLOWED_COMMANDS, GENERATE
from pytest_loopcontract.contest.seat_model import Seat
from pytest_loopcontract.contest.seats import seat_box
from testing.agent_clis import CALC, GEMINI, PINNED, calc_work, gemini_home, require_cli, run_preset
from testing.model_servers import Block, GeminiServer, text, tool


def answers(server: GeminiServer) -> list[dict[str, object]]:
    """The function responses of the last turn's request: what each tool call returned."""
    contents = server.agent_requests[-1]["contents"]
    return [
        part["functionResponse"]["response"]
        for content in contents
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def script(folder: Path) -> list[list[Block]]:
    return [
        [
            text("Writing calc.py."),
            tool("write_file", file_path=str(folder / "calc.py"), content=CALC),
        ],
        [tool("run_shell_command", command="python3 -m pytest -q -p no:cacheprovider")],
        [tool("run_shell_command", command="curl -s -m 5 http://127.0.0.1:9/; echo rc=$?")],
        [text("calc.add is implemented and the tests pass.")],
    ]


def test_the_preset_lets_the_agent_edit_and_run_the_tests_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = require_cli(GEMINI)
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True).stdout
    assert PINNED[GEMINI] in version, version  # the release the preset is proven on
    folder = calc_work(tmp_path)
    with GeminiServer(script(folder), usage=(1000, 100)) as server:
        for name, value in gemini_home(tmp_path / "home", server.base_url).items():
            monkeypatch.setenv(name, value)
        run = run_preset(tmp_path, folder, "gemini")
        returned = answers(server)
        keys = {h.get("x-goog-api-key") for h in server.headers}
    assert run.status == "ok", (run.reason, run.stderr_tail)
    assert (folder / "calc.py").read_text("utf-8") == CALC
    assert "1 passed" in str(returned[1]["output"])  # the tests ran, as the preset allows
    assert returned[2] == {"error": "Tool execution denied by policy."}  # curl did not
    stats = json.loads(run.stdout_text or "{}")["stats"]
    printed = sum(model["tokens"]["total"] for model in stats["models"].values())
    assert run.tokens == printed and printed >= 4400  # 4 turns and the router's side calls
    assert run.cost_usd is None  # Gemini prints no cost
    assert keys == {"gemini-scripted"}
    assert not any("proven on release" in note for note in run.notes)


def test_the_old_argv_offered_no_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = calc_work(tmp_path)
    old = tuple(
        word for word in GENERATE if word not in ALLOWED_COMMANDS and word != "--allowed-tools"
    )
    with GeminiServer(script(folder)) as server:
        for name, value in gemini_home(tmp_path / "home", server.base_url).items():
            monkeypatch.setenv(name, value)
        run_preset(tmp_path, folder, "gemini", generate=old)
        offered = {
            declaration["name"]
            for tools in server.agent_requests[0]["tools"]
            for declaration in tools.get("functionDeclarations", [])
        }
    assert "write_file" in offered and "run_shell_command" not in offered


@pytest.mark.parametrize(("status", "outcome"), [(401, "auth_failed"), (429, "rate_limited")])
def test_an_api_error_is_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, outcome: str
) -> None:
    """The 429 is the daily quota as Google words it (a ``QuotaFailure`` per day), which the
    CLI does not retry."""
    folder = calc_work(tmp_path)
    with GeminiServer([[text("never sent")]]) as server:
        server.fail_with = status
        for name, value in gemini_home(tmp_path / "home", server.base_url).items():
            monkeypatch.setenv(name, value)
        run = run_preset(tmp_path, folder, "gemini")
    assert run.status == outcome, (run.status, run.reason, run.stderr_tail)
    assert str(status) in run.reason


def test_in_the_seats_sandbox_the_cli_keeps_its_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seat's sandbox hides the user's home: the CLI's settings (its auth type) are copied
    into a home of the seat's own. Before, Gemini CLI exited 41 ("Invalid auth method")."""
    folder = calc_work(tmp_path)
    with GeminiServer(script(folder)) as server:
        for name, value in gemini_home(tmp_path / "home", server.base_url).items():
            monkeypatch.setenv(name, value)
        (tmp_path / "home" / ".gemini" / "notes.txt").write_text("the user's own", "utf-8")
        box = seat_box(Seat("gemini", "google", PRESETS["gemini"].generate), "candidate",
                       required=True)  # fmt: skip
        run = run_preset(tmp_path, folder, "gemini", confinement=box)
    assert run.status == "ok", (run.reason, run.stderr_tail)
    assert (folder / "calc.py").read_text("utf-8") == CALC
    copied = tmp_path / "private" / "candidate-home" / ".gemini" / "settings.json"
    assert json.loads(copied.read_text("utf-8"))["security"]["auth"]["selectedType"]
    assert not (tmp_path / "private" / "candidate-home" / ".gemini" / "notes.txt").exists()
