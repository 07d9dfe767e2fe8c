"""A baselined copy of the slugify example for loop tests: the fast contract (no measured
gates), built for real once per contract text and copied after that."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import yaml

from testing.repos import EXAMPLE, ROOT, init_repo, run_cli

__all__ = ["AGENT_PRELUDE", "EXAMPLES", "STATE", "fast_contract", "make_repo", "write_agent"]

STATE = ".loop-contract"
EXAMPLES = ROOT / "examples"


def fast_contract(budget: str = "{iterations: 4, usd: 1.0}", extra: str = "") -> str:
    """The example's contract with its DoD and hard gates, without measured gates (speed),
    and with ``budget`` in place of the example's budget; ``extra`` is appended as is."""
    text = (EXAMPLE / "loopcontract.yml").read_text("utf-8")
    doc = yaml.safe_load(text)
    assert doc["gates"]["hard"] and doc["dod"], "the example lost its DoD or hard gates"
    text = re.sub(r"\n  measured:\n(?:    .*\n|      .*\n)*", "\n", text)
    text = re.sub(r"\nbudget:\n(?:  .*\n)*", "\n", text)
    text = text.rstrip("\n") + f"\nbudget: {budget}\n" + extra
    doc = yaml.safe_load(text)
    assert "measured" not in doc["gates"], text
    assert doc["dod"] == yaml.safe_load((EXAMPLE / "loopcontract.yml").read_text())["dod"]
    return text


_TEMPLATES: dict[str, Path] = {}  # contract text -> a baselined repository to copy


def make_repo(
    base: Path, budget: str = "{iterations: 4, usd: 1.0}", extra: str = "", contract: str = ""
) -> Path:
    """A git repository of the slugify example with the fast contract, committed and
    baselined (``loop-contract baseline``), at ``base / "slugify"``.

    The first repository of each contract (per worker) is built and baselined for real and
    kept as a template beside it; later ones copy it, ``.git`` and baseline included (the
    baseline records no absolute paths), which keeps the suite quick.
    """
    text = contract or fast_contract(budget, extra)
    repo = base / "slugify"
    template = _TEMPLATES.get(text)
    if template is None or not template.is_dir():
        template = base / f"template-{len(_TEMPLATES)}"
        shutil.copytree(EXAMPLE, template, ignore=shutil.ignore_patterns("__pycache__", STATE))
        (template / "loopcontract.yml").write_text(text, "utf-8")
        init_repo(template)
        result = run_cli(template, "baseline")
        assert result.returncode == 0, result.stdout + result.stderr
        _TEMPLATES[text] = template
    shutil.copytree(template, repo, symlinks=True)
    assert not (repo / STATE / "history.jsonl").exists()
    return repo


AGENT_PRELUDE = f"""\
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, {str(EXAMPLES)!r})
from candidates import CANDIDATES

SLUG = Path("src/textkit/slug.py")


def turn_of(text):
    match = re.search(r"\\(turn (\\d+)\\)", text)
    return int(match.group(1)) if match else 1


def fix():
    CANDIDATES["honest-fix"](Path("."))


def flail(turn):
    text = SLUG.read_text("utf-8")
    SLUG.write_text(re.sub(r"\\n# tried: .*\\n?$", "", text) + f"\\n# tried: approach {{turn}}\\n")


def say(path, text):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
"""


def write_agent(tmp_path: Path, name: str, body: str) -> Path:
    """An agent script outside the repository (so it is not part of the candidate's diff)."""
    folder = tmp_path / "agents"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(AGENT_PRELUDE + "\n\n" + textwrap.dedent(body), "utf-8")
    return path
