"""What most commands look up first: the repository they run in, the contract inside it, the
contract it adopted at baseline, and its loop history."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_loopcontract.errors import ContractError
from pytest_loopcontract.history import History
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.workspace import WorkspaceError, find_repo

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = ["adopted_contract", "contract_file", "contract_in_repo", "loop_history", "repo_root"]


def repo_root() -> Path:
    """The git work tree holding the current folder (a WorkspaceError outside one)."""
    return find_repo(Path.cwd())


def contract_file(contract: str) -> Path:
    """The contract file a command means. A path the user gave is that path; the default
    name, given from a subfolder of a repository, is the file at the repository's root, where
    ``verify`` and ``status`` find it (``check`` used to say "not found" there, and ``init``
    wrote a second contract into the subfolder)."""
    from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME

    given = Path(contract)
    if contract != DEFAULT_CONTRACT_NAME or given.exists():
        return given
    try:
        return repo_root() / DEFAULT_CONTRACT_NAME
    except WorkspaceError:
        return given


def contract_in_repo(contract: str) -> tuple[Path, str]:
    """The repository and the contract's path inside it; a contract elsewhere is refused,
    since the baseline pins it by its repository-relative path."""
    root = repo_root()
    path = Path(contract).resolve()
    try:
        rel = path.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ContractError("the contract must live inside the repository", file=contract) from None
    return root, rel


def adopted_contract(root: Path) -> Contract:
    """The contract pinned by the baseline in ``root`` (the candidate's copy is only evidence)."""
    # Imported here: the verifier's chain (runner, sandbox, tamper checks) is the heaviest in
    # the package, and the hook commands that import this module run on every agent tool call.
    from pytest_loopcontract.verifier.baseline.record import load_baseline
    from pytest_loopcontract.verifier.verify import pinned_contract

    return pinned_contract(root, load_baseline(root))


def loop_history(root: Path) -> History:
    """The loop's history log under the state folder of ``root``."""
    return History(StateDir.of(root).folder)
