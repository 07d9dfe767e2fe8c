"""The real agent CLIs, as ``.ci/run`` installs them: pinned versions in a folder of the checkout.

Why pinned and local: a preset is proven against one release of its CLI (flags come and go:
Codex removed ``--full-auto``), and installing into ``.tools/`` keeps the machine's global
folders untouched. A test that needs a CLI asks :func:`require_cli`: missing, it skips with
the install command, or fails under ``LOOP_CONTRACT_REQUIRE_TOOLS=1`` (CI).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from testing.act_runner import require_tool

__all__ = ["CLAUDE_CODE", "CODEX", "GEMINI", "NPM_BIN", "PINNED", "require_cli"]

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / ".tools" / "npm" / "node_modules" / ".bin"
CLAUDE_CODE = "@anthropic-ai/claude-code"
CODEX = "@openai/codex"
GEMINI = "@google/gemini-cli"
PINNED = {CLAUDE_CODE: "2.1.332", CODEX: "0.171.0", GEMINI: "0.61.0"}
"""The releases the presets are proven on (``.ci/run`` installs exactly these)."""
_PROGRAMS = {CLAUDE_CODE: "claude", CODEX: "codex", GEMINI: "gemini"}


def require_cli(package: str) -> Path:
    """The installed program of ``package`` (the checkout's ``.tools`` first, then ``PATH``)."""
    program = _PROGRAMS[package]
    local = NPM_BIN / program
    found = str(local) if local.exists() else shutil.which(program)
    if found is None:
        install = f"npm install --prefix .tools/npm {package}@{PINNED[package]}"
        require_tool(f"{program} ({package}) is not installed ({install})")
    assert found is not None
    return Path(found)
