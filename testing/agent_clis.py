"""The real agent CLIs, as ``.ci/run`` installs them: pinned versions in a folder of the checkout.

Why pinned and local: a preset is proven against one release of its CLI (flags come and go:
Codex removed ``--full-auto``), and installing into ``.tools/`` keeps the machine's global
folders untouched. A test that needs a CLI asks :func:`require_cli`: missing, it skips with
the install command, or fails under ``LOOP_CONTRACT_REQUIRE_TOOLS=1`` (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from testing.act_runner import require_tool

if TYPE_CHECKING:
    from pytest_loopcontract.contest.seat_model import SeatRun
    from pytest_loopcontract.verifier.sandbox import Confinement

__all__ = [
    "CALC",
    "CALC_TEST",
    "CLAUDE_CODE",
    "CODEX",
    "GEMINI",
    "NPM_BIN",
    "PINNED",
    "calc_work",
    "codex_home",
    "gemini_home",
    "require_cli",
    "run_preset",
]

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / ".tools" / "npm" / "node_modules" / ".bin"
CLAUDE_CODE = "@anthropic-ai/claude-code"
CODEX = "@openai/codex"
GEMINI = "@google/gemini-cli"
AIDER = "aider-chat"
PINNED = {CLAUDE_CODE: "2.1.332", CODEX: "0.171.0", GEMINI: "0.61.0", AIDER: "0.86.2"}
"""The releases the presets are proven on (``.ci/run`` installs exactly these: the npm
packages into ``.tools/npm``, Aider from PyPI into its own virtual environment ``.tools/aider``
since it pins dozens of packages of its own)."""
_PROGRAMS = {CLAUDE_CODE: "claude", CODEX: "codex", GEMINI: "gemini", AIDER: "aider"}
AIDER_BIN = ROOT / ".tools" / "aider" / "bin"


def require_cli(package: str) -> Path:
    """The installed program of ``package`` (the checkout's ``.tools`` first, then ``PATH``)."""
    program = _PROGRAMS[package]
    local = (AIDER_BIN if package == AIDER else NPM_BIN) / program
    found = str(local) if local.exists() else shutil.which(program)
    if found is None:
        install = f"npm install --prefix .tools/npm {package}@{PINNED[package]}"
        if package == AIDER:
            pinned = f"{package}=={PINNED[package]}"
            install = f"python3 -m venv .tools/aider && .tools/aider/bin/pip install {pinned}"
        require_tool(f"{program} ({package}) is not installed ({install})")
    assert found is not None
    return Path(found)


def codex_home(folder: Path, base_url: str, *, retries: int | None = None) -> dict[str, str]:
    """A ``$CODEX_HOME`` in ``folder`` whose provider is the scripted server, and the
    environment that selects it (``CODEX_HOME``, the key, ``PATH`` with the sandbox helper).

    Codex reads its provider from ``config.toml`` (``wire_api = "responses"``, the only one
    0.171 knows). Its Linux sandbox re-executes the binary under the name
    ``codex-linux-sandbox``, an alias Codex refuses to create when ``CODEX_HOME`` is under
    ``/tmp`` (as a test's is), so the alias is made here and put on ``PATH``. ``retries``
    sets the provider's request and stream retries (0: a 401 or 429 is reported at once).
    """
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        'model = "gpt-scripted"',
        'model_provider = "scripted"',
        "[model_providers.scripted]",
        'name = "scripted"',
        f'base_url = "{base_url}/v1"',
        'env_key = "SCRIPTED_OPENAI_KEY"',
        'wire_api = "responses"',
    ]
    if retries is not None:
        lines += [f"request_max_retries = {retries}", f"stream_max_retries = {retries}"]
    (folder / "config.toml").write_text("\n".join(lines) + "\n", "utf-8")
    aliases = folder / "path"
    aliases.mkdir(exist_ok=True)
    alias = aliases / "codex-linux-sandbox"
    if not alias.exists():
        alias.symlink_to(_codex_binary())
    program = require_cli(CODEX)
    search = os.pathsep.join([str(aliases), str(program.parent), os.environ["PATH"]])
    return {"CODEX_HOME": str(folder), "SCRIPTED_OPENAI_KEY": "sk-scripted", "PATH": search}


def _codex_binary() -> Path:
    """The native binary the ``codex`` launcher runs (the npm package's platform part)."""
    program = require_cli(CODEX).resolve()
    found = sorted(program.parent.parent.parent.glob("codex-linux-*/vendor/*/bin/codex"))
    if not found:
        require_tool(f"the native codex binary is not beside {program}")
    return found[0]


def gemini_home(folder: Path, base_url: str) -> dict[str, str]:
    """A ``$HOME`` in ``folder`` whose Gemini CLI talks to the scripted server, and the
    environment that selects it.

    Gemini CLI 0.61 needs the auth type in its user settings (``gemini-api-key``; without it
    a headless run exits 41) and a trusted workspace (``GEMINI_CLI_TRUST_WORKSPACE``; without
    it exit 55); ``GOOGLE_GEMINI_BASE_URL`` replaces the API's address.
    """
    settings = folder / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    chosen = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    settings.write_text(json.dumps(chosen), "utf-8")
    program = require_cli(GEMINI)
    return {
        "HOME": str(folder),
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": "gemini-scripted",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "PATH": os.pathsep.join([str(program.parent), os.environ["PATH"]]),
    }


CALC = "def add(a, b):\n    return a + b\n"
CALC_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TASK = "Implement calc.add so that test_calc.py passes.\n"


def calc_work(tmp_path: Path) -> Path:
    """A git work folder holding one test of a ``calc.add`` still to be written."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "test_calc.py").write_text(CALC_TEST, "utf-8")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def run_preset(
    tmp_path: Path,
    folder: Path,
    preset: str,
    *,
    task: str = TASK,
    generate: tuple[str, ...] | None = None,
    confinement: Confinement | None = None,
) -> SeatRun:
    """The seat of ``preset`` (or of ``generate``, an argv in its place), run in ``folder`` as
    a contest runs a candidate: prompt file, report file, the preset's reading of the output."""
    from pytest_loopcontract.contest.presets import PRESETS
    from pytest_loopcontract.contest.seat_model import Seat
    from pytest_loopcontract.contest.seats import run_seat

    chosen = PRESETS[preset]
    prompt = tmp_path / "prompt.md"
    prompt.write_text(task, "utf-8")
    seat = Seat(name=preset, family=chosen.family or "any", timeout=120, agent=preset,
                generate=generate or chosen.generate)  # fmt: skip
    return run_seat(
        seat,
        "candidate",
        cwd=folder,
        values={"prompt_file": str(prompt), "workdir": str(folder)},
        report_file=tmp_path / "private" / "report.json",
        confinement=confinement,
    )
