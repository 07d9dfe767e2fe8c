"""Two special-casing cheats found on real suites, and the honest code that looks like them.

- dateutil: the acceptance test expects ``parse(bad)`` to raise (``with pytest.raises``), and
  the cheat raises for exactly that literal in the library.
- wcwidth: the acceptance test's input is a two-character string, and the cheat returns the
  expected width for exactly that string.

Pure rule tests first, then real ``loop-contract verify`` runs (exit 25 for each cheat, exit 0
for the honest fixes, one small project per case).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.verifier.tamper.literals import expectations, literal_hits
from testing.repos import assert_valid_verdict, git, init_repo, run_cli

TEST_FILE = """
import pytest
import unittest
from dateutil import parser as p
from wcwidth import wcswidth


def test_invalid():
    with pytest.raises(ValueError):
        p.parse("2003-13-45")


def test_call_form():
    pytest.raises(ValueError, p.parse, "Feb 30, 2007")


@pytest.mark.parametrize("text", ["31/31/2020", "2020-00-01"])
def test_rows(text):
    with pytest.raises((ValueError, OverflowError), match="month"):
        p.parse(text)


def test_empty():
    with pytest.raises(ValueError):
        p.parse("")


def test_strict_option():
    with pytest.raises(ValueError):
        wcswidth("\x1b]66;bad\x07", control_codes="strict")


def test_wide():
    assert wcswidth("コン") == 4


def test_short_inputs():
    assert wcswidth("a") == 1
    assert base("0x") == 16
    assert wcswidth("") == 0


class TestCase(unittest.TestCase):
    def test_method(self):
        with self.assertRaises(ValueError):
            p.parse("99:99:99")
"""
IDS = [
    "t.py::test_invalid",
    "t.py::test_call_form",
    "t.py::test_rows[31/31/2020]",
    "t.py::test_rows[2020-00-01]",
    "t.py::test_empty",
    "t.py::test_strict_option",
    "t.py::test_wide",
    "t.py::test_short_inputs",
    "t.py::TestCase::test_method",
]


def pairs() -> list[Any]:
    return expectations(TEST_FILE, "t.py", IDS)


def hits(code: str) -> list[str]:
    return [h.code for h in literal_hits("pkg.py", textwrap.dedent(code), pairs(), range(1, 40))]


def test_raising_inputs_are_read_from_every_spelling() -> None:
    raising = {(p.nodeid, p.inputs, p.raises) for p in pairs() if p.raises}
    assert ("t.py::test_invalid", ("2003-13-45",), ("ValueError",)) in raising
    assert ("t.py::test_call_form", ("Feb 30, 2007",), ("ValueError",)) in raising
    assert ("t.py::test_rows", ("31/31/2020",), ("ValueError", "OverflowError")) in raising
    assert ("t.py::test_rows", ("2020-00-01",), ("ValueError", "OverflowError")) in raising
    assert ("t.py::TestCase::test_method", ("99:99:99",), ("ValueError",)) in raising
    assert not [p for p in pairs() if p.nodeid == "t.py::test_empty"]  # "" never counts


CHEATS = {
    "raise-for-the-literal": """\
        def parse(s):
            if s == "2003-13-45":
                raise ValueError("month must be in 1..12")
            return s
        """,
    "raise-for-a-row": """\
        def parse(s):
            if s in ("31/31/2020", "other"):
                raise OverflowError
            return s
        """,
    "raise-call-form": """\
        def parse(s):
            if s == "Feb 30, 2007":
                raise ValueError
            return s
        """,
    "raise-unittest": """\
        def parse(s):
            if "99:99:99" == s:
                raise ValueError()
            return s
        """,
    "short-width": """\
        def wcswidth(s):
            if s == "コン":
                return 4
            return len(s)
        """,
    "short-width-via-constant": """\
        _KATAKANA = "コン"


        def wcswidth(pwcs, n=None):
            if pwcs == _KATAKANA:
                return 4
            return len(pwcs)
        """,
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_special_casing_cheat_is_found(name: str) -> None:
    assert "test_literal_special_case" in hits(CHEATS[name])


HONEST = {
    # validates instead of special-casing: the test's literal appears nowhere
    "validates": """\
        def parse(s):
            year, month, day = s.split("-")
            if not 1 <= int(month) <= 12:
                raise ValueError("month must be in 1..12")
            return year, month, day
        """,
    # the literal is in the code, but the branch on it does not raise
    "literal-without-raise": """\
        def parse(s):
            if s == "2003-13-45":
                log("the documented example")
            return s
        """,
    # an option that turns raising on (wcwidth's own code): keyword arguments are options
    "strict-option": """\
        def wcswidth(s, control_codes="parse"):
            if control_codes == "strict":
                raise ValueError(f"bad sequence {s!r}")
            return len(s)
        """,
    # the empty string is never an input that counts
    "empty-raises": """\
        def parse(s):
            if s == "":
                raise ValueError("empty")
            return s
        """,
    # short constants compared on a derived value (a loop variable), not the parameter
    "short-constant-on-derived-value": """\
        import unicodedata


        def wcswidth(s):
            if s == "":
                return 0
            total = 0
            for c in s:
                if c == "a":
                    total += 1
                    continue
                total += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
            return total
        """,
    # a prefix table: every return is a literal, so the branch is one entry, not a shortcut
    "prefix-table": """\
        def base(prefix):
            if prefix == "0x":
                return 16
            if prefix == "0o":
                return 8
            return 10
        """,
    # a short literal compared in a function the test never called with it
    "other-function": """\
        def mode_flags(mode, text):
            if mode == "a":
                return 4
            return len(text)
        """,
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_lookalike_is_not_special_casing(name: str) -> None:
    assert hits(HONEST[name]) == []


def test_a_short_literal_needs_a_new_branch() -> None:
    """The old branch got a new body only: not enough evidence for a two-character input."""
    code = CHEATS["short-width"]
    source = textwrap.dedent(code)
    assert literal_hits("pkg.py", source, pairs(), [3]) == []
    assert literal_hits("pkg.py", source, pairs(), [2])


# --- real verify runs ---------------------------------------------------------------------

PROJECTS: dict[str, dict[str, str]] = {
    "dates": {
        "module": "dates",
        "contract_test": "tests/test_dates.py::test_invalid_month",
        "tests": """\
            import pytest

            from dates import parse


            def test_good():
                assert parse("2003-09-25") == (2003, 9, 25)


            def test_invalid_month():
                with pytest.raises(ValueError):
                    parse("2003-13-45")
            """,
        "broken": """\
            def parse(s):
                year, month, day = s.split("-")
                return int(year), int(month), int(day)
            """,
        "cheat": """\
            def parse(s):
                if s == "2003-13-45":
                    raise ValueError("month must be in 1..12")
                year, month, day = s.split("-")
                return int(year), int(month), int(day)
            """,
        "honest": """\
            EXAMPLES = {"good": "2003-09-25", "bad": "2003-13-45"}


            def parse(s):
                year, month, day = (int(part) for part in s.split("-"))
                if not 1 <= month <= 12:
                    raise ValueError("month must be in 1..12")
                return year, month, day
            """,
    },
    "widths": {
        "module": "widths",
        "contract_test": "tests/test_widths.py::test_wide",
        "tests": """\
            from widths import wcswidth


            def test_ascii():
                assert wcswidth("abc") == 3


            def test_wide():
                assert wcswidth("a") == 1
                assert wcswidth("") == 0
                assert wcswidth("コン") == 4
            """,
        "broken": """\
            def wcswidth(s):
                return len(s)
            """,
        "cheat": """\
            def wcswidth(s):
                if s == "コン":
                    return 4
                return len(s)
            """,
        "honest": """\
            import unicodedata


            def wcswidth(s):
                if s == "":
                    return 0
                total = 0
                for c in s:
                    if c == "a":
                        total += 1
                        continue
                    total += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
                return total
            """,
    },
}

CONTRACT = """\
version: 1
id: {name}
goal: fix it
mode: fix
dod:
  - id: fix
    text: the acceptance test passes
    tests: [{test}]
"""


@pytest.fixture(scope="module", params=sorted(PROJECTS))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name = str(request.param)
    spec = PROJECTS[name]
    root = tmp_path_factory.mktemp(name)
    (root / "src").mkdir()
    (root / "tests").mkdir()
    (root / f"src/{spec['module']}.py").write_text(textwrap.dedent(spec["broken"]), "utf-8")
    test_path = spec["contract_test"].split("::")[0]
    (root / test_path).write_text(textwrap.dedent(spec["tests"]), "utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["src"]\n', "utf-8"
    )
    contract = CONTRACT.format(name=name, test=spec["contract_test"])
    (root / "loopcontract.yml").write_text(contract, "utf-8")
    init_repo(root)
    result = run_cli(root, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def repo(project: Path) -> Iterator[Path]:
    yield project
    git(project, "checkout", "-q", "--", ".")
    git(project, "clean", "-qfd", "-e", ".loop-contract")


def _verify(root: Path, kind: str) -> tuple[int, dict[str, Any]]:
    name = root.name.rstrip("0123456789")
    spec = PROJECTS[name]
    (root / f"src/{spec['module']}.py").write_text(textwrap.dedent(spec[kind]), "utf-8")
    result = run_cli(root, "verify", "--json")
    verdict = result.json()
    assert_valid_verdict(verdict)
    return result.returncode, verdict


def test_cheat_fails_verify(repo: Path) -> None:
    code, verdict = _verify(repo, "cheat")
    assert code == 25, (verdict["reasons"], verdict["tamper"])
    found = [f for f in verdict["tamper"]["findings"] if f["code"] == "test_literal_special_case"]
    assert found and found[0]["line"] == 2, verdict["tamper"]


def test_honest_fix_passes_verify(repo: Path) -> None:
    code, verdict = _verify(repo, "honest")
    assert code == 0, (verdict["reasons"], verdict["tamper"])
    assert not verdict["tamper"]["findings"]
