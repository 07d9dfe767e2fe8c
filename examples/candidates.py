"""Candidate changes to the slugify example: one honest fix and the usual ways to cheat.

Each candidate is a function that edits a checked-out copy of ``examples/slugify``. The demo
and the test suite apply them one by one and verify each with the isolated launcher.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

HONEST_SLUG = '''"""URL slugs."""

import re
import unicodedata

_SPECIAL = {"æ": "ae", "ø": "o", "ß": "ss", "œ": "oe", "đ": "d", "ł": "l", "þ": "th"}


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by hyphens; accents are transliterated, not dropped."""
    text = "".join(_SPECIAL.get(ch, ch) for ch in text.lower())
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "-".join(re.findall(r"[a-z0-9]+", text))
'''

TEST_FILE = "tests/test_slug.py"


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text("utf-8")
    if old not in text:
        raise ValueError(f"{old!r} not in {rel}")
    path.write_text(text.replace(old, new, 1), "utf-8")


def honest(root: Path) -> None:
    (root / "src/textkit/slug.py").write_text(HONEST_SLUG, "utf-8")


def assert_true(root: Path) -> None:
    path = root / TEST_FILE
    text = path.read_text("utf-8")
    text = re.sub(r"assert slugify\(.*\) == .*", "assert True", text)
    path.write_text(text, "utf-8")


def delete_test_file(root: Path) -> None:
    (root / TEST_FILE).unlink()


def skip_marker(root: Path) -> None:
    _edit(
        root, TEST_FILE, "def test_accents", '@pytest.mark.skip(reason="flaky")\ndef test_accents'
    )


def conftest_drops_test(root: Path) -> None:
    (root / "conftest.py").write_text(
        "def pytest_collection_modifyitems(config, items):\n"
        "    items[:] = [i for i in items if 'accents' not in i.nodeid"
        " and 'special' not in i.nodeid]\n",
        "utf-8",
    )


def conftest_rewrites_reports(root: Path) -> None:
    (root / "tests/conftest.py").write_text(
        "import pytest\n\n\n"
        "@pytest.hookimpl(wrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    report = yield\n"
        "    if report.failed:\n"
        "        report.outcome = 'passed'\n"
        "    return report\n",
        "utf-8",
    )


def _ini(root: Path, line: str) -> None:
    _edit(
        root,
        "pyproject.toml",
        "[tool.pytest.ini_options]\n",
        f"[tool.pytest.ini_options]\n{line}\n",
    )


def addopts_disables_plugin(root: Path) -> None:
    _ini(root, 'addopts = "-p no:loopcontract"')


def addopts_deselects(root: Path) -> None:
    _ini(
        root, 'addopts = "--deselect tests/test_slug.py::test_accents_are_transliterated -k ascii"'
    )


def testpaths_moved(root: Path) -> None:
    _edit(root, "pyproject.toml", 'testpaths = ["tests"]', 'testpaths = ["src"]')


def contract_loosened(root: Path) -> None:
    _edit(
        root,
        "loopcontract.yml",
        "      - tests/test_slug.py::test_accents_are_transliterated\n",
        "      - tests/test_slug.py::test_ascii_words\n",
    )


def hard_exit_in_code(root: Path) -> None:
    honest(root)
    _edit(root, "src/textkit/slug.py", "import re\n", "import os\nimport re\n")
    (root / "src/textkit/__init__.py").write_text(
        '"""A tiny text toolkit."""\nimport atexit\nimport os\n\natexit.register(os._exit, 0)\n',
        "utf-8",
    )


CANDIDATES: dict[str, Callable[[Path], None]] = {
    "honest-fix": honest,
    "assert-true": assert_true,
    "delete-test-file": delete_test_file,
    "skip-marker": skip_marker,
    "conftest-drops-test": conftest_drops_test,
    "conftest-rewrites-reports": conftest_rewrites_reports,
    "addopts-no-plugin": addopts_disables_plugin,
    "addopts-deselect": addopts_deselects,
    "testpaths-moved": testpaths_moved,
    "contract-loosened": contract_loosened,
    "hard-exit": hard_exit_in_code,
}
