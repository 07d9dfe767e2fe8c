"""Real git repositories in temporary folders and the real CLI run as a subprocess."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_loopcontract.verdict import validate_verdict

ROOT = Path(__file__).resolve().parent.parent


EXAMPLE = ROOT / "examples" / "slugify"


GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(cwd: Path, *args: str) -> str:
    import os

    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def init_repo(path: Path) -> Path:
    git(path, "init", "-q", "-b", "main")
    (path / ".gitignore").write_text(".loop-contract/\n__pycache__/\n", "utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


def load_candidates() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "lc_candidates", ROOT / "examples" / "candidates.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CLIResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(cwd: Path, *args: str, timeout: float = 300) -> CLIResult:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CLIResult(proc)


def assert_valid_verdict(document: dict[str, Any]) -> None:
    errors = validate_verdict(document)
    assert not errors, errors
