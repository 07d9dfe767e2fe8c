"""``loop-contract verify``: the isolated launcher, the verdict CI and contests trust.

The candidate's tree is rebuilt in a scratch folder from git objects; every pinned path gets
its baseline bytes back and new files under protected patterns are removed; pytest runs in a
subprocess with plugin autoload off and only allow-listed plugins; the launcher checks the
nonce, the exit code and the expected node ids against what the plugin wrote, then computes the
verdict itself.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_loopcontract
from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.contract.model import Contract, parse_contract, parse_validated
from pytest_loopcontract.fsio import utc_now, write_json_atomic
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import diff_hash, progress_key
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import Finding, Reason, VerdictView, pytest_version
from pytest_loopcontract.verifier import phases
from pytest_loopcontract.verifier.baseline.record import (
    BaselineRecord,
    included_pins,
    load_baseline,
)
from pytest_loopcontract.verifier.bytecode import seal, sealed_folders
from pytest_loopcontract.verifier.candidate import Candidate, read_candidate
from pytest_loopcontract.verifier.diff_evidence import diff_evidence
from pytest_loopcontract.verifier.evaluate import Evidence, evaluate, outside_import_errors
from pytest_loopcontract.verifier.hidden import (
    HiddenFile,
    load_for_verify,
    remove_hidden,
    scrub_quotes,
    source_reader,
    write_hidden,
)
from pytest_loopcontract.verifier.reruns import flaky_failures, rerun_pass_to_pass
from pytest_loopcontract.verifier.restore import referee_changes, referee_digests, restore_pins
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.review import run_review
from pytest_loopcontract.verifier.run_outcome import run_errors, run_findings
from pytest_loopcontract.verifier.runner import PytestRun, RunSetup, prepare_run, run_pytest
from pytest_loopcontract.verifier.sandbox import PROCESS, SandboxUnavailable
from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff
from pytest_loopcontract.verifier.stale_baseline import stale_baseline, stale_verdict
from pytest_loopcontract.verifier.suite_writes import CONTENT
from pytest_loopcontract.verifier.tamper.capabilities import capability_findings, verify_settings
from pytest_loopcontract.verifier.tamper.checks import (
    acceptance_nodeids,
    blob_reader,
    check_record,
)
from pytest_loopcontract.verifier.tamper.pins import crosscheck_findings, doctest_findings
from pytest_loopcontract.verifier.tamper.twins import TwinPlan, judge_referee, plan_twins
from pytest_loopcontract.verifier.testenv import require_same_environment
from pytest_loopcontract.workspace import (
    WorkspaceError,
    export_tree,
    make_scratch,
    purge_bytecode,
    read_blobs,
    remove_tree,
    remove_tree_later,
    sha256_bytes,
    sweep_scratch,
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
    withdrawn: list[dict[str, Any]] = field(default_factory=list)  # checkpoint_withdrawn data


def pinned_contract(root: Path, baseline: BaselineRecord) -> Contract:
    """The contract as adopted at baseline; the candidate's copy is only evidence."""
    pin = baseline.pins.get(baseline.contract_path)
    if pin is None:
        raise WorkspaceError(
            "the baseline has no pin for the contract: run 'loop-contract baseline'",
            exit_code=27,
        )
    data = read_blobs(root, [pin.blob])[pin.blob]
    digest = sha256_bytes(data)
    if digest != pin.sha256:
        raise WorkspaceError("the pinned contract's bytes do not match their SHA-256")
    if digest == baseline.contract_sha256:
        # exactly the bytes the baseline validated: the schema pass (and loading jsonschema,
        # a tenth of a second) would only repeat it
        return parse_validated(data, Path(baseline.contract_path))
    return parse_contract(data, Path(baseline.contract_path))


def _refused(refusal: Reason) -> dict[str, Any]:
    return {"mode": PROCESS, "note": refusal.message, "leftovers": []}


@dataclass(frozen=True)
class _Session:
    """What every pytest run of one verify shares: the pinned referee, the candidate's tree,
    the hidden tests and the confinement (None when the sandbox could not be set up, and
    ``refusal`` says why)."""

    root: Path
    baseline: BaselineRecord
    contract: Contract
    candidate: Candidate
    hidden: list[HiddenFile]
    setup: RunSetup | None
    refusal: Reason | None
    working_tree: bool = False  # the candidate is the work tree (no ref): its checkpoints

    @property
    def globs(self) -> list[str]:
        return list(self.baseline.protected_globs)

    @property
    def referee(self) -> list[str]:
        """The referee's files: pins, included files, hidden tests."""
        paths = [*self.baseline.pins, *included_pins(self.baseline), *(h.to for h in self.hidden)]
        return list(dict.fromkeys(paths))

    @property
    def suite_writes(self) -> dict[str, str]:
        """Files the unchanged suite wrote at baseline (see :mod:`.suite_writes`)."""
        return dict(self.baseline.extra.get("suite_writes") or {})

    @property
    def frozen(self) -> list[str]:
        """Read-only in every sandboxed run: the referee's files and their ``__pycache__``,
        except the files the suite itself wrote at baseline."""
        written = self.suite_writes
        return [
            *(p for p in self.referee if p not in written),
            *sealed_folders(self.referee),
        ]

    @property
    def hashed(self) -> list[str]:
        """Checked unchanged after the run: the referee's files but those whose bytes the
        suite itself rewrote at baseline."""
        written = self.suite_writes
        return [p for p in self.referee if written.get(p) != CONTENT]

    def prepare(self, dest: Path) -> None:
        """Build a scratch copy of the candidate with the referee restored and hidden tests in."""
        export_tree(self.root, self.candidate.tree, dest)
        purge_bytecode(dest, self.candidate.files)
        restore_pins(self.root, dest, self.baseline, self.candidate.files, self.globs)
        write_pinned(self.root, dest, included_pins(self.baseline))
        write_hidden(dest, self.hidden)
        seal(dest, self.referee, StateDir.of(self.root).bytecode)

    def rerun(self, dest: Path, nodeids: Sequence[str], timeout: float) -> PytestRun:
        """Run ``nodeids`` again in ``dest``, confined like the first run, with a fresh nonce:
        those ids only, even when the contract's ``pytest.args`` name whole test files."""
        assert self.setup is not None  # reruns are skipped when the run could not start
        return run_pytest(
            dest,
            nonce=secrets.token_hex(16),
            autoload=False,
            plugins=self.baseline.plugins,
            extra_args=[*self.contract.pytest.args, *nodeids],
            timeout=timeout,
            testenv=self.setup.testenv,
            confinement=self.setup.confinement,
            egress=self.contract.egress_allow,
            frozen=self.frozen,
            only=nodeids,
        )


def _prepare_setup(
    root: Path, contract: Contract, baseline: BaselineRecord, python: str | None, target: Path
) -> tuple[RunSetup | None, Reason | None]:
    """The confinement for the runs, or the reason it cannot be had (an ``error`` verdict)."""
    try:
        setup = prepare_run(root, contract, python=python, verdict_path=target)
    except SandboxUnavailable as exc:
        return None, Reason("sandbox_unavailable", str(exc))
    require_same_environment(baseline.extra.get("test_env"), setup.testenv.describe())
    return setup, None


def _candidate_and_setup(
    root: Path,
    contract: Contract,
    baseline: BaselineRecord,
    candidate_ref: str | None,
    python: str | None,
    target: Path,
) -> tuple[Candidate, RunSetup | None, Reason | None]:
    """The candidate, read by git on a thread while the interpreter and the sandbox are
    probed, and the confinement (or the reason it cannot be had)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopcontract-candidate") as pool:
        reading = pool.submit(read_candidate, root, baseline, candidate_ref)
        setup, refusal = _prepare_setup(root, contract, baseline, python, target)
        return reading.result(), setup, refusal


def _gather(session: _Session, history: History | None) -> _Gathered:
    """What the candidate's diff alone shows, on a thread beside the main run (see
    :func:`diff_evidence`)."""
    found = diff_evidence(
        session.root, session.baseline, session.contract, session.candidate, history
    )
    checks, matches = list(found.checks), list(found.matches)
    if session.contract.review is not None:
        record, evidence = _review(session)
        checks += [record]
        matches += evidence
    # read now, not after the run: the verdict names both versions
    pytest_version()
    _ = pytest_loopcontract.__version__
    return _Gathered(
        found.findings, checks=checks, checkpoints=list(found.checkpoints), matches=matches
    )


def _review(session: _Session) -> tuple[dict[str, Any], list[Match]]:
    """The contract's judged review of the diff (``review.py``), on the gathering thread
    beside the run; a special case waits for a person like the reward rules' evidence."""
    plan = _acceptance_plan(session)
    tests = {
        f"{path}::{name}": function.text
        for path, functions in plan.functions.items()
        for name, function in functions.items()
    }
    record, matches = run_review(session.contract, session.candidate.patch, tests)
    assert record is not None  # the contract names a review seat
    return record, matches


@dataclass(frozen=True)
class _MainRun:
    """The main test run's own facts, which its checks and the verdict's evidence all read."""

    scratch: Path  # the prepared copy the main run (and its reruns) run in
    nonce: str
    started: tuple[str, float]  # when the verify began: UTC text and the monotonic clock
    coverage_data: Path | None  # where coverage.py writes, when a measured gate needs it


def _plan(session: _Session) -> TwinPlan | None:
    """The referee's copies and twins of every acceptance test that may run, from the pinned
    bytes (and the hidden tests'); None when the contract turns twins off."""
    if not session.contract.tamper.twins_enabled:
        return None
    return _acceptance_plan(session)


def _acceptance_plan(session: _Session) -> TwinPlan:
    """Every acceptance test's function, read from the pinned bytes, with its twins."""
    contract, baseline = session.contract, session.baseline
    acceptance = acceptance_nodeids(contract, baseline.fail_to_pass, baseline.collected)
    scored = {item.id for item in contract.scored_dod()}
    marks = dict(baseline.extra.get("dod_marks") or {})
    acceptance += [n for item, ids in marks.items() if item in scored for n in ids]
    acceptance += [test.to for test in contract.hidden_tests()]
    reader = source_reader(blob_reader(session.root, baseline.pins), session.hidden)
    return plan_twins(acceptance, reader)


def _policy(session: _Session) -> dict[str, Any]:
    """The capability policy of the main run: the candidate's changed files (not the pinned
    ones, which run with their baseline bytes), the referee's test sources, the profile."""
    pins = session.baseline.pins
    changed = [p for status, p in session.candidate.changed if status != "D" and p not in pins]
    profile = session.baseline.extra.get("capability_profile") or []
    return verify_settings(changed, session.referee, profile)


def _referee(
    run: PytestRun, plan: TwinPlan | None, contract: Contract
) -> tuple[PytestRun, list[Finding], dict[str, Any]]:
    """The run with the referee's items judged and folded back, and the ``twins`` check."""
    if plan is None:
        return run, [], check_record("twins", "skipped", "disabled by the contract")
    if not plan.functions:
        why = "; ".join(plan.notes) or "no acceptance test to twin"
        return run, [], check_record("twins", "skipped", why)
    if run.results is None:
        return run, [], check_record("twins", "not_run", "the run gave no results")
    judged = judge_referee(run.results, plan, run.key)
    message = (
        f"{len(judged.checked)} passing acceptance test(s) cross-checked by {judged.twins} "
        f"twin(s); {len(judged.findings)} finding(s)"
    )
    if judged.unchecked:
        message += f"; not cross-checked: {', '.join(judged.unchecked[:5])}"
    notes = [*plan.notes, *run.results.referee_errors]
    record = check_record(
        "twins",
        "ran",
        "; ".join([message, *notes]),
        tests=judged.checked,
        unchecked=judged.unchecked,
    )
    folded = dataclasses.replace(run, results=judged.results, raw=run.results)
    findings = [
        f._replace(allowed=True) if contract.tamper.allows(f.code, f.path) else f
        for f in judged.findings
    ]
    return folded, findings, record


def _first_run(
    session: _Session, main: _MainRun
) -> tuple[PytestRun, list[Reason], list[Finding], dict[str, Any] | None]:
    """The main test run (or the refusal standing in for it), its errors, its findings and
    the referee's check."""
    contract, baseline, setup = session.contract, session.baseline, session.setup
    if setup is None:
        refusal = session.refusal
        assert refusal is not None  # set exactly when the setup failed
        return PytestRun(None, None, refusal.message, "", 0.0, False), [refusal], [], None
    plan = _plan(session)
    scratch = main.scratch
    referee = referee_digests(scratch, session.hashed)
    phases.phase("running the tests")
    run = run_pytest(
        scratch,
        nonce=main.nonce,
        autoload=False,
        plugins=baseline.plugins,
        extra_args=list(contract.pytest.args),
        timeout=contract.pytest.timeout,
        coverage_data=main.coverage_data,
        testenv=setup.testenv,
        confinement=setup.confinement,
        egress=contract.egress_allow,
        frozen=session.frozen,
        count_tests=True,
        referee=plan.settings() if plan is not None and plan.functions else None,
        policy=_policy(session),
    )
    phases.phase("checking the run")
    run, twin_findings, record = _referee(run, plan, contract)
    errors = run_errors(
        run.exit_code,
        run.timed_out,
        run.results,
        run.results_error,
        run.output_tail,
        contract.pytest.timeout,
        coverage_python=setup.testenv.python if main.coverage_data else None,
    )
    if contract.tamper.twins_required and (missing := _not_cross_checked(record, plan)):
        errors.append(missing)
    findings = [*run_findings(run, baseline, session.candidate.files), *twin_findings]
    return run, errors, [*findings, *referee_changes(scratch, referee)], record


def _not_cross_checked(record: dict[str, Any], plan: TwinPlan | None) -> Reason | None:
    """``tamper.twins.require``: the error when an acceptance test went unchecked, or the
    plan had nothing it could twin."""
    if plan is None:
        return None  # twins disabled: the contract said so itself
    unchecked = list(record.get("unchecked") or [])
    if record.get("status") == "ran" and not unchecked:
        return None
    shown = ", ".join(unchecked[:5]) or record.get("message", "")
    return Reason(
        "twins_unchecked",
        f"tamper.twins.require: acceptance tests not cross-checked by twins: {shown}; a test "
        "whose assertions the referee cannot mutate needs another check (hidden tests, review)",
    )


def _rerun_flaky(
    session: _Session, scratch: Path, results: RunResults
) -> tuple[RunResults, list[dict[str, Any]]]:
    """Run failing pass-to-pass tests again, confined like the first run (``pytest.reruns``)."""
    baseline, contract = session.baseline, session.contract
    failing = flaky_failures(results, baseline.pass_to_pass, baseline.fail_to_pass)
    if not failing:
        return results, []

    def run_again(ids: Sequence[str]) -> dict[str, str] | None:
        again = session.rerun(scratch, ids, contract.pytest.timeout)
        return again.results.outcomes() if again.results is not None else None

    return rerun_pass_to_pass(results, failing, contract.pytest.reruns, run_again)


def _after_run(
    session: _Session, main: _MainRun, run: PytestRun, errors: list[Reason]
) -> tuple[RunResults, list[dict[str, Any]], list[Finding]]:
    """Reruns of flaky tests, then what the results show: doctests, cross-checks.

    Appends to ``errors`` (tests that imported an installed copy)."""
    baseline, contract = session.baseline, session.contract
    results = run.results or RunResults(nonce=main.nonce)
    reruns: list[dict[str, Any]] = []
    if session.setup is not None and contract.pytest.reruns and not errors:
        results, reruns = _rerun_flaky(session, main.scratch, results)
    errors += outside_import_errors(results)
    findings = doctest_findings(
        dict(baseline.extra.get("doctests") or {}), results.doctests, list(contract.protect.allow)
    )
    if run.results is not None and run.exit_code is not None:
        # A run that ended abnormally (INTERNALERROR, interrupted, ...) is already an
        # ``error``; the tests it never reached are a consequence, not tampering.
        expected = [] if errors else [*baseline.fail_to_pass, *baseline.pass_to_pass]
        findings += crosscheck_findings(
            run.results,
            nonce=main.nonce,
            exit_code=run.exit_code,
            expected=expected,
            allowed_plugins=baseline.plugins,
            reported=run.raw,
        )
    return results, reruns, findings


@dataclass
class _Gathered:
    """The verdict's evidence as the phases produce it, in the order the verdict lists it."""

    findings: list[Finding]
    errors: list[Reason] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    reruns: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[Reason] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)  # evidence, requested after the run


def _evidence(session: _Session, gathered: _Gathered, main: _MainRun, run: PytestRun) -> Evidence:
    """The launcher's evidence for :func:`evaluate`, trust ``isolated``."""
    baseline, candidate, setup = session.baseline, session.candidate, session.setup
    scratch, coverage_data = main.scratch, main.coverage_data
    if setup is None:
        assert session.refusal is not None  # set exactly when the setup failed
        confinement = _refused(session.refusal)
    else:
        confinement = setup.describe(run)
    return Evidence(
        trust="isolated",
        nonce=main.nonce,
        workdir=scratch,
        contract_relpath=baseline.contract_path,
        started=main.started[0],
        started_monotonic=main.started[1],
        fail_to_pass=baseline.fail_to_pass,
        pass_to_pass=baseline.pass_to_pass,
        base_commit=baseline.commit,
        findings=gathered.findings,
        errors=gathered.errors,
        coverage_data=coverage_data if coverage_data and coverage_data.exists() else None,
        changed_lines=added_lines_from_diff(candidate.patch),
        empty_diff=not candidate.changed,
        commit=candidate.commit,
        dirty=candidate.dirty,
        command_env=setup.command_env(scratch) if setup else None,
        checkpoints=gathered.checkpoints,
        confine=setup.confine_command(scratch) if setup else None,
        confinement=confinement,
        test_env=setup.testenv.describe() if setup else None,
        unstable=list(baseline.extra.get("unstable") or ()),
        reruns=gathered.reruns,
        checks=gathered.checks,
    )


def _capabilities(session: _Session, run: PytestRun, gathered: _Gathered) -> None:
    """The capability policy's report: denied uses are findings, the others are evidence for
    a person, requested with the diff's for the same file."""
    uses = run.results.capability_uses if run.results is not None else []
    findings, evidence = capability_findings(uses, session.contract)
    gathered.findings += findings
    gathered.matches += evidence


def _request_checkpoints(
    session: _Session, gathered: _Gathered, history: History | None, *, complete: bool
) -> list[dict[str, Any]]:
    """One request per file for everything a person must look at (the diff's patterns, the
    reward rules', the run's and the review's evidence), before the harness's own.

    A verify of the work tree then withdraws the pending diff requests this tree no longer
    raises (``complete``: every source of evidence looked; see :func:`withdraw_gone`), and
    returns what it withdrew."""
    from pytest_loopcontract.checkpoints.clearance import person_name
    from pytest_loopcontract.checkpoints.gate import request_checkpoints, withdraw_gone

    history = history or History(StateDir.of(session.root).folder)
    if gathered.matches:
        by = person_name(session.root)
        requested = request_checkpoints(history, gathered.matches, by)
        gathered.checkpoints = [*requested, *gathered.checkpoints]
    if not session.working_tree:
        return []  # another tree (a ref, a pushed commit): what the work tree raised stands
    changed = [path for _, path in session.candidate.changed]
    withdrawn = withdraw_gone(history, gathered.matches, changed, complete=complete)
    return [record.data for record in withdrawn]


def _complete(session: _Session, run: PytestRun, gathered: _Gathered) -> bool:
    """Every source of checkpoint evidence looked at this candidate: the run reported (its
    capability uses) and the review, when the contract asks for one, answered."""
    if run.results is None:
        return False
    review = [c for c in gathered.checks if c.get("id") == "review"]
    return session.contract.review is None or any(c.get("status") != "not_run" for c in review)


def _judge(
    session: _Session, gathering: Future[_Gathered], main: _MainRun, history: History | None
) -> tuple[dict[str, Any], PytestRun, float, list[dict[str, Any]]]:
    """Run the tests in the prepared scratch copy, check the run, evaluate the verdict.

    Returns the verdict, the main run, the seconds the main run took (not launcher time) and
    the checkpoints withdrawn."""
    t_before = time.monotonic()
    run, errors, found, twins = _first_run(session, main)
    in_run = time.monotonic() - t_before
    gathered = gathering.result()
    gathered.errors = errors
    results, gathered.reruns, more = _after_run(session, main, run, gathered.errors)
    gathered.findings += [*found, *more]
    gathered.checks += [twins] if twins is not None else []
    _capabilities(session, run, gathered)
    complete = _complete(session, run, gathered)
    withdrawn = _request_checkpoints(session, gathered, history, complete=complete)
    document = evaluate(session.contract, results, _evidence(session, gathered, main, run))
    scrub_quotes(document, session.hidden)  # a quoted hidden line in any message is replaced
    return document, run, in_run, withdrawn


def _run_session(
    session: _Session,
    history: History | None,
    *,
    nonce: str,
    started: tuple[str, float],
    keep_scratch: bool,
) -> tuple[dict[str, Any], PytestRun, float, list[dict[str, Any]]]:
    """Prepare the scratch copy, judge the candidate in it, then clean up.

    Returns the verdict, the main run, the launcher's own seconds (not the main run's) and
    the checkpoints withdrawn.
    A run that is stopped (Ctrl-C, SIGTERM) or fails has ended its children by the time the
    exception reaches here (:func:`run_pytest`); its folders are removed before it goes on,
    not after the process exits."""
    scratch = make_scratch(tree_bytes=session.candidate.size, keep=keep_scratch)
    private = make_scratch("loopcontract-private-")
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopcontract-gather")
    judged = False
    try:
        gathering = pool.submit(_gather, session, history)
        phases.phase("preparing the scratch copy")
        session.prepare(scratch)
        coverage = private / "coverage.data" if session.contract.coverage_run_gates() else None
        main = _MainRun(scratch, nonce, started, coverage)
        document, run, in_run, withdrawn = _judge(session, gathering, main, history)
        launcher_seconds = time.monotonic() - started[1] - in_run
        judged = True
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        remove_hidden(scratch, session.hidden)
        if not keep_scratch:
            # judged: the verdict waits for nothing; else (stopped, failed) gone before we are
            (remove_tree_later if judged else remove_tree)(scratch)
        remove_tree(private)
    return document, run, launcher_seconds, withdrawn


def verify(
    root: Path,
    *,
    candidate_ref: str | None = None,
    verdict_path: Path | None = None,
    keep_scratch: bool = False,
    history: History | None = None,
    python: str | None = None,
) -> VerifyOutcome:
    """Verify the working tree (or ``candidate_ref``) of ``root`` against its baseline.

    Scratch folders that earlier runs, killed outright, left behind are swept first."""
    started, t0 = utc_now(), time.monotonic()
    sweep_scratch()
    phases.phase("reading the baseline and the candidate")
    baseline = load_baseline(root)
    contract = pinned_contract(root, baseline)
    hidden = load_for_verify(root, contract, baseline)  # never in the repository, only copied in
    target = verdict_path or StateDir.of(root).verdict
    candidate, setup, refusal = _candidate_and_setup(
        root, contract, baseline, candidate_ref, python, target
    )
    nonce = secrets.token_hex(16)
    stale = stale_baseline(root, baseline, candidate)
    if stale is not None:  # another history's baseline: nothing of this tree is judged
        document = stale_verdict(
            contract, baseline, candidate, stale, nonce=nonce, started=(started, t0)
        )
        write_json_atomic(target, document)
        return VerifyOutcome(document, target, time.monotonic() - t0, 0.0)
    session = _Session(
        root, baseline, contract, candidate, hidden, setup, refusal, candidate_ref is None
    )
    document, run, launcher_seconds, withdrawn = _run_session(
        session, history, nonce=nonce, started=(started, t0), keep_scratch=keep_scratch
    )
    phases.phase("writing the verdict")
    write_json_atomic(target, document)
    failing = VerdictView(document).failing_tests()
    return VerifyOutcome(
        document,
        target,
        launcher_seconds,
        run.duration,
        changed=[p for _, p in candidate.changed],
        progress_key=progress_key(diff_hash(candidate.patch), failing),
        withdrawn=withdrawn,
    )
