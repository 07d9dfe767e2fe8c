"""``loop-contract baseline``: run the suite on the base commit, record the sets and the pins.

The baseline is what makes a contract meaningful. In ``fix`` mode the acceptance tests must
fail there (a test that already passes proves nothing); in ``improve`` mode everything must pass
there. The pins recorded here are the verifier's memory of what the referee looked like.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import gates
from .contract import Contract, parse_contract
from .evaluate import utc_now
from .tamper import protected_paths
from .verdict import write_json_atomic
from .workspace import (
    DEFAULT_PROTECT,
    STATE_DIR,
    Pin,
    WorkspaceError,
    export_tree,
    is_dirty,
    list_tree,
    make_scratch,
    purge_bytecode,
    read_blobs,
    remove_tree,
    resolve_commit,
    sha256_bytes,
    tree_of,
)

__all__ = ["BaselineRecord", "BaselineRefused", "baseline_path", "load_baseline", "take_baseline"]

BASELINE_FILE = "baseline.json"


class BaselineRefused(Exception):
    """The baseline breaks the contract's mode rule (exit 27)."""


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
        data = asdict(self)
        data["schema_version"] = 1
        data["pins"] = {p: asdict(pin) for p, pin in sorted(self.pins.items())}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaselineRecord:
        try:
            pins = {str(p): Pin(**v) for p, v in dict(data["pins"]).items()}
            return cls(
                commit=str(data["commit"]),
                tree=str(data["tree"]),
                contract_path=str(data["contract_path"]),
                contract_sha256=str(data["contract_sha256"]),
                contract_id=str(data["contract_id"]),
                mode=str(data["mode"]),
                collected=[str(n) for n in data["collected"]],
                outcomes={str(k): str(v) for k, v in dict(data["outcomes"]).items()},
                fail_to_pass=[str(n) for n in data["fail_to_pass"]],
                pass_to_pass=[str(n) for n in data["pass_to_pass"]],
                pins=pins,
                protected_globs=[str(g) for g in data["protected_globs"]],
                plugins=[str(p) for p in data["plugins"]],
                created=str(data.get("created", "")),
                extra=dict(data.get("extra") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise WorkspaceError(
                f"baseline record is damaged ({exc}): run 'loop-contract baseline' again",
                exit_code=27,
            ) from None


def baseline_path(root: Path) -> Path:
    return root / STATE_DIR / BASELINE_FILE


def load_baseline(root: Path) -> BaselineRecord:
    path = baseline_path(root)
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


def _test_files(nodeids: Sequence[str], files: Mapping[str, object]) -> set[str]:
    out = set()
    for nodeid in nodeids:
        file_part = nodeid.split("::", 1)[0]
        if file_part in files:
            out.add(file_part)
    return out


def take_baseline(root: Path, contract_relpath: str, base_ref: str | None = None) -> BaselineRecord:
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

    from .runner import run_pytest  # the launcher's machinery, only needed here

    scratch = make_scratch("loopcontract-baseline-")
    try:
        export_tree(root, tree, scratch)
        purge_bytecode(scratch)
        run = run_pytest(
            scratch,
            nonce=secrets.token_hex(16),
            autoload=True,
            extra_args=contract.pytest.args,
            timeout=contract.pytest.timeout,
        )
    finally:
        remove_tree(scratch)
    if run.results is None or run.exit_code not in (0, 1):
        why = "timed out" if run.timed_out else f"pytest exited {run.exit_code}"
        raise BaselineRefused(
            f"the baseline run is broken ({why}; {run.results_error or 'see output'}):\n"
            + run.output_tail[-2000:]
        )
    results = run.results
    if results.outside_imports:
        shadow = results.outside_imports[0]
        raise BaselineRefused(
            f"the baseline run imported {shadow['module']!r} from {shadow['imported']}, not "
            f"from the checkout's {shadow['local']}: it would measure an installed copy; "
            "install the project in editable mode from this checkout or set pythonpath"
        )
    outcomes = results.outcomes()
    for error in results.collect_errors:
        outcomes.setdefault(error.get("nodeid", ""), "error")
    dod = gates.evaluate_dod(contract.dod, outcomes, results.dod_marks)
    acceptance = [n for item in dod for n, o in item.tests if o != "missing"]
    _check_mode_rule(contract, dod, outcomes)

    passed = [n for n, o in outcomes.items() if o == "passed"]
    fail_to_pass = [n for n in acceptance if outcomes.get(n) != "passed"]
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
        extra={"doctests": dict(results.doctests)},
    )
    write_json_atomic(baseline_path(root), record.to_json())
    return record


def _check_mode_rule(
    contract: Contract, dod: Sequence[gates.DodResult], outcomes: Mapping[str, str]
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
            raise BaselineRefused(
                f"DoD item {item.id!r}: acceptance tests do not run at baseline "
                f"({', '.join(missing) or 'no test is tied to it'}); commit the tests first"
            )
        if all(o == "passed" for _, o in item.tests):
            raise BaselineRefused(
                f"DoD item {item.id!r} is vacuous: its acceptance tests already pass at "
                "baseline, so passing them proves nothing"
            )
