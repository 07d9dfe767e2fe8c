"""The verify job runs nothing of the candidate's checkout outside the sandbox.

Real git repositories, the real ``verify_pull_request`` (baseline at the base commit, the
isolated verifier on the head) with the head checked out as the verify job has it, and real
bubblewrap. Each attack leaves a mark file outside the repository when its code runs where it
should not; the honest look-alike shows the same path works when nothing is wrong.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.github.checkout_guard import checkout_free_python, sandbox_enforced
from pytest_loopcontract.github.verify_pr import verify_pull_request
from pytest_loopcontract.verifier.sandbox import bwrap_problem
from pytest_loopcontract.workspace import WorkspaceError
from testing.contest_project import make_project
from testing.github_field import GOOD, SLOW, seat_branch
from testing.repos import GIT_ENV, git

CONTRACT = "loopcontract.yml"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def need_sandbox() -> None:
    problem = bwrap_problem()
    if problem and os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
        pytest.fail(problem)
    if problem:
        pytest.skip(problem)


def scene(tmp: Path, files: dict[str, str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The calc project; one candidate commit with ``files``, checked out (as the verify job
    has it). Files under ``bin/`` are made executable."""
    root = make_project(tmp, [], measured=True, extra=extra)
    base = git(root, "rev-parse", "HEAD").strip()
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
    head = seat_branch(root, "x", {name: text for name, text in files.items()})
    git(root, "checkout", "-q", head)
    for name in files:
        if "/bin/" in name:
            (root / name).chmod(0o755)
    git(root, "commit", "-qam", "executable", "--allow-empty")
    head = git(root, "rev-parse", "HEAD").strip()
    return {"root": root, "base": base, "head": head}


def run_verify(tmp: Path, s: dict[str, Any]) -> dict[str, Any]:
    out = tmp / "out"
    verdict = verify_pull_request(
        s["root"],
        contract_path=CONTRACT,
        pr=7,
        base_sha=s["base"],
        head_sha=s["head"],
        out=out,
        scratch=tmp,
    )
    written = json.loads((out / "candidate-7" / "verdict.json").read_text("utf-8"))
    assert written == verdict
    return verdict


def fake_interpreter(mark: Path) -> str:
    """An executable ``.venv/bin/python`` that leaves ``mark`` and then behaves as Python."""
    return f'#!/bin/sh\necho "$$ $*" >> {mark}\nexec {sys.executable} "$@"\n'


# --------------------------------------------------------------------------- the interpreter


def test_a_checkout_venv_python_never_runs_in_the_verify_job(tmp_path: Path) -> None:
    need_sandbox()
    mark = tmp_path / "interpreter-ran"
    s = scene(tmp_path, {"calc.py": GOOD, ".venv/bin/python": fake_interpreter(mark)})
    verdict = run_verify(tmp_path, s)
    assert not mark.exists(), mark.read_text("utf-8")
    assert verdict["verdict"] == "pass", verdict["reasons"]  # with the verifier's interpreter
    assert verdict["isolation"] == "sandbox"


def test_the_local_rule_would_have_run_it(tmp_path: Path) -> None:
    """The cheat that beats a verify job without the guard: the same checkout, the verifier's
    local choice of interpreter, and the candidate's program runs unconfined."""
    from pytest_loopcontract.verifier.baseline.take import take_baseline

    mark = tmp_path / "interpreter-ran"
    s = scene(tmp_path, {"calc.py": GOOD, ".venv/bin/python": fake_interpreter(mark)})
    take_baseline(s["root"], CONTRACT, s["base"])
    assert mark.exists()
    assert "-I -S -c" in mark.read_text("utf-8")  # the probe, which is never confined


@pytest.mark.parametrize(
    ("configured", "allowed"),
    [
        (None, True),
        ("python3", True),
        ("/usr/bin/python3", True),
        (".venv/bin/python", False),
        ("tools/python", False),
        ("{root}/.venv/bin/python", False),
    ],
)
def test_which_configured_interpreter_the_verify_job_takes(
    tmp_path: Path, configured: str | None, allowed: bool
) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    doc = "version: 1\nid: c\ngoal: g\n"
    if configured is not None:
        doc += f"pytest: {{python: '{configured.format(root=root)}'}}\n"
    contract = parse_contract(doc.encode(), Path(CONTRACT))
    if allowed:
        assert checkout_free_python(root, contract) == (
            configured.format(root=root) if configured else sys.executable
        )
    else:
        with pytest.raises(WorkspaceError, match="file of the checkout"):
            checkout_free_python(root, contract)


# --------------------------------------------------------------------------- the sandbox


IMPORT_MARK = "import pathlib\npathlib.Path({mark!r}).write_text('candidate code ran')\n"


def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner where bubblewrap cannot start (the verifier sees no bwrap)."""
    monkeypatch.setenv("LOOP_CONTRACT_BWRAP", str(Path("/nonexistent") / "bwrap"))
    bwrap_problem.cache_clear()


def test_without_a_sandbox_no_candidate_code_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_sandbox(monkeypatch)
    mark = tmp_path / "candidate-ran"
    s = scene(tmp_path, {"calc.py": SLOW + IMPORT_MARK.format(mark=str(mark))})
    try:
        verdict = run_verify(tmp_path, s)
    finally:
        bwrap_problem.cache_clear()
    assert not mark.exists()
    assert "sandbox_unavailable" in [r["code"] for r in verdict["reasons"]], verdict["reasons"]
    assert verdict["verdict"] != "pass"
    assert "LOOP_CONTRACT_ISOLATION" not in os.environ  # put back after the run


def test_a_contract_that_accepts_process_isolation_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look-alike: ``require_sandbox: false`` keeps the old fallback (and shows the mark
    is left where candidate code runs unconfined)."""
    no_sandbox(monkeypatch)
    mark = tmp_path / "candidate-ran"
    files = {"calc.py": SLOW + IMPORT_MARK.format(mark=str(mark))}
    s = scene(tmp_path, files, extra={"github": {"require_sandbox": False}})
    try:
        verdict = run_verify(tmp_path, s)
    finally:
        bwrap_problem.cache_clear()
    assert mark.exists()
    assert verdict["isolation"] == "process"


def test_a_process_isolation_contract_is_refused_before_any_run(tmp_path: Path) -> None:
    s = scene(tmp_path, {"calc.py": GOOD}, extra={"isolation": "process"})
    with pytest.raises(WorkspaceError, match="require_sandbox"):
        run_verify(tmp_path, s)


def test_the_guard_restores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_CONTRACT_ISOLATION", "auto")
    contract = parse_contract(b"version: 1\nid: c\ngoal: g\n", Path(CONTRACT))
    with sandbox_enforced(contract):
        assert os.environ["LOOP_CONTRACT_ISOLATION"] == "sandbox"
    assert os.environ["LOOP_CONTRACT_ISOLATION"] == "auto"
