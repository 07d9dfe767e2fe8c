"""What the agent CLIs' Stop hook answers, read from the real hook command's output."""

from __future__ import annotations

import json
from pathlib import Path

from testing.hooks import run_hook, stop
from testing.regressions import (
    ACCEPTANCE_LINE,
    FIRST_REGRESSIONS,
    MORE_REGRESSIONS,
    break_the_tests,
    regressed_repo,
)


def test_a_blocked_stop_names_the_first_regressions_with_phase_and_error(
    tmp_path: Path,
) -> None:
    """The agent's change broke eleven tests that passed at baseline: the reason Claude Code
    reads names the first five (outcome, id, phase, the error's first line) under the failed
    gate, counts the rest, and names the acceptance test still failing."""
    repo = regressed_repo(tmp_path / "mini")
    break_the_tests(repo)

    result = run_hook(repo, "claude-stop", stop(repo))
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["decision"] == "block"
    reason = answer["reason"]
    expected = "\n".join(f"    {line}" for line in (*FIRST_REGRESSIONS, MORE_REGRESSIONS))
    assert f"no-regressions: 11 regressions (11 tests that passed at baseline)\n{expected}\n" in (
        reason
    ), reason
    assert f"[ ] triple: triple(x) is three times x.\n    {ACCEPTANCE_LINE}\n" in reason, reason
