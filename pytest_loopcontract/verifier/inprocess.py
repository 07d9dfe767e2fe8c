"""The in-process verdict (``pytest --loop-contract``): quick, local, and honest about trust.

Candidate code shares this process, so nothing here can be proven; the verdict says
``trust: in-process``. What can still be checked cheaply is checked: when a baseline exists,
protected files are compared with their pins, so file-level tampering is caught even here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import (
    Contract,
    build_validated,
    load_contract,
    parse_contract,
    validated_document,
)
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import Reason, environment_info
from pytest_loopcontract.verifier.baseline.record import BaselineRecord, load_baseline
from pytest_loopcontract.verifier.repo_evidence import PendingEvidence
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.verdict_frame import error_verdict

__all__ = [
    "incomplete_verdict",
    "load_for_session",
    "session_baseline",
    "verdict_in_process",
]


def resolve_contract_path(config: pytest.Config, configured: str) -> Path:
    path = Path(configured)
    if path.is_absolute():
        return path
    for base in (Path(config.invocation_params.dir), Path(config.rootpath)):
        if (base / path).exists():
            return base / path
    return Path(config.rootpath) / path


_LOADED = pytest.StashKey[tuple[Path, Contract]]()
_BASELINE = pytest.StashKey["tuple[bool, dict[str, Any] | None]"]()


def load_for_session(config: pytest.Config, configured: str) -> Contract:
    """The session's contract, loaded once (both the early hook and ``pytest_configure`` ask).

    Bytes already validated and pinned at baseline skip the schema, and after their first run
    the YAML parser too: their parsed document is kept in the state folder, keyed by SHA-256.
    The baseline document read for the pin is kept for the session's end (see
    :func:`session_baseline`).
    """
    path = resolve_contract_path(config, configured)
    held = config.stash.get(_LOADED, None)
    if held is not None and held[0] == path:
        return held[1]
    state = StateDir.of(config.rootpath)
    baseline = _baseline_document(state)
    config.stash[_BASELINE] = (state.baseline.exists(), baseline)
    contract = _load(path, state, _contract_sha(baseline))
    config.stash[_LOADED] = (path, contract)
    return contract


def session_baseline(config: pytest.Config, root: Path) -> BaselineRecord | None:
    """The baseline this session is judged by: the one there before its first test, so a test
    that writes ``baseline.json`` (re-pinning a file it edited, or a baseline where there was
    none) changes nothing. Read again only when it could not be read then, for the error
    that names the cause."""
    existed, document = config.stash.get(_BASELINE, (StateDir.of(root).baseline.exists(), None))
    if not existed:
        return None
    if document is not None:
        return BaselineRecord.from_json(document, outcomes=False)
    return load_baseline(root, outcomes=False)


def _load(path: Path, state: StateDir, pinned: str | None) -> Contract:
    if pinned is None:
        return load_contract(path)
    try:
        data = path.read_bytes()
    except OSError:
        return load_contract(path)
    if hashlib.sha256(data).hexdigest() != pinned:
        return load_contract(path)
    document = _parsed_document(state, pinned)
    if document is None:
        document = validated_document(data)
        if document is None:
            return parse_contract(data, path)
        _keep_parsed_document(state, pinned, document)
    return build_validated(document, path, pinned)


def _baseline_document(state: StateDir) -> dict[str, Any] | None:
    """``baseline.json`` as read before the first test, without its outcome sets (every
    test's id, which the in-process verdict never reads: not held through the run)."""
    try:
        data = json.loads(state.baseline.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {key: value for key, value in data.items() if key not in ("outcomes", "collected")}


def _contract_sha(baseline: dict[str, Any] | None) -> str | None:
    sha = baseline.get("contract_sha256") if baseline is not None else None
    return sha if isinstance(sha, str) else None


def _parsed_document(state: StateDir, sha256: str) -> dict[str, Any] | None:
    """The kept document of the contract whose bytes hash to ``sha256``, if one was kept."""
    try:
        kept = json.loads(state.parsed_contract.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("sha256") != sha256:
        return None
    document = kept.get("document")
    return document if isinstance(document, dict) else None


def _keep_parsed_document(state: StateDir, sha256: str, document: dict[str, Any]) -> None:
    """Keep the document as JSON when JSON carries it unchanged (YAML also has dates and
    non-string keys, which JSON would turn into something else: those are not kept)."""
    try:
        text = json.dumps({"sha256": sha256, "document": document})
    except (TypeError, ValueError):
        return
    if json.loads(text)["document"] != document:
        return
    with contextlib.suppress(OSError):
        write_text_atomic(state.parsed_contract, text)


def verdict_in_process(
    config: pytest.Config,
    contract: Contract,
    results: RunResults,
    started: str,
    t0: float,
    git: PendingEvidence,
) -> dict[str, Any]:
    """The in-process verdict of ``results``, with git's evidence from ``git`` once it is in.

    The verdict's side of the package (gates' evaluation, hidden tests, command gates) is
    imported here rather than before the first test, and the verdict hook's plugins are found
    (an entry-point scan) before waiting: both happen while git's snapshot still runs, in
    time the session's end would otherwise spend waiting for it."""
    from pytest_loopcontract import hooks
    from pytest_loopcontract.verifier.evaluate import Evidence, evaluate, outside_import_errors

    hooks.plugin_manager()  # cached: evaluate() asks for it again once the evidence is in
    root = Path(config.rootpath)
    baseline, findings, changed, commit, dirty, empty, problem = git.result()
    errors = []
    if problem is not None:
        # Fails closed: a tree git cannot read would otherwise pass with no pin compared.
        errors.append(
            Reason(
                "pins_unchecked",
                f"the protected files could not be compared with their pins: {problem}; "
                "'git status' says what is wrong with the repository, then run the tests again",
            )
        )
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
