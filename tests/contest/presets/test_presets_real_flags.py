"""Every flag a preset passes exists in the pinned release of its CLI, as that release's own
``--help`` lists it: a flag a CLI removed (Codex 0.171 dropped ``--full-auto``) fails here,
not in a user's first contest."""

from __future__ import annotations

import re
import subprocess

import pytest

from pytest_loopcontract.contest.presets import PRESETS
from testing.agent_clis import AIDER, CLAUDE_CODE, CODEX, GEMINI, PINNED, require_cli

CASES = [
    ("claude-code", CLAUDE_CODE, ["--help"]),
    ("codex", CODEX, ["exec", "--help"]),
    ("gemini", GEMINI, ["--help"]),
    ("aider", AIDER, ["--help"]),
]


@pytest.mark.parametrize(("preset", "package", "help_args"), CASES)
def test_every_flag_of_the_preset_is_one_the_cli_has(
    preset: str, package: str, help_args: list[str]
) -> None:
    program = require_cli(package)
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True)
    assert PINNED[package] in version.stdout, version.stdout
    shown = subprocess.run([str(program), *help_args], capture_output=True, text=True).stdout
    known = set(re.findall(r"(--[a-zA-Z][\w-]*)", shown))
    chosen = PRESETS[preset]
    for argv in (chosen.generate, chosen.judge):
        assert argv is not None
        flags = [word for word in argv if word.startswith("--")]
        assert flags and set(flags) <= known, (preset, sorted(set(flags) - known))


def test_the_old_codex_flag_is_gone_from_the_release() -> None:
    shown = subprocess.run(
        [str(require_cli(CODEX)), "exec", "--help"], capture_output=True, text=True
    ).stdout
    assert "--full-auto" not in shown and "--sandbox" in shown
