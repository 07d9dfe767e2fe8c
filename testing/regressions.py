"""A baselined project and a change to it that breaks eleven tests that passed at baseline, in
every phase (a fixture's setup, a fixture's teardown, the test's call), while its acceptance
test still fails: where the tests of how failures are named (the terminal summary, the Stop
hook's reason, the loop's prompt) start."""

from __future__ import annotations

from pathlib import Path

from testing.repos import git
from testing.verifier_project import BUGGY, baseline_ok, make_repo

__all__ = [
    "ACCEPTANCE_LINE",
    "BROKEN_CORE",
    "FIRST_REGRESSIONS",
    "MORE_REGRESSIONS",
    "REGRESSIONS",
    "break_the_tests",
    "regressed_repo",
]

# The mini project's core (triple() is the bug the contract asks to fix) with two helpers the
# new fixtures call.
CORE = BUGGY + "\n\ndef connect():\n    return 'ok'\n\n\ndef close():\n    return 'ok'\n"

# double() off by one and both helpers answering "no": every test but the acceptance one
# breaks, and triple() is still not fixed.
BROKEN_CORE = CORE.replace("x + x", "x + x + 1").replace("return 'ok'", "return 'no'")

MORE_TESTS = """\
import pytest

from mini.core import close, connect, double


@pytest.fixture
def conn():
    assert connect() == "ok", "could not connect"
    yield 1


@pytest.fixture
def closing():
    yield 1
    assert close() == "ok", "close failed"


def test_a_setup(conn):
    assert conn == 1


def test_b_teardown(closing):
    assert closing == 1


@pytest.mark.parametrize("n", range(8))
def test_double(n):
    assert double(n) == 2 * n
"""

REGRESSIONS = 11  # test_core.py::test_double, test_a_setup, test_b_teardown, 8 test_double[n]

# The first five regressions as every text names them: outcome, node id, phase, first error line.
FIRST_REGRESSIONS = (
    "failed: tests/test_core.py::test_double (call): assert 5 == 4",
    "error: tests/test_more.py::test_a_setup (setup): AssertionError: could not connect",
    "error: tests/test_more.py::test_b_teardown (teardown): AssertionError: close failed",
    "failed: tests/test_more.py::test_double[0] (call): assert 1 == (2 * 0)",
    "failed: tests/test_more.py::test_double[1] (call): assert 3 == (2 * 1)",
)
MORE_REGRESSIONS = "... and 6 more"

# The DoD item's acceptance test, still failing.
ACCEPTANCE_LINE = "failed: tests/test_core.py::test_triple (call): assert 4 == 6"


def regressed_repo(root: Path, contract_extra: str = "") -> Path:
    """The mini project with the phase tests, committed and baselined (every test but the
    acceptance test passes); ``contract_extra`` is appended to its contract first."""
    repo = make_repo(
        root, commit=False, **{"src/mini/core.py": CORE, "tests/test_more.py": MORE_TESTS}
    )
    if contract_extra:
        contract = repo / "loopcontract.yml"
        contract.write_text(contract.read_text("utf-8") + contract_extra, "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    baseline_ok(repo)
    return repo


def break_the_tests(repo: Path) -> None:
    """The change under verification: it breaks every test that passed at baseline."""
    (repo / "src/mini/core.py").write_text(BROKEN_CORE, "utf-8")
