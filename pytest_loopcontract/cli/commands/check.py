"""``loop-contract check``: is the contract valid, and if not, where exactly is it wrong?

Beyond the schema and the readiness rules, the test ids the contract names are checked against
a collection of the working tree (``pytest --collect-only`` as the baseline runs it): a
misspelled id is named at its line with the closest real ids (:mod:`verifier.selectors`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import contract_file
from pytest_loopcontract.contract.model import Contract, load_contract
from pytest_loopcontract.contract.readiness import readiness_error
from pytest_loopcontract.errors import CommandError, ContractError
from pytest_loopcontract.plural import plural
from pytest_loopcontract.verifier.selectors import (
    UnmatchedSelectors,
    collect_tree,
    named_selectors,
    unmatched_selectors,
)
from pytest_loopcontract.workspace import WorkspaceError, find_repo

__all__ = ["check"]


def check(contract: str, *, as_json: bool = False) -> int:
    """0 and a summary for a valid contract; exit 26 and the located error for an invalid one."""
    contract = str(contract_file(contract))
    try:
        loaded = load_contract(contract)
        data = Path(contract).read_bytes()
        tree = _tree(Path(contract))
        problem = readiness_error(loaded, data, tree)
        if problem is not None:
            raise problem
        _check_selectors(loaded, data, tree)
    except ContractError as exc:
        if not as_json:
            # the answer to "is it valid?", so shown without the "contract invalid:" label
            raise CommandError(str(exc), exc.exit_code) from None
        answer: dict[str, object] = {"valid": False, "error": _located(exc)}
        if isinstance(exc, UnmatchedSelectors):
            answer["unmatched"] = exc.entries()
        print_json(answer)
        return exc.exit_code
    if as_json:
        print_json(_summary(loaded))
    else:
        print(
            f"{contract}: valid (id {loaded.id}, mode {loaded.mode}, "
            f"{plural(len(loaded.dod), 'DoD item')}, {len(loaded.hard_gates)} hard and "
            f"{plural(len(loaded.measured_gates), 'measured gate')})"
        )
    return 0


def _check_selectors(contract: Contract, data: bytes, tree: Path) -> None:
    """Raise :class:`UnmatchedSelectors` for test ids that name no test of ``tree``. When the
    tests cannot be collected, say so on stderr: the contract itself may still be valid."""
    if next(named_selectors(contract), None) is None:
        return
    collection = collect_tree(tree, contract)
    if collection.problem:
        print(
            "loop-contract: the contract's test ids were not checked: collecting the tests "
            f"failed ({collection.problem})",
            file=sys.stderr,
        )
        return
    hidden = [h.to for h in contract.hidden_tests()]  # only the verifier's scratch has them
    unmatched = unmatched_selectors(contract, collection.nodeids, collection.errors, hidden)
    if unmatched:
        raise UnmatchedSelectors.at(
            data, str(contract.path), unmatched, none_collected=not collection.nodeids
        )


def _tree(contract: Path) -> Path:
    """Where the ``dod`` markers are looked for: the repository holding the contract, else the
    contract's folder."""
    folder = contract.resolve().parent
    try:
        return find_repo(folder)
    except WorkspaceError:
        return folder


def _located(exc: ContractError) -> dict[str, object]:
    return {
        "file": exc.file,
        "line": exc.line,
        "column": exc.column,
        "field": exc.field_path,
        "message": exc.message,
    }


def _summary(contract: Contract) -> dict[str, object]:
    return {
        "valid": True,
        "id": contract.id,
        "mode": contract.mode,
        "sha256": contract.sha256,
        "dod": [d.id for d in contract.dod],
    }
