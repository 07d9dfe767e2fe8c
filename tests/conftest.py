"""Shared fixtures: real git repositories in temporary folders, the real CLI in subprocesses."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_loopcontract.verdict import validate_verdict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "slugify"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def pytest_configure(config: pytest.Config) -> None:
    """Under CI (``LOOP_CONTRACT_REQUIRE_TOOLS=1``) a missing ``tests/data/github`` stops the
    run at once: the GitHub tests must never pass by skipping."""
    import os

    from github_data import DATA, missing

    absent = missing()
    if absent and os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
        raise pytest.UsageError(f"recorded GitHub data missing under {DATA}: {', '.join(absent)}")


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


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "slugify"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", ".loop-contract"))
    return init_repo(repo)


@pytest.fixture(scope="session")
def candidates() -> ModuleType:
    return load_candidates()


@pytest.fixture
def cli() -> Callable[..., CLIResult]:
    return run_cli


@pytest.fixture
def baselined_repo(example_repo: Path) -> Iterator[Path]:
    result = run_cli(example_repo, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr
    yield example_repo
