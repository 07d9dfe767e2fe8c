"""``loop-contract baseline``: run the suite on the base commit, record the sets and the pins.

The baseline is what makes a contract meaningful. In ``fix`` mode the acceptance tests must
fail there (a test that already passes proves nothing); in ``improve`` mode everything must pass
there. The pins recorded here are the verifier's memory of what the referee looked like.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import TYPE_CHECKING, Any

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import utc_now, write_json_atomic
from pytest_loopcontract.plural import plural
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import EXIT_BASELINE, DodResult
from pytest_loopcontract.verifier import gates, phases
from pytest_loopcontract.verifier.baseline.messages import (
    broken_run_message,
    collect_error_hint,
    outside_import_message,
)
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.evaluate import outcomes_with_collect_errors
from pytest_loopcontract.verifier.hidden import (
    HiddenFile,
    baseline_problem,
    check_not_in_tree,
    hidden_record,
    read_hidden,
    write_hidden,
)
from pytest_loopcontract.verifier.referee import referee_paths
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.selectors import UnmatchedSelectors, unmatched_selectors
from pytest_loopcontract.verifier.stability import outcome_changes, repeat_runs
from pytest_loopcontract.verifier.suite_writes import stamp_tree, suite_writes
from pytest_loopcontract.verifier.tamper.capabilities import baseline_settings
from pytest_loopcontract.verifier.tamper.pins import protected_paths
from pytest_loopcontract.workspace import (
    DEFAULT_PROTECT,
    Pin,
    TreeEntry,
    WorkspaceError,
    export_tree,
    is_dirty,
    list_tree,
    make_scratch,
    pin_untracked,
    purge_bytecode,
    read_blobs,
    remove_tree,
    resolve_commit,
    sha256_bytes,
    tree_of,
    write_pinned,
)

if TYPE_CHECKING:
    from pytest_loopcontract.verifier.runner import PytestRun, RunSetup
    from pytest_loopcontract.verifier.testenv import TestEnv

__all__ = ["BaselineRefused", "take_baseline"]


class BaselineRefused(LoopContractError):
    """The baseline breaks the contract's mode rule (exit 27)."""

    exit_code = EXIT_BASELINE
    label = "baseline refused"


def protect_globs(contract: Contract) -> list[str]:
    globs = list(DEFAULT_PROTECT) if contract.protect.defaults else []
    globs.extend(contract.protect.paths)
    return globs


@dataclass(frozen=True)
class _BaseCommit:
    """The commit the baseline is taken from, its files and the contract committed there."""

    commit: str
    tree: str
    files: dict[str, TreeEntry]
    contract_bytes: bytes
    contract: Contract


def _read_base(root: Path, contract_relpath: str, base_ref: str | None) -> _BaseCommit:
    """Resolve the base commit and read its contract; refuse a dirty tree or a missing one."""
    # Resolve first: in a repository without commits "make a first commit" is the useful
    # message, not "the working tree has uncommitted changes".
    commit = resolve_commit(root, base_ref or "HEAD")
    if base_ref is None and is_dirty(root):
        raise WorkspaceError(
            "the working tree has uncommitted changes; the baseline is a commit: commit or "
            "stash them, or pass --base REF to take the baseline from a given commit"
        )
    tree = tree_of(root, commit)
    files = list_tree(root, tree)
    if contract_relpath not in files:
        raise WorkspaceError(
            f"{contract_relpath} is not committed at {commit[:12]}: commit the contract "
            "first, so that it is pinned with the baseline"
        )
    contract_blob = read_blobs(root, [files[contract_relpath].blob])[files[contract_relpath].blob]
    contract = parse_contract(contract_blob, Path(contract_relpath))
    return _BaseCommit(commit, tree, files, contract_blob, contract)


@dataclass(frozen=True)
class _BaseRuns:
    """The baseline run, a second collection, and the ``pytest.stability_runs`` repeats."""

    run: PytestRun
    again: PytestRun
    repeats: list[PytestRun]
    written: dict[str, str]  # files of the tree the suite itself wrote (see suite_writes)


def _run_base(
    root: Path,
    base: _BaseCommit,
    setup: RunSetup,
    included: Mapping[str, Pin],
    hidden: Sequence[HiddenFile],
) -> _BaseRuns:
    """Run the base commit's suite in a scratch checkout, removed afterwards."""
    from pytest_loopcontract.verifier.bytecode import keep
    from pytest_loopcontract.verifier.runner import run_pytest  # the launcher's machinery

    contract = base.contract

    def run(extra: Sequence[str], *, count: bool = False) -> PytestRun:
        return run_pytest(
            scratch,
            nonce=secrets.token_hex(16),
            autoload=True,
            extra_args=list(extra),
            timeout=contract.pytest.timeout,
            testenv=setup.testenv,
            confinement=setup.confinement,
            egress=contract.egress_allow,
            write_bytecode=True,  # the reference run's rewritten tests are kept (bytecode.py)
            count_tests=count,
            policy=baseline_settings() if count else None,  # the first run profiles
        )

    scratch = make_scratch("loopcontract-baseline-")
    try:
        export_tree(root, base.tree, scratch)
        purge_bytecode(scratch, base.files)
        write_pinned(root, scratch, included)
        write_hidden(scratch, hidden)
        phases.phase("running the tests at the base commit")
        stamps = stamp_tree(scratch)
        first = run(contract.pytest.args, count=True)
        written = suite_writes(scratch, stamps, {p: e.blob for p, e in base.files.items()})
        # A second collection: ids computed at collection time (the clock, a random value, a
        # temporary path) differ between the two and can never be expected again.
        phases.phase("collecting again (ids that change between runs)")
        again = run([*contract.pytest.args, "--collect-only", "-q"])
        # pytest.stability_runs: the same run again, to find pass-to-pass tests that flake.
        if contract.pytest.stability_runs:
            phases.phase(f"stability runs ({contract.pytest.stability_runs})")
        repeats = repeat_runs(lambda: run(contract.pytest.args), contract.pytest.stability_runs)
        keep(scratch, StateDir.of(root).bytecode)
    finally:
        remove_tree(scratch)
    return _BaseRuns(first, again, repeats, written)


def _require_coverage(contract: Contract, testenv: TestEnv, python_option: str | None) -> None:
    """Refuse up front when coverage gates need coverage.py where the tests run and it is not
    there: every verify would otherwise end with no test run and every test missing."""
    gates = contract.coverage_run_gates()
    if gates and testenv.missing_modules(["coverage"]):
        names = ", ".join(gate.id for gate in gates)
        again = "loop-contract baseline" + (
            f" --python {quote(python_option)}" if python_option else ""
        )
        raise BaselineRefused(
            f"the measured gates {names} need coverage.py in the test interpreter "
            f"{testenv.python}, which cannot import it. Install it there and take the "
            f"baseline again:\n  {quote(testenv.python)} -m pip install coverage\n  {again}"
        )


def _usable_results(runs: _BaseRuns, python: str) -> RunResults:
    """The baseline run's results, or a refusal when any run broke or measured another copy."""
    for number, broken in enumerate([runs.run, *runs.repeats], start=1):
        if broken.results is None or broken.exit_code not in (0, 1):
            where = f"run {number} (pytest.stability_runs): " if number > 1 else ""
            raise BaselineRefused(where + broken_run_message(broken, python))
    results = runs.run.results
    assert results is not None  # checked just above
    if results.outside_imports:
        raise BaselineRefused(
            outside_import_message(results.outside_imports[0], runs.run.isolation)
        )
    return results


@dataclass(frozen=True)
class _TestSets:
    """What a verify run is measured against: the sets, and the ids too shaky to expect."""

    fail_to_pass: list[str]
    pass_to_pass: list[str]
    unstable: list[dict[str, Any]]


def _test_sets(
    contract: Contract, results: RunResults, outcomes: Mapping[str, str], runs: _BaseRuns
) -> _TestSets:
    """Fail-to-pass and pass-to-pass sets, without tests whose id or outcome is unstable;
    refuses a baseline that breaks the contract's mode rule."""
    dod = gates.evaluate_dod(contract.scored_dod(), outcomes, results.dod_marks)
    acceptance = [n for item in dod for n, o in item.tests if o != "missing"]
    _check_mode_rule(contract, dod, outcomes, results.collect_errors)

    unstable = unstable_ids(results, runs.again.results)
    shaky = {u["nodeid"] for u in unstable}
    unstable += outcome_changes(
        outcomes,
        [r.results.outcomes() for r in runs.repeats if r.results is not None],
        [n for n, o in outcomes.items() if o == "passed" and n not in shaky],
    )
    shaky = {u["nodeid"] for u in unstable}
    passed = [n for n, o in outcomes.items() if o == "passed" and n not in shaky]
    fail_to_pass = [n for n in acceptance if outcomes.get(n) != "passed" and n not in shaky]
    accepted = set(acceptance)
    pass_to_pass = [n for n in passed if n not in accepted]
    return _TestSets(fail_to_pass, pass_to_pass, unstable)


def _pins(
    root: Path,
    base: _BaseCommit,
    contract_relpath: str,
    globs: list[str],
    results: RunResults,
    outcomes: Mapping[str, str],
) -> dict[str, Pin]:
    """The referee and the protected files of the base commit, each with its SHA-256."""
    explicit = referee_paths(
        contract_relpath,
        base.contract,
        base.files,
        outcomes,
        results.doctests,
        results.module_origins.values(),
    )
    files = base.files
    pinned = protected_paths(files, globs, explicit)
    contents = read_blobs(root, (files[p].blob for p in pinned))
    return {
        p: Pin(sha256=sha256_bytes(contents[files[p].blob]), blob=files[p].blob, mode=files[p].mode)
        for p in sorted(pinned)
    }


def take_baseline(
    root: Path, contract_relpath: str, base_ref: str | None = None, python: str | None = None
) -> BaselineRecord:
    """Run the base commit's suite in a scratch checkout and write ``baseline.json``."""
    phases.phase("reading the base commit")
    base = _read_base(root, contract_relpath, base_ref)
    contract = base.contract
    hidden = read_hidden(
        root, contract, base.contract_bytes
    )  # a missing one: ContractError, its line
    check_not_in_tree(root, contract, base.contract_bytes, base.files, hidden)

    from pytest_loopcontract.verifier.runner import prepare_run  # the launcher's machinery
    from pytest_loopcontract.verifier.sandbox import SandboxUnavailable

    try:
        setup = prepare_run(root, contract, python=python)
    except SandboxUnavailable as exc:
        raise BaselineRefused(str(exc)) from None
    _require_coverage(contract, setup.testenv, python)
    included = pin_untracked(root, contract.pytest.include_untracked)
    runs = _run_base(root, base, setup, included, hidden)
    phases.phase("recording the baseline")
    results = _usable_results(runs, setup.testenv.python)
    outcomes = outcomes_with_collect_errors(results)
    if problem := baseline_problem(hidden, outcomes):
        raise BaselineRefused(problem)
    _check_selectors(root, base, outcomes, results.collect_errors)
    sets = _test_sets(contract, results, outcomes, runs)
    globs = protect_globs(contract)
    record = BaselineRecord(
        commit=base.commit,
        tree=base.tree,
        contract_path=contract_relpath,
        contract_sha256=contract.sha256,
        contract_id=contract.id,
        mode=contract.mode,
        collected=sorted(n for n in outcomes if n),
        outcomes=outcomes,
        fail_to_pass=sets.fail_to_pass,
        pass_to_pass=sets.pass_to_pass,
        pins=_pins(root, base, contract_relpath, globs, results, outcomes),
        protected_globs=globs,
        plugins=sorted(set(results.plugins) | set(contract.pytest.plugins)),
        created=utc_now(),
        extra={
            "doctests": dict(results.doctests),
            "dod_marks": {k: list(v) for k, v in results.dod_marks.items()},
            "test_env": setup.testenv.describe(),
            "isolation": runs.run.isolation,
            "leftovers": list(runs.run.leftovers),
            "runtime_patches": list(results.runtime_patches),
            "module_origins": dict(results.module_origins),
            "unstable": sets.unstable,
            "included": {p: pin._asdict() for p, pin in included.items()},
            "suite_writes": runs.written,
            "capability_profile": [list(p) for p in results.capability_profile],
            **({"hidden": hidden_record(hidden, outcomes)} if hidden else {}),
        },
    )
    write_json_atomic(StateDir.of(root).baseline, record.to_json())
    return record


def _check_selectors(
    root: Path,
    base: _BaseCommit,
    outcomes: Mapping[str, str],
    collect_errors: Sequence[Mapping[str, str]],
) -> None:
    """Refuse test ids of the contract that name no test the baseline collected: a misspelled
    one as a contract error at its line, with the closest ids (exit 26); one in a file that is
    in the working tree but not in the base commit, with "commit the tests first" (exit 27)."""
    unmatched = unmatched_selectors(base.contract, outcomes, collect_errors)
    uncommitted = [u for u in unmatched if _uncommitted(root, base.files, u.selector)]
    stray = [u for u in unmatched if u not in uncommitted]
    if stray:
        raise UnmatchedSelectors.at(
            base.contract_bytes, str(base.contract.path), stray, none_collected=not outcomes
        )
    if uncommitted:
        named = ", ".join(f"{u.selector} ({u.field})" for u in uncommitted)
        raise BaselineRefused(
            f"the contract names tests in files that are not committed at {base.commit[:12]}: "
            f"{named}; commit the tests first"
        )


def _uncommitted(root: Path, files: Mapping[str, TreeEntry], selector: str) -> bool:
    """Whether ``selector``'s file (or folder) is in the working tree but not in ``files``."""
    where = selector.split("::", 1)[0].split("[", 1)[0].rstrip("/")
    if not where or "*" in where or "?" in where:
        return False
    if where in files or any(p.startswith(where + "/") for p in files):
        return False
    return (root / where).exists()


def unstable_ids(first: Any, second: Any) -> list[dict[str, Any]]:
    """Test ids of the baseline run that a second collection did not produce again."""
    if second is None or not second.collected:
        return []
    again = set(second.collected)
    return [
        {
            "nodeid": t.nodeid,
            "reason": "not collected again with the same id (computed at collection time)",
        }
        for t in first.tests
        if t.nodeid not in again
    ]


def _check_mode_rule(
    contract: Contract,
    dod: Sequence[DodResult],
    outcomes: Mapping[str, str],
    collect_errors: Sequence[Mapping[str, str]] = (),
) -> None:
    if contract.mode == "improve":
        failing = sorted(n for n, o in outcomes.items() if o in ("failed", "error"))
        if failing:
            verb = "fails" if len(failing) == 1 else "fail"
            raise BaselineRefused(
                f"improve mode needs a passing baseline, but {plural(len(failing), 'test')} "
                f"{verb} there: " + ", ".join(failing[:5])
            )
        return
    if not dod:
        raise BaselineRefused(
            "fix mode needs DoD items with acceptance tests; the contract has none"
        )
    for item in dod:
        missing = [n for n, o in item.tests if o == "missing"]
        if item.status == "no_tests" or missing:
            hint = collect_error_hint(collect_errors, missing)
            raise BaselineRefused(
                f"DoD item {item.id!r}: acceptance tests do not run at baseline "
                f"({', '.join(missing) or 'no test is tied to it'})"
                + (hint or "; commit the tests first")
            )
        if all(o == "passed" for _, o in item.tests):
            raise BaselineRefused(
                f"DoD item {item.id!r} is vacuous: its acceptance tests already pass at "
                "baseline, so passing them proves nothing"
            )
