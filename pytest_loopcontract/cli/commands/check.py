"""``loop-contract check``: is the contract valid, and if not, where exactly is it wrong?"""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import contract_file
from pytest_loopcontract.contract.model import Contract, load_contract
from pytest_loopcontract.contract.readiness import readiness_error
from pytest_loopcontract.errors import CommandError, ContractError
from pytest_loopcontract.plural import plural
from pytest_loopcontract.workspace import WorkspaceError, find_repo

__all__ = ["check"]


def check(contract: str, *, as_json: bool = False) -> int:
    """0 and a summary for a valid contract; exit 26 and the located error for an invalid one."""
    contract = str(contract_file(contract))
    try:
        loaded = load_contract(contract)
        problem = readiness_error(loaded, Path(contract).read_bytes(), _tree(Path(contract)))
        if problem is not None:
            raise problem
    except ContractError as exc:
        if not as_json:
            # the answer to "is it valid?", so shown without the "contract invalid:" label
            raise CommandError(str(exc), exc.exit_code) from None
        print_json({"valid": False, "error": _located(exc)})
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
