"""``loop-contract verify``: the isolated launcher, the verdict CI and contests trust.

The candidate's tree is rebuilt in a scratch folder from git objects; every pinned path gets
its baseline bytes back and new files under protected patterns are removed; pytest runs in a
subprocess with plugin autoload off and only allow-listed plugins; the launcher checks the
nonce, the exit code and the expected node ids against what the plugin wrote, then computes the
verdict itself.
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints.gate import diff_checkpoints
from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.fsio import utc_now, write_json_atomic
from pytest_loopcontract.loop.history import History
from pytest_loopcontract.loop.progress import diff_hash, progress_key
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import Finding, Reason, VerdictView
from pytest_loopcontract.verifier.baseline import BaselineRecord, included_pins, load_baseline
from pytest_loopcontract.verifier.evaluate import Evidence, evaluate, outside_import_errors
from pytest_loopcontract.verifier.hidden import (
    load_for_verify,
    remove_hidden,
    scrub_quotes,
    source_reader,
    write_hidden,
)
from pytest_loopcontract.verifier.reruns import flaky_failures, rerun_pass_to_pass
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.runner import PytestRun, RunSetup, prepare_run, run_pytest
from pytest_loopcontract.verifier.sandbox import PROCESS, SandboxUnavailable
from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff
from pytest_loopcontract.verifier.tamper.checks import (
    VacuousRunner,
    blob_reader,
    launcher_static_checks,
    vacuous_pass_check,
)
from pytest_loopcontract.verifier.tamper.pins import (
    boundary_findings,
    crosscheck_findings,
    doctest_findings,
    harness_findings,
    pin_findings,
)
from pytest_loopcontract.verifier.tamper.runtime import (
    leftover_findings,
    patch_findings,
    shadow_findings,
)
from pytest_loopcontract.verifier.testenv import environment_differences
from pytest_loopcontract.verifier.workspace import (
    TreeEntry,
    WorkspaceError,
    changed_paths,
    diff_text,
    export_tree,
    is_dirty,
    list_tree,
    make_scratch,
    matches_any,
    purge_bytecode,
    read_blobs,
    remove_tree,
    remove_tree_later,
    resolve_commit,
    sha256_bytes,
    snapshot_worktree,
    tree_of,
    tree_size,
    write_pinned,
)

__all__ = ["VerifyOutcome", "pinned_contract", "verify"]


@dataclass(frozen=True)
class VerifyOutcome:
    verdict: dict[str, Any]
    verdict_path: Path
    launcher_seconds: float
    pytest_seconds: float
    changed: list[str] = field(default_factory=list)
    progress_key: str = ""


def pinned_contract(root: Path, baseline: BaselineRecord) -> Contract:
    """The contract as adopted at baseline; the candidate's copy is only evidence."""
    pin = baseline.pins.get(baseline.contract_path)
    if pin is None:
        raise WorkspaceError(
            "the baseline has no pin for the contract: run 'loop-contract baseline'",
            exit_code=27,
        )
    data = read_blobs(root, [pin.blob])[pin.blob]
    if sha256_bytes(data) != pin.sha256:
        raise WorkspaceError("the pinned contract's bytes do not match their SHA-256")
    return parse_contract(data, Path(baseline.contract_path))


def _inside(scratch: Path, relpath: str) -> Path:
    """``scratch / relpath`` with every folder on the way made a real folder.

    The candidate may have replaced a folder by a symlink to somewhere outside (``tests ->
    /elsewhere``); writing a pinned file through it would change files outside the scratch
    copy, so such a symlink (or a file in a folder's place) is removed first.
    """
    current = scratch
    parts = Path(relpath).parts
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)
    return current / parts[-1]


def _restore_pins(
    root: Path,
    scratch: Path,
    baseline: BaselineRecord,
    candidate: Mapping[str, TreeEntry],
    globs: list[str],
) -> None:
    """Give every pinned path its baseline bytes (only where the candidate's differ) and drop
    new files under protected patterns."""
    differing = {
        path: pin
        for path, pin in baseline.pins.items()
        if (entry := candidate.get(path)) is None
        or entry.blob != pin.blob
        or entry.mode != pin.mode
    }
    blobs = read_blobs(root, (pin.blob for pin in differing.values()))
    for path, pin in differing.items():
        data = blobs[pin.blob]
        if sha256_bytes(data) != pin.sha256:
            raise WorkspaceError(f"pinned object for {path} does not match its SHA-256")
        target = _inside(scratch, path)
        if target.is_symlink():
            target.unlink()
        elif target.is_dir():
            remove_tree(target)
        target.write_bytes(data)
        if pin.mode == "100755":
            target.chmod(0o755)
    for path in candidate:
        if path not in baseline.pins and matches_any(path, globs):
            (scratch / path).unlink(missing_ok=True)


def _needs_coverage(contract: Contract) -> bool:
    return any(
        g.metric.startswith("coverage.") and not g.source.get("file")
        for g in contract.measured_gates
    )


def _run_errors(
    exit_code: int | None,
    timed_out: bool,
    results: RunResults | None,
    results_error: str,
    tail: str,
    timeout: float,
) -> list[Reason]:
    if timed_out:
        return [Reason("timeout", f"the test run exceeded its {timeout:g}s timeout and was killed")]
    last = tail.strip().splitlines()[-3:]
    context = (" | " + " / ".join(line.strip() for line in last)) if last else ""
    if exit_code == 3:
        return [Reason("pytest_internal_error", f"pytest reported an INTERNALERROR{context}")]
    if exit_code == 2:
        return [Reason("pytest_interrupted", f"the test run was interrupted{context}")]
    if exit_code == 4:
        return [Reason("pytest_usage_error", f"pytest rejected its command line{context}")]
    if exit_code is not None and exit_code < 0:
        return [Reason("pytest_killed", f"pytest was killed by signal {-exit_code}{context}")]
    if results is None:
        return [Reason("no_results", f"{results_error} (exit {exit_code}){context}")]
    if exit_code == 5 or not results.tests:
        return [Reason("no_tests", "no tests ran" + _collection_errors(results))]
    if exit_code not in (0, 1):
        return [Reason("pytest_exit_code", f"pytest exited {exit_code}{context}")]
    return []


def _same_environment(baseline: BaselineRecord, setup: RunSetup) -> None:
    """Refuse to compare against a baseline that ran under another test environment."""
    recorded = baseline.extra.get("test_env")
    if not isinstance(recorded, dict):
        return
    differences = environment_differences(recorded, setup.testenv.describe())
    if differences:
        raise WorkspaceError(
            "the baseline ran in a different test environment ("
            + "; ".join(differences)
            + "): run with the baseline's interpreter (--python PATH) or take the baseline "
            "again with 'loop-contract baseline'",
            exit_code=27,
        )


def _run_findings(run: PytestRun, baseline: BaselineRecord, files: Iterable[str]) -> list[Finding]:
    """What the run itself shows: processes that outlived it, runtime patching, shadowing."""
    if run.results is None:
        return []
    extra = baseline.extra
    findings = leftover_findings(run.leftovers, leaked_at_baseline=bool(extra.get("leftovers")))
    known = {p.get("object", "") for p in extra.get("runtime_patches") or ()}
    findings += patch_findings(run.results.runtime_patches, known)
    origins = extra.get("module_origins") or {}
    findings += shadow_findings(run.results.module_origins, origins, files)
    return findings


def _rerun_flaky(
    scratch: Path,
    contract: Contract,
    baseline: BaselineRecord,
    setup: RunSetup,
    results: RunResults,
) -> tuple[RunResults, list[dict[str, Any]]]:
    """Run failing pass-to-pass tests again, confined like the first run (``pytest.reruns``)."""
    failing = flaky_failures(results, baseline.pass_to_pass, baseline.fail_to_pass)
    if not failing:
        return results, []

    def run_again(ids: Sequence[str]) -> dict[str, str] | None:
        again = run_pytest(
            scratch,
            nonce=secrets.token_hex(16),
            autoload=False,
            plugins=baseline.plugins,
            extra_args=[*contract.pytest.args, *ids],
            timeout=contract.pytest.timeout,
            testenv=setup.testenv,
            confinement=setup.confinement,
            egress=contract.egress_allow,
        )
        return again.results.outcomes() if again.results is not None else None

    return rerun_pass_to_pass(results, failing, contract.pytest.reruns, run_again)


def _refused(refusal: Reason) -> dict[str, Any]:
    return {"mode": PROCESS, "note": refusal.message, "leftovers": []}


def _collection_errors(results: RunResults) -> str:
    """The collection errors behind an empty run, each in its own last words."""
    shown = []
    for error in results.collect_errors[:3]:
        lines = [ln.strip() for ln in error.get("message", "").splitlines() if ln.strip()]
        shown.append(f"{error.get('nodeid') or 'session'}: {lines[-1] if lines else '?'}")
    if not shown:
        return ""
    more = len(results.collect_errors) - len(shown)
    return "; collection failed in " + "; ".join(shown) + (f" (+{more} more)" if more else "")


def verify(
    root: Path,
    *,
    candidate_ref: str | None = None,
    verdict_path: Path | None = None,
    keep_scratch: bool = False,
    history: History | None = None,
    python: str | None = None,
) -> VerifyOutcome:
    """Verify the working tree (or ``candidate_ref``) of ``root`` against its baseline."""
    started, t0 = utc_now(), time.monotonic()
    baseline = load_baseline(root)
    contract = pinned_contract(root, baseline)
    hidden = load_for_verify(root, contract, baseline)  # never in the repository, only copied in
    target = verdict_path or StateDir.of(root).verdict
    try:
        setup: RunSetup | None = prepare_run(root, contract, python=python, verdict_path=target)
    except SandboxUnavailable as exc:
        setup, refusal = None, Reason("sandbox_unavailable", str(exc))
    if setup is not None:
        _same_environment(baseline, setup)
    globs = list(baseline.protected_globs)
    allow = list(contract.protect.allow)

    if candidate_ref is None:
        tree = snapshot_worktree(root)
        commit, dirty = resolve_commit(root, "HEAD"), is_dirty(root)
    else:
        commit, dirty = resolve_commit(root, candidate_ref), False
        tree = tree_of(root, commit)
    files = list_tree(root, tree)
    changed = changed_paths(root, baseline.tree, tree)
    patch = diff_text(root, baseline.tree, tree)

    findings: list[Finding] = []
    findings += pin_findings(baseline.pins, files, globs, allow, baseline.contract_path)
    # A path whose content equals its pin (an amended, re-pinned contract) crossed nothing.
    crossing = [
        (status, path)
        for status, path in changed
        if not (
            path in baseline.pins
            and (entry := files.get(path)) is not None
            and entry.blob == baseline.pins[path].blob
        )
    ]
    findings += boundary_findings(crossing, contract.boundaries.allow, contract.boundaries.deny)
    findings += harness_findings(patch, allow, test_globs=[*globs, "test_*.py", "*_test.py"])
    # Reward rules (reward_checks.py): tamper findings; evidence joins the diff's checkpoints.
    reward = launcher_static_checks(root, baseline, contract, files, patch, findings)
    findings += reward.findings
    gate_checks = diff_checkpoints(
        history or History(StateDir.of(root).folder), contract, patch, reward.evidence
    )

    nonce = secrets.token_hex(16)
    tree_bytes = tree_size(root, tree)
    scratch = make_scratch(tree_bytes=tree_bytes)
    private = Path(tempfile.mkdtemp(prefix="loopcontract-private-"))
    try:
        export_tree(root, tree, scratch)
        purge_bytecode(scratch)
        _restore_pins(root, scratch, baseline, files, globs)
        write_pinned(root, scratch, included_pins(baseline))
        write_hidden(scratch, hidden)
        coverage_data = private / "coverage.data" if _needs_coverage(contract) else None
        launcher_before = time.monotonic() - t0
        if setup is None:
            run = PytestRun(None, None, refusal.message, "", 0.0, False)
            errors = [refusal]
        else:
            run = run_pytest(
                scratch,
                nonce=nonce,
                autoload=False,
                plugins=baseline.plugins,
                extra_args=list(contract.pytest.args),
                timeout=contract.pytest.timeout,
                coverage_data=coverage_data,
                testenv=setup.testenv,
                confinement=setup.confinement,
                egress=contract.egress_allow,
            )
            errors = _run_errors(
                run.exit_code,
                run.timed_out,
                run.results,
                run.results_error,
                run.output_tail,
                contract.pytest.timeout,
            )
            findings += _run_findings(run, baseline, files)
        t_after = time.monotonic()
        results = run.results or RunResults(nonce=nonce)
        reruns: list[dict[str, Any]] = []
        if setup is not None and contract.pytest.reruns and not errors:
            results, reruns = _rerun_flaky(scratch, contract, baseline, setup, results)
        errors += outside_import_errors(results)
        findings += doctest_findings(
            dict(baseline.extra.get("doctests") or {}), results.doctests, allow
        )
        if run.results is not None and run.exit_code is not None:
            # A run that ended abnormally (INTERNALERROR, interrupted, ...) is already an
            # ``error``; the tests it never reached are a consequence, not tampering.
            expected = [] if errors else [*baseline.fail_to_pass, *baseline.pass_to_pass]
            findings += crosscheck_findings(
                run.results,
                nonce=nonce,
                exit_code=run.exit_code,
                expected=expected,
                allowed_plugins=baseline.plugins,
            )

        # --- vacuous pass (reward_checks.py): passed acceptance tests re-run, mutated ---------
        def prepare(dest: Path) -> None:
            export_tree(root, tree, dest)
            purge_bytecode(dest)
            _restore_pins(root, dest, baseline, files, globs)
            write_pinned(root, dest, included_pins(baseline))
            write_hidden(dest, hidden)

        def rerun(dest: Path, nodeids: Sequence[str], limit: float) -> PytestRun:
            assert setup is not None  # skipped below when the run could not start
            return run_pytest(
                dest,
                nonce=secrets.token_hex(16),
                autoload=False,
                plugins=baseline.plugins,
                extra_args=[*contract.pytest.args, *nodeids],
                timeout=limit,
                testenv=setup.testenv,
                confinement=setup.confinement,
                egress=contract.egress_allow,
            )

        vacuous = vacuous_pass_check(
            contract,
            results,
            VacuousRunner(
                prepare=prepare,
                run=rerun,
                pinned_source=source_reader(blob_reader(root, baseline.pins), hidden),
                tree_bytes=tree_bytes,
            ),
            skip_reason="the test run ended abnormally" if errors or run.results is None else "",
        )
        findings += vacuous.findings
        # --- end vacuous pass ------------------------------------------------------------
        evidence = Evidence(
            trust="isolated",
            nonce=nonce,
            workdir=scratch,
            contract_relpath=baseline.contract_path,
            started=started,
            started_monotonic=t0,
            fail_to_pass=baseline.fail_to_pass,
            pass_to_pass=baseline.pass_to_pass,
            base_commit=baseline.commit,
            findings=findings,
            errors=errors,
            coverage_data=coverage_data if coverage_data and coverage_data.exists() else None,
            changed_lines=added_lines_from_diff(patch),
            empty_diff=not changed,
            commit=commit,
            dirty=dirty,
            command_env=setup.command_env(scratch) if setup else None,
            checkpoints=gate_checks,
            confine=setup.confine_command(scratch) if setup else None,
            confinement=setup.describe(run) if setup else _refused(refusal),
            test_env=setup.testenv.describe() if setup else None,
            unstable=list(baseline.extra.get("unstable") or ()),
            reruns=reruns,
            checks=[*reward.checks, *vacuous.checks],
        )
        document = evaluate(contract, results, evidence)
        scrub_quotes(document, hidden)  # a quoted hidden line in any message is replaced
        launcher_seconds = launcher_before + (time.monotonic() - t_after)
    finally:
        remove_hidden(scratch, hidden)
        if not keep_scratch:
            remove_tree_later(scratch)
        remove_tree(private)
    write_json_atomic(target, document)
    failing = VerdictView(document).failing_tests()
    return VerifyOutcome(
        document,
        target,
        launcher_seconds,
        run.duration,
        changed=[p for _, p in changed],
        progress_key=progress_key(diff_hash(patch), failing),
    )
