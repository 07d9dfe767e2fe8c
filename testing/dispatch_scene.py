"""The scene of the dispatch tests: the calc contest with three scripted seats, a bare "origin".

Each seat is ``probe.py SEAT BEHAVIOUR PROMPT_FILE WORKDIR PROBE_DIR``: it writes calc.py by
its behaviour (``good``, ``slow`` or ``wrong``) and leaves in ``PROBE_DIR/<seat>-<n>.json``
what it saw: its prompt, and which of the variables a seat must or must not see were set
(its own secret, the secret carrier, any token). ``alpha`` has the secret ``ALPHA_API_KEY``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from testing.contest_project import make_project
from testing.repos import git

__all__ = ["PROBE", "SEATS", "SECRET_VALUE", "dispatch_project", "probes"]

SECRET_VALUE = "sk-seat-alpha-0123456789"
SEATS = {"alpha": "good", "beta": "slow", "gamma": "wrong"}
WATCHED = (
    "ALPHA_API_KEY",
    "LOOP_CONTRACT_SEAT_SECRET",
    "LOOP_CONTRACT_TOKEN",
    "GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
)

PROBE = r"""
import json, os, pathlib, sys
seat, behaviour, prompt_file, workdir, probe_dir = sys.argv[1:6]
prompt = pathlib.Path(prompt_file).read_text()
GOOD = "CALLS = 0\n\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
SLOW = GOOD.replace("CALLS += 1", "for _ in range(9):\n        CALLS += 1")
WRONG = "CALLS = 0\n\n\ndef add(a, b):\n    return a - b\n"
code = {"good": GOOD, "slow": SLOW, "wrong": WRONG}[behaviour]
pathlib.Path(workdir, "calc.py").write_text(code)
watched = WATCHED
out = pathlib.Path(probe_dir)
out.mkdir(parents=True, exist_ok=True)
n = len(list(out.glob(seat + "-*.json"))) + 1
seen = {name: os.environ.get(name) for name in watched}
record = {"prompt": prompt, "env": seen, "cwd": os.getcwd()}
(out / f"{seat}-{n}.json").write_text(json.dumps(record))
"""


def dispatch_project(
    tmp: Path, *, extra: dict[str, Any] | None = None, scripted: Mapping[str, str] = SEATS
) -> dict[str, Any]:
    """The calc project (measured gate) with the probe seats ``scripted`` (name: behaviour;
    default the three of :data:`SEATS`) after any seats ``extra`` names; returns root, origin
    (a bare repository holding main), base (main's commit) and the probe folder."""
    root = make_project(tmp, [], measured=True, extra=extra)
    tools = tmp / "tools"
    (tools / "probe.py").write_text(PROBE.replace("WATCHED", repr(WATCHED)), "utf-8")
    probe_dir = tmp / "probes"
    contract = yaml.safe_load((root / "loopcontract.yml").read_text("utf-8"))
    for seat, behaviour in scripted.items():
        entry: dict[str, Any] = {
            "name": seat,
            "family": f"family-{seat}",
            "scripted": True,
            "timeout": 60,
            "generate": [
                sys.executable,
                str(tools / "probe.py"),
                seat,
                behaviour,
                "{prompt_file}",
                "{workdir}",
                str(probe_dir),
            ],
        }
        if seat == "alpha":
            entry["secret"] = "ALPHA_API_KEY"
        contract["seats"].append(entry)
    (root / "loopcontract.yml").write_text(yaml.safe_dump(contract, sort_keys=False), "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "the dispatchable seats")
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(origin))
    git(root, "push", "-q", str(origin), "main")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    base = git(root, "rev-parse", "HEAD").strip()
    # The seats run sandboxed: the probe script and the folder it reports to are the test's
    # window into the box (LOOP_CONTRACT_SANDBOX_WRITABLE), nothing else of /tmp is.
    probe_dir.mkdir(exist_ok=True)
    window = os.pathsep.join([str(tools), str(probe_dir)])
    return {"root": root, "origin": origin, "base": base, "probes": probe_dir, "window": window}


def probes(probe_dir: Path, seat: str) -> list[dict[str, Any]]:
    """What each run of ``seat`` saw, in run order."""
    found = sorted(probe_dir.glob(f"{seat}-*.json"), key=lambda p: int(p.stem.split("-")[-1]))
    return [json.loads(p.read_text("utf-8")) for p in found]
