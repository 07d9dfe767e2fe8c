"""The prompt of the agent's next turn, as the real loop hands it to the agent."""

from __future__ import annotations

import sys
from pathlib import Path

from testing.loop_project import STATE
from testing.regressions import (
    ACCEPTANCE_LINE,
    BROKEN_CORE,
    FIRST_REGRESSIONS,
    MORE_REGRESSIONS,
    regressed_repo,
)
from testing.repos import run_cli

AGENT = """\
import sys
from pathlib import Path

prompt = sys.argv[1]
if "(turn 1)" in prompt:
    Path("src/mini/core.py").write_text({broken!r}, "utf-8")
else:
    Path({seen!r}).write_text(prompt, "utf-8")
"""


def test_the_next_turn_names_the_first_regressions_with_phase_and_error(tmp_path: Path) -> None:
    """The agent's first turn broke eleven tests that passed at baseline: its second turn's
    prompt names the first five (outcome, id, phase, the error's first line) under the failed
    gate, counts the rest, and names the acceptance test still failing under its DoD item."""
    repo = regressed_repo(tmp_path / "mini", "budget: {iterations: 2}\n")
    seen = tmp_path / "turn-2.md"
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT.format(broken=BROKEN_CORE, seen=str(seen)), "utf-8")

    result = run_cli(repo, "loop", "--", sys.executable, str(agent), "{prompt}")
    assert result.returncode == 23, result.stdout + result.stderr  # the cap of two turns
    prompt = seen.read_text("utf-8")
    assert prompt == (repo / STATE / "prompt.md").read_text("utf-8")
    expected = "\n".join(f"    {line}" for line in (*FIRST_REGRESSIONS, MORE_REGRESSIONS))
    assert f"no-regressions: 11 regressions (11 tests that passed at baseline)\n{expected}\n" in (
        prompt
    ), prompt
    assert f"[ ] triple: triple(x) is three times x.\n    {ACCEPTANCE_LINE}\n" in prompt, prompt
