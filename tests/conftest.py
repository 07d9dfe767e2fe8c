"""Shared fixtures: real git repositories in temporary folders, the real CLI in subprocesses."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from testing.repos import (
    EXAMPLE,
    CLIResult,
    init_repo,
    load_candidates,
    run_cli,
)

# Property tests check behaviour, not this machine's speed: a loaded CI runner (or parallel
# workers) must not fail them for slow input generation or a slow example.
settings.register_profile(
    "loopcontract", suppress_health_check=[HealthCheck.too_slow], deadline=None
)
settings.load_profile("loopcontract")


def pytest_configure(config: pytest.Config) -> None:
    """Under CI (``LOOP_CONTRACT_REQUIRE_TOOLS=1``) a missing ``tests/data/github`` stops the
    run at once: the GitHub tests must never pass by skipping."""
    import os

    from testing.github_data import DATA, missing

    absent = missing()
    if absent and os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
        raise pytest.UsageError(f"recorded GitHub data missing under {DATA}: {', '.join(absent)}")


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


@pytest.fixture(scope="session")
def _baselined_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its baseline taken, once per session (per xdist worker)."""
    repo = tmp_path_factory.mktemp("template") / "slugify"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", ".loop-contract"))
    init_repo(repo)
    result = run_cli(repo, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr
    return repo


@pytest.fixture
def baselined_repo(tmp_path: Path, _baselined_template: Path) -> Iterator[Path]:
    """A copy of the baselined example: the baseline names no path of its own, so a copy
    verifies as the original would, without each test paying for a baseline run."""
    repo = tmp_path / "slugify"
    shutil.copytree(_baselined_template, repo, symlinks=True)
    yield repo
