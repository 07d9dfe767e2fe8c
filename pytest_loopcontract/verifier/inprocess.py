"""The in-process verdict (``pytest --loop-contract``): quick, local, and honest about trust.

Candidate code shares this process, so nothing here can be proven; the verdict says
``trust: in-process``. What can still be checked cheaply is checked: when a baseline exists,
protected files are compared with their pins, so file-level tampering is caught even here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import Contract, load_contract, parse_validated
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import Finding, Reason, environment_info
from pytest_loopcontract.verifier.baseline import BaselineRecord, load_baseline
from pytest_loopcontract.verifier.evaluate import (
    Evidence,
    error_verdict,
    evaluate,
    outside_import_errors,
)
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.tamper.pins import pin_findings
from pytest_loopcontract.verifier.workspace import (
    WorkspaceError,
    diff_text,
    find_repo,
    is_dirty,
    list_tree,
    resolve_commit,
    snapshot_worktree,
)

__all__ = ["load_for_session", "verdict_in_process"]


def resolve_contract_path(config: pytest.Config, configured: str) -> Path:
    path = Path(configured)
    if path.is_absolute():
        return path
    for base in (Path(config.invocation_params.dir), Path(config.rootpath)):
        if (base / path).exists():
            return base / path
    return Path(config.rootpath) / path


def load_for_session(config: pytest.Config, configured: str) -> Contract:
    """Load the contract; bytes already validated and pinned at baseline skip the schema."""
    path = resolve_contract_path(config, configured)
    pinned = _pinned_contract_sha(Path(config.rootpath))
    if pinned is not None:
        try:
            data = path.read_bytes()
        except OSError:
            return load_contract(path)
        if hashlib.sha256(data).hexdigest() == pinned:
            return parse_validated(data, path)
    return load_contract(path)


def _pinned_contract_sha(root: Path) -> str | None:
    try:
        data = json.loads(StateDir.of(root).baseline.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    sha = data.get("contract_sha256") if isinstance(data, dict) else None
    return sha if isinstance(sha, str) else None


def _repo_evidence(
    root: Path, contract: Contract, baseline: BaselineRecord | None
) -> tuple[list[Finding], dict[str, frozenset[int]] | None, str | None, bool | None, bool | None]:
    from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff

    try:
        repo = find_repo(root)
        commit, dirty = resolve_commit(repo, "HEAD"), is_dirty(repo)
    except WorkspaceError:
        return [], None, None, None, None
    if baseline is None:
        return [], None, commit, dirty, None
    tree = snapshot_worktree(repo)
    files = list_tree(repo, tree)
    findings = pin_findings(
        baseline.pins,
        files,
        baseline.protected_globs,
        contract.protect.allow,
        baseline.contract_path,
        restored=False,
    )
    needs_diff = any(g.metric.startswith("coverage.") for g in contract.measured_gates)
    patch = (
        diff_text(repo, baseline.tree, tree) if needs_diff or contract.mode == "improve" else None
    )
    changed = added_lines_from_diff(patch) if patch is not None else None
    empty = (patch == "") if patch is not None else None
    return findings, changed, commit, dirty, empty


def verdict_in_process(
    config: pytest.Config, contract: Contract, results: RunResults, started: str, t0: float
) -> dict[str, Any]:
    root = Path(config.rootpath)
    baseline = load_baseline(root) if StateDir.of(root).baseline.exists() else None
    findings, changed, commit, dirty, empty = _repo_evidence(root, contract, baseline)
    errors = []
    status = results.pytest_exitstatus
    if status in (2, 3, 4):
        errors.append(Reason("pytest_exit_code", f"pytest session ended with status {status}"))
    elif not results.tests:
        errors.append(Reason("no_tests", "no tests ran"))
    errors += outside_import_errors(results)
    relpath = _relpath(contract, root)
    evidence = Evidence(
        trust="in-process",
        nonce=results.nonce,
        workdir=root,
        contract_relpath=relpath,
        started=started,
        started_monotonic=t0,
        fail_to_pass=baseline.fail_to_pass if baseline else None,
        pass_to_pass=baseline.pass_to_pass if baseline else None,
        base_commit=baseline.commit if baseline else None,
        findings=findings,
        errors=errors,
        changed_lines=changed,
        empty_diff=empty,
        commit=commit,
        dirty=dirty,
    )
    return evaluate(contract, results, evidence)


def incomplete_verdict(
    config: pytest.Config, contract: Contract, nonce: str, started: str
) -> dict[str, Any]:
    """The verdict a run that never reaches its end leaves behind: ``error``, not stale."""
    return error_verdict(
        contract,
        Reason("run_incomplete", "the test run started but never finished"),
        relpath=_relpath(contract, Path(config.rootpath)),
        trust="in-process",
        nonce=nonce,
        baseline={"fail_to_pass": [], "pass_to_pass": {}, "recorded": False},
        environment=environment_info(None, None),
        timing={"started": started, "finished": started, "duration_s": 0.0},
    )


def _relpath(contract: Contract, root: Path) -> str:
    try:
        return str(contract.path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(contract.path)
