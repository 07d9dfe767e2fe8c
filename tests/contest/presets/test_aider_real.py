"""The ``aider`` preset against the real Aider (the pinned release, from PyPI) and a scripted
Chat Completions server: Aider writes the file the model's reply names, the work tree holds
the candidate and nothing of Aider's own (before: ``.aider*`` added to .gitignore, the chat
history and the repo-map cache left beside the code, all of which a contest captured), the
seat record carries the tokens Aider printed, and a 401 is ``auth_failed``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.contest.presets.aider import _QUIET, GENERATE
from testing.agent_clis import AIDER, CALC, PINNED, calc_work, require_cli, run_preset
from testing.model_servers import ChatCompletionsServer, text

WHOLE_FILE = f"calc.py\n```python\n{CALC}```\n"  # Aider's "whole" edit format


@pytest.fixture
def aider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    program = require_cli(AIDER)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AIDER_MODEL", "openai/gpt-scripted")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
    (tmp_path / "home").mkdir()
    return program


def committed(folder: Path) -> Path:
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
                   cwd=folder, check=True)  # fmt: skip
    return folder


def status(folder: Path) -> list[str]:
    shown = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                           cwd=folder, capture_output=True, text=True, check=True)  # fmt: skip
    return shown.stdout.splitlines()


def test_the_preset_writes_the_candidate_and_nothing_else(
    tmp_path: Path, aider: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = subprocess.run([str(aider), "--version"], capture_output=True, text=True).stdout
    assert PINNED[AIDER] in version, version
    folder = committed(calc_work(tmp_path))
    with ChatCompletionsServer([[text(WHOLE_FILE)]], usage=(1000, 100)) as server:
        monkeypatch.setenv("OPENAI_API_BASE", f"{server.base_url}/v1")
        run = run_preset(tmp_path, folder, "aider")
        asked = [path for path in server.paths if path.endswith("/chat/completions")]
    assert run.status == "ok", (run.reason, run.stderr_tail, run.stdout_text)
    assert (folder / "calc.py").read_text("utf-8") == CALC
    assert [line[3:] for line in status(folder)] == ["calc.py"]  # no .gitignore, history, cache
    assert len(asked) == 1 and run.tokens == 1100  # "Tokens: 1.0k sent, 100 received."
    assert run.cost_usd is None  # no price known for the model: none is made up


def test_the_old_argv_left_aiders_files_in_the_candidate(
    tmp_path: Path, aider: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = committed(calc_work(tmp_path))
    old = GENERATE[:7]  # before: no history files named, none of _QUIET
    assert not set(old) & set(_QUIET)
    with ChatCompletionsServer([[text(WHOLE_FILE)]]) as server:
        monkeypatch.setenv("OPENAI_API_BASE", f"{server.base_url}/v1")
        run_preset(tmp_path, folder, "aider", generate=old)
    changed = status(folder)
    assert " M .gitignore" in changed or "?? .gitignore" in changed
    assert (folder / ".aider.chat.history.md").exists()  # hidden from git by that .gitignore


def test_a_401_is_auth_failed(tmp_path: Path, aider: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = committed(calc_work(tmp_path))
    with ChatCompletionsServer([[text(WHOLE_FILE)]]) as server:
        server.fail_with = 401
        monkeypatch.setenv("OPENAI_API_BASE", f"{server.base_url}/v1")
        run = run_preset(tmp_path, folder, "aider")
    assert run.status == "auth_failed", (run.status, run.reason, run.stdout_text)
