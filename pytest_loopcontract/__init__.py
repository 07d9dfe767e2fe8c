"""pytest-loopcontract: an external verifier that decides when a coding agent is done.

The public Python face. Importing the package imports nothing but the standard library: the
launcher runs this file before it re-executes a clean interpreter, with the candidate's tree
possibly on the path, so every name below is loaded on first use (PEP 562).

``load_contract`` and ``verify`` are what the CLI's ``check`` and ``verify`` call; call
``verify`` from a process that never imported the candidate's code (``loop-contract verify``
is that process). ``hookimpl`` marks plugin hooks (see ``hookspecs``); a metric source that a
plugin adds returns an ``Observation`` from a ``SensorContext``. ``LoopContractError`` is the
root of every error the package raises, each carrying its exit code.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from pytest_loopcontract.contract.model import Contract, load_contract
    from pytest_loopcontract.errors import ContractError, LoopContractError
    from pytest_loopcontract.hookspecs import hookimpl
    from pytest_loopcontract.verifier.sensors.protocol import Observation, SensorContext
    from pytest_loopcontract.verifier.verify import VerifyOutcome, verify

__all__ = [
    "Contract",
    "ContractError",
    "LoopContractError",
    "Observation",
    "SensorContext",
    "VerifyOutcome",
    "__version__",
    "hookimpl",
    "load_contract",
    "verify",
]

_HOMES = {
    "Contract": "pytest_loopcontract.contract.model",
    "load_contract": "pytest_loopcontract.contract.model",
    "ContractError": "pytest_loopcontract.errors",
    "LoopContractError": "pytest_loopcontract.errors",
    "hookimpl": "pytest_loopcontract.hookspecs",
    "Observation": "pytest_loopcontract.verifier.sensors.protocol",
    "SensorContext": "pytest_loopcontract.verifier.sensors.protocol",
    "VerifyOutcome": "pytest_loopcontract.verifier.verify",
    "verify": "pytest_loopcontract.verifier.verify",
}


def _version() -> str:
    """From the installed metadata, read on first use: ``importlib.metadata`` costs more to
    import than the rest of the launcher, which never needs the version.

    Only the metadata's header block is read for it: ``metadata.version`` parses the whole
    file, the README included (80 KB), with the email parser, 3 ms of every
    ``pytest --loop-contract`` run."""
    from importlib import metadata

    try:
        dist = metadata.distribution("pytest-loopcontract")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
    header = (dist.read_text("METADATA") or "").split("\n\n", 1)[0]
    for line in header.splitlines():
        name, _, value = line.partition(":")
        if name == "Version" and value.strip():
            return value.strip()
    return str(dist.version)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = version = _version()
        return version
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_loopcontract' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
