"""The dispatch workflow file's security properties, read from the YAML itself.

Each property is a function that lists what breaks it, so the test can show that it fails on
the cheat (the token in the seat's step, a computed ``secrets[...]`` index, an expression
inside a ``run:``) and passes on the file as written.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NAME = "loop-contract-dispatch.yml"
EXAMPLE = ROOT / "examples" / "github" / NAME
OURS = ROOT / ".github" / "workflows" / NAME
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
TOKENS = ("github.token", "secrets.GITHUB_TOKEN")


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.load(path.read_text("utf-8"), Loader=yaml.BaseLoader)
    return document


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)
    elif isinstance(node, str):
        yield node


def problems(doc: dict[str, Any]) -> list[str]:
    """Every way the document breaks the dispatch workflow's rules."""
    found = []
    jobs = doc["jobs"]
    for job_id, job in jobs.items():
        for step in job.get("steps", []):
            if "${{" in step.get("run", ""):
                found.append(f"{job_id}: an expression inside run:")
            checkout = str(step.get("uses", "")).startswith("actions/checkout@")
            if checkout and step.get("with", {}).get("persist-credentials") != "false":
                found.append(f"{job_id}: a checkout that keeps its credential")
        for text in strings(job):
            for expression in EXPRESSION.findall(text):
                if "secrets[" in expression.replace(" ", ""):
                    found.append(f"{job_id}: a computed secrets[...] index")
                if "secrets." in expression and job_id != "seat":
                    found.append(f"{job_id}: a secret outside the seat job")
                if job_id == "seat" and any(t in expression for t in TOKENS):
                    found.append("seat: the GitHub token in the job that runs the seat")
    seat = jobs["seat"]
    if seat.get("permissions") != {"contents": "read"}:
        found.append(f"seat: permissions {seat.get('permissions')}")
    if "matrix.seat.name" not in str(seat.get("environment", "")):
        found.append("seat: not in the seat's own environment")
    used = [
        (step.get("name"), key)
        for step in seat["steps"]
        for key, value in (step.get("env") or {}).items()
        if "secrets." in value
    ]
    if used != [("Run the seat", "LOOP_CONTRACT_SEAT_SECRET")]:
        found.append(f"seat: secrets reach {used}")
    names = [step.get("name") for step in seat["steps"]]
    sandbox = next(
        (i for i, step in enumerate(seat["steps"]) if "bwrap" in step.get("run", "")), None
    )
    if sandbox is None or "Run the seat" not in names or sandbox > names.index("Run the seat"):
        found.append("seat: bubblewrap is not set up before the seat runs")
    propose = jobs["propose"]
    # actions: write only to dispatch the verify workflow (GITHUB_TOKEN's pull requests start
    # no pull_request run)
    wanted = {"contents": "write", "pull-requests": "write", "actions": "write"}
    if propose.get("permissions") != wanted:
        found.append(f"propose: permissions {propose.get('permissions')}")
    with_token = [s.get("name") for s in propose["steps"] if "github.token" in str(s)]
    if with_token != [propose["steps"][-1].get("name")]:
        found.append(f"propose: the token reaches {with_token}, not only the last step")
    if doc.get("permissions") != {}:
        found.append("the workflow grants permissions by default")
    plan_if = jobs["plan"].get("if", "")
    if "!github.event.issue.pull_request" not in plan_if or "'/contest'" not in plan_if:
        found.append("plan: runs for pull-request comments or for any comment")
    return found


def test_the_repository_copy_is_identical_to_the_example() -> None:
    assert OURS.read_bytes() == EXAMPLE.read_bytes()


def test_the_workflow_keeps_the_rules() -> None:
    assert problems(load(EXAMPLE)) == []


def _broken(change: str) -> dict[str, Any]:
    doc = copy.deepcopy(load(EXAMPLE))
    seat_step = next(s for s in doc["jobs"]["seat"]["steps"] if s.get("name") == "Run the seat")
    if change == "token in the seat step":
        seat_step["env"]["LOOP_CONTRACT_TOKEN"] = "${{ github.token }}"
    elif change == "computed index":
        seat_step["env"]["LOOP_CONTRACT_SEAT_SECRET"] = "${{ secrets[matrix.seat.secret] }}"
    elif change == "expression in run":
        seat_step["run"] = 'echo "${{ matrix.seat.name }}"'
    elif change == "no sandbox for the seat":
        doc["jobs"]["seat"]["steps"] = [
            step for step in doc["jobs"]["seat"]["steps"] if "bwrap" not in step.get("run", "")
        ]
    elif change == "credential kept":
        doc["jobs"]["propose"]["steps"][0]["with"].pop("persist-credentials")
    elif change == "token in every propose step":
        doc["jobs"]["propose"]["env"] = {"GH_TOKEN": "${{ github.token }}"}
        for step in doc["jobs"]["propose"]["steps"]:
            step.setdefault("env", {})["GH_TOKEN"] = "${{ github.token }}"
    elif change == "pull-request comments":
        doc["jobs"]["plan"]["if"] = "startsWith(github.event.comment.body, '/contest')"
    elif change == "secret for the propose job":
        doc["jobs"]["propose"]["steps"][-1]["env"]["K"] = "${{ secrets.LOOP_CONTRACT_SEAT_SECRET }}"
    return doc


@pytest.mark.parametrize(
    "change",
    [
        "token in the seat step",
        "computed index",
        "expression in run",
        "credential kept",
        "no sandbox for the seat",
        "token in every propose step",
        "pull-request comments",
        "secret for the propose job",
    ],
)
def test_each_cheat_breaks_a_rule(change: str) -> None:
    assert problems(_broken(change)) != []


def _tool(name: str) -> str:
    beside = Path(sysconfig.get_path("scripts")) / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        if os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{name} is not installed and LOOP_CONTRACT_REQUIRE_TOOLS=1")
        pytest.skip(f"{name} is not installed")
    return found


def test_zizmor_finds_only_the_argued_issue_comment_trigger(tmp_path: Path) -> None:
    cmd = [_tool("zizmor"), "--offline", "--format", "json", "--no-exit-codes"]
    rel = [str(p.relative_to(ROOT)) for p in (EXAMPLE, OURS)]
    clean = subprocess.run([*cmd, *rel], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(clean.stdout) == []
    every = subprocess.run(
        [*cmd, "--no-ignores", *rel], cwd=ROOT, capture_output=True, text=True, check=True
    )
    idents = {(f["ident"], f["determinations"]["severity"]) for f in json.loads(every.stdout)}
    assert {i for i in idents if i[1] in ("Medium", "High")} == {("dangerous-triggers", "High")}
    # and the same zizmor flags the computed index the workflow avoids
    bad = tmp_path / ".github" / "workflows" / NAME
    bad.parent.mkdir(parents=True)
    literal = "secrets.LOOP_CONTRACT_SEAT_SECRET"
    bad.write_text(EXAMPLE.read_text("utf-8").replace(literal, "secrets[matrix.seat.secret]"))
    found = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, check=True)
    assert "overprovisioned-secrets" in {f["ident"] for f in json.loads(found.stdout)}


def test_check_jsonschema_accepts_it() -> None:
    proc = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(EXAMPLE)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
