"""A small calc project with a contract and the real CLI over it: the reward-hack tests
build on it."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testing.repos import assert_valid_verdict, git, init_repo, run_cli

CONTRACT = """\
version: 1
id: calc-add
goal: add() adds.
mode: fix
dod:
  - id: add
    text: add() returns the sum.
    tests: [tests/test_core.py::test_add]
{extra}"""


TESTS = """\
from calc.core import add


def test_add():
    assert add(20, 22) == 42


def test_add_zero():
    assert add(7, 0) == 7
"""


BROKEN = "def add(a, b):\n    return a - b\n"


HONEST = "def add(a, b):\n    return a + b\n"


# A harmless test collected before test_core.py: it imports the candidate's code first, so a
# cheat installed at import is in place before the acceptance test's module loads.
FIRST_IMPORT = {
    "tests/test_a_first.py": "from calc import core\n\n\n"
    "def test_loaded():\n    assert core is not None\n"
}


def make_project(
    root: Path,
    extra: str = "",
    tests: str = TESTS,
    code: str = BROKEN,
    files: Mapping[str, str] | None = None,
    *,
    take_baseline: bool = True,
) -> Path:
    """The calc project in a fresh repository; ``extra`` is appended to the contract's only
    DoD item (``hidden:`` or other keys) or the contract itself; ``files`` adds more files
    (relative path: text); the baseline is taken unless ``take_baseline`` is false."""
    (root / "src/calc").mkdir(parents=True)
    (root / "tests").mkdir()
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    (root / "src/calc/__init__.py").write_text("", "utf-8")
    (root / "src/calc/core.py").write_text(code, "utf-8")
    (root / "tests/test_core.py").write_text(tests, "utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["src"]\n'
        '[tool.coverage.run]\nsource = ["src"]\n',
        "utf-8",
    )
    (root / "loopcontract.yml").write_text(CONTRACT.format(extra=extra), "utf-8")
    init_repo(root)
    if take_baseline:
        baseline(root)
    return root


def baseline(root: Path) -> None:
    result = run_cli(root, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr


def reset(root: Path) -> None:
    git(root, "checkout", "-q", "--", ".")
    git(root, "clean", "-qfd", "-e", ".loop-contract")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), "utf-8")


def verify(root: Path) -> tuple[int, dict[str, Any]]:
    result = run_cli(root, "verify", "--json")
    assert "Traceback" not in result.stderr, result.stderr
    verdict = result.json()
    assert_valid_verdict(verdict)
    assert verdict["exit_code"] == result.returncode
    return result.returncode, verdict


def finding_codes(verdict: dict[str, Any]) -> set[str]:
    return {f["code"] for f in verdict["tamper"]["findings"] if not f["allowed"]}


def pending(verdict: dict[str, Any]) -> list[str]:
    return [r["message"] for r in verdict["reasons"] if r["code"] == "checkpoint_pending"]


def checks(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in verdict["tamper"].get("checks", [])}
