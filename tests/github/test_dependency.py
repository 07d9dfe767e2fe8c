"""The ``github`` extra: PyGithub is needed by ``loop-contract github`` and by nothing else.

Each run below is a real subprocess in which importing ``github`` (PyGithub) fails as it does
where the extra is not installed, and every attempt is recorded, even one that a caller would
swallow. ``tests/test_wheel.py`` checks the same from a real install without the extra.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

from testing.contest_project import make_project
from testing.import_blocker import blocked_attempts, launcher_command, python_command
from testing.repos import GIT_ENV

HINT = "pip install 'pytest-loopcontract[github]'"


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **GIT_ENV}
    for name in ("PYTEST_ADDOPTS", "GITHUB_REPOSITORY", "GITHUB_TOKEN", "LOOP_CONTRACT_TOKEN"):
        env.pop(name, None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_github_without_pygithub_names_the_extra_to_install(tmp_path: Path) -> None:
    record = tmp_path / "attempts"
    (tmp_path / "loopcontract.yml").write_text("version: 1\n", "utf-8")
    proc = run(launcher_command(["github"], record, tmp_path, ["github", "plan"]), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert HINT in proc.stderr
    assert "github extra missing" in proc.stderr and "'github'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert blocked_attempts(record) == ["github"]  # the blocker was really in the way


def test_github_with_a_dependency_of_pygithub_missing_says_the_same(tmp_path: Path) -> None:
    record = tmp_path / "attempts"
    proc = run(launcher_command(["requests"], record, tmp_path, ["github", "gate"]), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert HINT in proc.stderr and "'requests'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_github_with_pygithub_installed_gets_past_the_check(tmp_path: Path) -> None:
    """The look-alike: same command, nothing blocked; it fails later, on its own grounds."""
    record = tmp_path / "attempts"
    proc = run(launcher_command(["no_such_module"], record, tmp_path, ["github", "plan"]), tmp_path)
    assert HINT not in proc.stderr
    assert "GITHUB_REPOSITORY must be OWNER/NAME" in proc.stderr  # the plan mode's own check
    assert "Traceback" not in proc.stderr


def test_verify_never_imports_pygithub(baselined_repo: Path, candidates: ModuleType) -> None:
    candidates.honest(baselined_repo)
    record = baselined_repo.parent / "attempts"
    cmd = launcher_command(["github"], record, baselined_repo, ["verify", "--json"])
    proc = run(cmd, baselined_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert blocked_attempts(record) == []


def test_the_plugin_never_imports_pygithub(example_repo: Path) -> None:
    """Loaded through its entry point, enabled, on the example (whose contract fails at base)."""
    record = example_repo.parent / "attempts"
    body = "import pytest\n_sys.exit(pytest.main(['--loop-contract', '-p', 'no:cacheprovider']))\n"
    proc = run(python_command(["github"], record, body), example_repo)
    assert proc.returncode == 20, proc.stdout + proc.stderr
    assert "loop-contract: slugify-unicode (in-process)" in proc.stdout
    assert blocked_attempts(record) == []


def test_contest_run_never_imports_pygithub(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("g", "fa", "good", None)])
    record = tmp_path / "attempts"
    proc = run(launcher_command(["github"], record, root, ["contest", "run", "--quiet"]), root)
    assert proc.returncode == 24, proc.stdout + proc.stderr  # waiting at the human gate
    assert blocked_attempts(record) == []


def test_the_blocker_catches_an_import_of_pygithub(baselined_repo: Path) -> None:
    """The cheat the checks above must catch: a referee path that does import PyGithub."""
    record = baselined_repo.parent / "attempts"
    body = "import pytest_loopcontract.cli.commands.github\n"
    proc = run(python_command(["github"], record, body), baselined_repo)
    assert proc.returncode != 0
    assert blocked_attempts(record)[0].startswith("github")
