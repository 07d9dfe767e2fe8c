"""``loop-contract baseline``: run the suite on the base commit, record the sets and the pins.

The baseline is what makes a contract meaningful. In ``fix`` mode the acceptance tests must
fail there (a test that already passes proves nothing); in ``improve`` mode everything must pass
there. The pins recorded here are the verifier's memory of what the referee looked like.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import utc_now, write_json_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import EXIT_BASELINE
from pytest_loopcontract.verifier import gates
from pytest_loopcontract.verifier.baseline_format import (
    FORMAT,
    BaselineFormatError,
    decode_sets,
    encode_sets,
)
from pytest_loopcontract.verifier.hidden import (
    baseline_problem,
    check_not_in_tree,
    hidden_record,
    read_hidden,
    write_hidden,
)
from pytest_loopcontract.verifier.stability import outcome_changes, repeat_runs
from pytest_loopcontract.verifier.tamper.pins import protected_paths
from pytest_loopcontract.verifier.workspace import (
    DEFAULT_PROTECT,
    Pin,
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

__all__ = ["BaselineRecord", "BaselineRefused", "load_baseline", "take_baseline"]


class BaselineRefused(LoopContractError):
    """The baseline breaks the contract's mode rule (exit 27)."""

    exit_code = EXIT_BASELINE
    label = "baseline refused"


@dataclass
class BaselineRecord:
    commit: str
    tree: str
    contract_path: str
    contract_sha256: str
    contract_id: str
    mode: str
    collected: list[str]
    outcomes: dict[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    pins: dict[str, Pin]
    protected_globs: list[str]
    plugins: list[str]
    created: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``baseline.json`` document: the test sets as compact id sets (format 2)."""
        # Field by field, not asdict(): a deep copy of 60,000 ids only to drop them again.
        sets = encode_sets(self.outcomes, self.pass_to_pass)
        data: dict[str, Any] = {"schema_version": FORMAT}
        for f in fields(self):
            if f.name != "collected":  # every id of the outcome sets: not written
                data[f.name] = sets.get(f.name, getattr(self, f.name))
        data["pins"] = {p: asdict(pin) for p, pin in sorted(self.pins.items())}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineRecord:
        try:
            pins = {str(p): Pin(**v) for p, v in dict(data["pins"]).items()}
            collected, outcomes, pass_to_pass = decode_sets(data)
            return cls(
                commit=str(data["commit"]),
                tree=str(data["tree"]),
                contract_path=str(data["contract_path"]),
                contract_sha256=str(data["contract_sha256"]),
                contract_id=str(data["contract_id"]),
                mode=str(data["mode"]),
                collected=collected,
                outcomes=outcomes,
                fail_to_pass=[str(n) for n in data["fail_to_pass"]],
                pass_to_pass=pass_to_pass,
                pins=pins,
                protected_globs=[str(g) for g in data["protected_globs"]],
                plugins=[str(p) for p in data["plugins"]],
                created=str(data.get("created", "")),
                extra=dict(data.get("extra") or {}),
            )
        except BaselineFormatError as exc:
            raise WorkspaceError(str(exc), exit_code=27) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise WorkspaceError(
                f"baseline record is damaged ({exc}): run 'loop-contract baseline' again",
                exit_code=27,
            ) from None


def included_pins(record: BaselineRecord) -> dict[str, Pin]:
    """The git-ignored files the baseline copied in (``pytest.include_untracked``), pinned."""
    raw = record.extra.get("included") or {}
    try:
        return {str(p): Pin(**v) for p, v in dict(raw).items()}
    except TypeError:
        raise WorkspaceError(
            "baseline record is damaged (included files): run 'loop-contract baseline' again",
            exit_code=27,
        ) from None


def load_baseline(root: Path) -> BaselineRecord:
    path = StateDir.of(root).baseline
    if not path.exists():
        raise WorkspaceError(
            f"no baseline yet in {root}: run 'loop-contract baseline' on the base commit first",
            exit_code=27,
        )
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise WorkspaceError(
            f"cannot read {path} ({exc}): run 'loop-contract baseline' again", exit_code=27
        ) from None
    return BaselineRecord.from_json(data)


def protect_globs(contract: Contract) -> list[str]:
    globs = list(DEFAULT_PROTECT) if contract.protect.defaults else []
    globs.extend(contract.protect.paths)
    return globs


_TEST_FOLDER = re.compile(r"^(tests?|testing|[\w.-]*_tests?|tests?_[\w.-]*)$")


def _test_folder(path: str) -> str | None:
    """The top-most folder named like a test folder (``tests``, ``test``, ``testing``,
    ``unit_tests``...) on the way to ``path``, or None when there is none."""
    parts = PurePosixPath(path).parts[:-1]
    for index, part in enumerate(parts):
        if _TEST_FOLDER.match(part):
            return "/".join(parts[: index + 1])
    return None


def referee_files(
    files: Mapping[str, object], test_files: Iterable[str], imported: Iterable[str]
) -> set[str]:
    """The whole referee, beyond the collected test files: every file under the folders that
    hold them (helpers like ``test/common.py``, fixtures, data and golden files), and every
    module the baseline run imported from a test-named folder elsewhere (a ``testing/``
    package). A test file beside the code (``pkg/test_core.py``) pins only itself: its folder
    is the code under change."""
    folders = {f for f in map(_test_folder, [*test_files, *imported]) if f is not None}
    if not folders:
        return set()
    prefixes = tuple(f + "/" for f in sorted(folders))
    return {path for path in files if path.startswith(prefixes)}


def _test_files(nodeids: Sequence[str], files: Mapping[str, object]) -> set[str]:
    out = set()
    for nodeid in nodeids:
        file_part = nodeid.split("::", 1)[0]
        if file_part in files:
            out.add(file_part)
    return out


def take_baseline(
    root: Path, contract_relpath: str, base_ref: str | None = None, python: str | None = None
) -> BaselineRecord:
    """Run the base commit's suite in a scratch checkout and write ``baseline.json``."""
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
    hidden = read_hidden(root, contract, contract_blob)  # a missing one: ContractError, its line
    check_not_in_tree(root, contract, contract_blob, files, hidden)

    from pytest_loopcontract.verifier.runner import (  # the launcher's machinery, only needed here
        prepare_run,
        run_pytest,
    )
    from pytest_loopcontract.verifier.sandbox import SandboxUnavailable

    try:
        setup = prepare_run(root, contract, python=python)
    except SandboxUnavailable as exc:
        raise BaselineRefused(str(exc)) from None
    included = pin_untracked(root, contract.pytest.include_untracked)
    scratch = make_scratch("loopcontract-baseline-")
    try:
        export_tree(root, tree, scratch)
        purge_bytecode(scratch)
        write_pinned(root, scratch, included)
        write_hidden(scratch, hidden)
        run = run_pytest(
            scratch,
            nonce=secrets.token_hex(16),
            autoload=True,
            extra_args=contract.pytest.args,
            timeout=contract.pytest.timeout,
            testenv=setup.testenv,
            confinement=setup.confinement,
            egress=contract.egress_allow,
        )
        # A second collection: ids computed at collection time (the clock, a random value, a
        # temporary path) differ between the two and can never be expected again.
        again = run_pytest(
            scratch,
            nonce=secrets.token_hex(16),
            autoload=True,
            extra_args=[*contract.pytest.args, "--collect-only", "-q"],
            timeout=contract.pytest.timeout,
            testenv=setup.testenv,
            confinement=setup.confinement,
            egress=contract.egress_allow,
        )
        # pytest.stability_runs: the same run again, to find pass-to-pass tests that flake.
        repeats = repeat_runs(
            lambda: run_pytest(
                scratch,
                nonce=secrets.token_hex(16),
                autoload=True,
                extra_args=contract.pytest.args,
                timeout=contract.pytest.timeout,
                testenv=setup.testenv,
                confinement=setup.confinement,
                egress=contract.egress_allow,
            ),
            contract.pytest.stability_runs,
        )
    finally:
        remove_tree(scratch)
    for number, broken in enumerate([run, *repeats], start=1):
        if broken.results is None or broken.exit_code not in (0, 1):
            where = f"run {number} (pytest.stability_runs): " if number > 1 else ""
            raise BaselineRefused(where + broken_run_message(broken, setup.testenv.python))
    results = run.results
    assert results is not None  # checked just above
    if results.outside_imports:
        raise BaselineRefused(outside_import_message(results.outside_imports[0], run.isolation))
    outcomes = results.outcomes()
    for error in results.collect_errors:
        outcomes.setdefault(error.get("nodeid", ""), "error")
    if problem := baseline_problem(hidden, outcomes):
        raise BaselineRefused(problem)
    dod = gates.evaluate_dod(contract.scored_dod(), outcomes, results.dod_marks)
    acceptance = [n for item in dod for n, o in item.tests if o != "missing"]
    _check_mode_rule(contract, dod, outcomes, results.collect_errors)

    unstable = unstable_ids(results, again.results)
    shaky = {u["nodeid"] for u in unstable}
    unstable += outcome_changes(
        outcomes,
        [r.results.outcomes() for r in repeats if r.results is not None],
        [n for n, o in outcomes.items() if o == "passed" and n not in shaky],
    )
    shaky = {u["nodeid"] for u in unstable}
    passed = [n for n, o in outcomes.items() if o == "passed" and n not in shaky]
    fail_to_pass = [n for n in acceptance if outcomes.get(n) != "passed" and n not in shaky]
    accepted = set(acceptance)
    pass_to_pass = [n for n in passed if n not in accepted]

    globs = protect_globs(contract)
    # Doctest items live in the code under test: pinning their modules would revert fixes.
    doctests = set(results.doctests)
    explicit = {contract_relpath} | _test_files([n for n in outcomes if n not in doctests], files)
    doctest_only = {n.split("::", 1)[0] for n in doctests} - {
        n.split("::", 1)[0] for n in outcomes if n not in doctests
    }
    explicit |= (
        {s.split("::", 1)[0] for s in contract.acceptance_selectors()} & set(files)
    ) - doctest_only
    explicit |= referee_files(files, explicit, results.module_origins.values()) - doctest_only
    pinned = protected_paths(files, globs, explicit & set(files))
    contents = read_blobs(root, (files[p].blob for p in pinned))
    pins = {
        p: Pin(sha256=sha256_bytes(contents[files[p].blob]), blob=files[p].blob, mode=files[p].mode)
        for p in sorted(pinned)
    }
    record = BaselineRecord(
        commit=commit,
        tree=tree,
        contract_path=contract_relpath,
        contract_sha256=contract.sha256,
        contract_id=contract.id,
        mode=contract.mode,
        collected=sorted(n for n in outcomes if n),
        outcomes=outcomes,
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        pins=pins,
        protected_globs=globs,
        plugins=sorted(set(results.plugins) | set(contract.pytest.plugins)),
        created=utc_now(),
        extra={
            "doctests": dict(results.doctests),
            "test_env": setup.testenv.describe(),
            "isolation": run.isolation,
            "leftovers": list(run.leftovers),
            "runtime_patches": list(results.runtime_patches),
            "module_origins": dict(results.module_origins),
            "unstable": unstable,
            "included": {p: asdict(pin) for p, pin in included.items()},
            **({"hidden": hidden_record(hidden, outcomes)} if hidden else {}),
        },
    )
    write_json_atomic(StateDir.of(root).baseline, record.to_json())
    return record


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


def broken_run_message(run: Any, python: str) -> str:
    """Why the baseline run produced nothing usable, with the fix when the cause is known."""
    why = "timed out" if run.timed_out else f"pytest exited {run.exit_code}"
    tail = run.output_tail[-2000:]
    if "No module named pytest" in tail:
        return (
            f"pytest is not installed in the test interpreter {python}: install it there "
            f"('{python} -m pip install pytest'), or choose another with --python or "
            "pytest.python in the contract"
        )
    return f"the baseline run is broken ({why}; {run.results_error or 'see output'}):\n{tail}"


def outside_import_message(shadow: Mapping[str, str], isolation: str) -> str:
    if isolation == "sandbox":
        fix = "put the source folder in the contract's pytest.pythonpath (for example [src])"
    else:
        fix = (
            "an editable install points at the repository's working tree, which process "
            "isolation cannot replace with the scratch copy: install bubblewrap so that verify "
            "runs in the sandbox, or put the source folder in the contract's pytest.pythonpath"
        )
    return (
        f"the baseline run imported {shadow['module']!r} from {shadow['imported']}, not from "
        f"the tree under test ({shadow['local']}), so it would measure another copy: {fix}"
    )


def _collect_error_hint(errors: Sequence[Mapping[str, str]], nodeids: Sequence[str]) -> str:
    """The collection error behind tests that did not run, in its own words."""
    files = {n.split("::", 1)[0] for n in nodeids}
    for error in errors:
        where = error.get("nodeid", "")
        if not files or where in files or not where:
            last = [ln for ln in error.get("message", "").splitlines() if ln.strip()][-1:]
            said = last[0].strip() if last else "no message"
            if "cannot import name" in said:
                why = (
                    "the test imports a name the fix has yet to add; acceptance tests must "
                    "be collectable at baseline, so import it inside the test function"
                )
            else:
                why = (
                    "the code under test or a test dependency does not import at baseline: "
                    "check pytest.python and pytest.pythonpath in the contract"
                )
            return f"; collecting {where or 'the session'} failed: {said} ({why})"
    return ""


def _check_mode_rule(
    contract: Contract,
    dod: Sequence[gates.DodResult],
    outcomes: Mapping[str, str],
    collect_errors: Sequence[Mapping[str, str]] = (),
) -> None:
    if contract.mode == "improve":
        failing = sorted(n for n, o in outcomes.items() if o in ("failed", "error"))
        if failing:
            raise BaselineRefused(
                f"improve mode needs a passing baseline, but {len(failing)} tests fail there: "
                + ", ".join(failing[:5])
            )
        return
    if not dod:
        raise BaselineRefused(
            "fix mode needs DoD items with acceptance tests; the contract has none"
        )
    for item in dod:
        missing = [n for n, o in item.tests if o == "missing"]
        if item.status == "no_tests" or missing:
            hint = _collect_error_hint(collect_errors, missing)
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
