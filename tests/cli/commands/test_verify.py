"""``loop-contract verify``'s terminal summary, read as a person reads it."""

from __future__ import annotations

from pathlib import Path

from testing.regressions import (
    ACCEPTANCE_LINE,
    FIRST_REGRESSIONS,
    MORE_REGRESSIONS,
    REGRESSIONS,
    break_the_tests,
    regressed_repo,
)
from testing.verifier_project import cli, no_traceback


def test_the_summary_names_the_first_regressions_with_phase_and_error(tmp_path: Path) -> None:
    """A change breaks eleven tests that passed at baseline: the summary names the first five
    under the gate (outcome, id, phase, the error's first line), counts the rest, and names
    the acceptance test still failing under its DoD item the same way."""
    repo = regressed_repo(tmp_path / "mini")
    break_the_tests(repo)

    result = cli(repo, "verify")
    no_traceback(result)
    assert result.returncode == 20, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    gate = next(i for i, line in enumerate(lines) if "hard gate no-regressions: FAIL" in line)
    assert f"{REGRESSIONS} regressions" in lines[gate]
    named = [line.strip() for line in lines[gate + 1 : gate + 7]]
    assert named == [*FIRST_REGRESSIONS, MORE_REGRESSIONS], result.stdout
    item = next(i for i, line in enumerate(lines) if "[ ] triple:" in line)
    assert lines[item + 1].strip() == ACCEPTANCE_LINE, result.stdout
    assert all(len(line) <= 170 for line in lines), result.stdout
