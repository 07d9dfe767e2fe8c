"""In the verify job nothing of the checkout runs outside the sandbox, and candidate code runs
only inside it.

Why: the verify job's working tree *is* the candidate's checkout, and publish believes the
verdict this job uploads. Two things would let a pull request's own program run where it can
outlive the verifier and rewrite the verdict before the upload step:

* **The test interpreter.** Locally it may be the repository's ``.venv/bin/python`` (see
  :mod:`pytest_loopcontract.testenv`), and the verifier asks it what it is before anything is
  confined. Here that file would be the pull request's. So the job takes the base commit's
  ``pytest.python`` only when it names a program outside the checkout (an absolute path or a
  command on ``PATH``), and otherwise the verifier's own interpreter, whose environment the job
  installed from the pinned verifier.
* **The fallback to process isolation.** Where bubblewrap cannot start, the verifier would run
  the candidate's tests as plain processes, which can write the artifact folder, the runner's
  ``$GITHUB_ENV`` and anything else the job can, and then claim ``isolation: sandbox``. Publish
  refuses a process verdict, but a forged one does not say so. So unless the contract accepts
  process isolation on GitHub (``github: {require_sandbox: false}``), the candidate's run
  requires the sandbox: where it cannot start the verdict is an error (``sandbox_unavailable``)
  and no candidate code has run. The baseline (the base commit's code) may still fall back.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.errors import ContractError
from pytest_loopcontract.verifier.sandbox import SANDBOX
from pytest_loopcontract.workspace import WorkspaceError, list_tree, read_blobs, tree_of

__all__ = ["base_contract", "checkout_free_python", "sandbox_enforced"]

ISOLATION_ENV = "LOOP_CONTRACT_ISOLATION"


def base_contract(root: Path, contract_path: str, base: str) -> Contract | None:
    """The contract at ``base`` (None when it is not committed or does not parse: the baseline
    then says what is wrong with it, in its own words)."""
    entry = list_tree(root, tree_of(root, base)).get(contract_path)
    if entry is None:
        return None
    try:
        return parse_contract(read_blobs(root, [entry.blob])[entry.blob], Path(contract_path))
    except ContractError:
        return None


def checkout_free_python(root: Path, contract: Contract | None) -> str:
    """The test interpreter for verifying a pull request in the checkout ``root``: the
    contract's ``pytest.python`` when it lies outside the checkout, else this interpreter."""
    configured = contract.pytest.python if contract is not None else None
    if not configured:
        return sys.executable
    if os.sep not in configured:
        return configured  # a command on PATH: the runner's, not the checkout's
    path = Path(configured).expanduser()
    if path.is_absolute() and not _inside(path, root):
        return configured
    raise WorkspaceError(
        f"the contract's pytest.python {configured!r} is a file of the checkout, which in the "
        "verify job is the candidate's: a pull request could put its own program there and "
        "run it outside the sandbox. Leave pytest.python unset (the verifier's interpreter) "
        "or name an interpreter outside the repository."
    )


@contextlib.contextmanager
def sandbox_enforced(contract: Contract | None) -> Iterator[None]:
    """Inside: the candidate's run requires the sandbox, unless the contract accepts process
    isolation on GitHub. A contract that asks for process isolation while publish requires
    the sandbox is refused here, before any candidate code runs."""
    if contract is None or not contract.github.require_sandbox:
        yield
        return
    if contract.isolation not in ("auto", SANDBOX):
        raise WorkspaceError(
            f"the contract says isolation: {contract.isolation}, but publish accepts only "
            "sandboxed verdicts: set isolation to auto or sandbox, or accept process "
            "isolation with github: {require_sandbox: false}"
        )
    before = os.environ.get(ISOLATION_ENV)
    os.environ[ISOLATION_ENV] = SANDBOX
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ISOLATION_ENV, None)
        else:
            os.environ[ISOLATION_ENV] = before


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
