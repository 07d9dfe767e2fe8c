"""pytest hooks only: the in-process entry point (``pytest --loop-contract``).

The verdict is computed here, in the process under test (trust ``in-process``: quick and local,
but candidate code runs beside it). The collector, the ``dod`` marker and the ``loop_metric``
fixture are the ones the launcher injects into its isolated runs (:mod:`.inner`), so both
entry points record a run the same way.

The ``pytest11`` entry point loads this module in every pytest run of every environment the
package is installed in, asked for or not. So at load it imports pytest and nothing else of
weight: the contract loader (YAML, jsonschema), the collector and the verdict writer are
imported inside the hooks, once ``--loop-contract`` (or the ``loop_contract`` ini value) turns
the plugin on. Not asked for, it only registers the options, the marker and the fixture
(``benchmarks/bench_plugin.py`` measures that; ``tests/test_plugin_startup.py`` checks it).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

__all__ = ["loop_metric"]

_CONTRACT_DEFAULT = "loopcontract.yml"
# Spelled here rather than imported: importing ``verifier.inner`` (``DOD_MARKER``) or
# ``statedir`` (``StateDir.of(".").verdict``) would load them in every pytest run.
# tests/test_plugin_startup.py holds both equal to their owners'.
DOD_MARKER = "dod(item_id): ties this test to a Definition-of-Done item of the contract"
DEFAULT_VERDICT = ".loop-contract/verdict.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loopcontract", "loop contract (external verifier)")
    group.addoption(
        "--loop-contract",
        action="store",
        nargs="?",
        const=_CONTRACT_DEFAULT,
        default=None,
        metavar="PATH",
        dest="loop_contract",
        help=f"check the run against a loop contract (default path: {_CONTRACT_DEFAULT})",
    )
    group.addoption(
        "--loop-contract-verdict",
        action="store",
        default=None,
        metavar="PATH",
        dest="loop_contract_verdict",
        help=f"where to write the verdict JSON (default: {DEFAULT_VERDICT})",
    )
    parser.addini("loop_contract", "path of the loop contract; enables the plugin", default="")
    parser.addini("loop_contract_verdict", "where to write the verdict JSON", default="")


@pytest.fixture
def loop_metric(request: pytest.FixtureRequest) -> Callable[[str, float], None]:
    """Record a named measurement (for a measured gate ``metric.<name>``); the recorder is the
    injected collector's, imported when a test first asks for it."""
    from pytest_loopcontract.verifier.inner.collector import metric_recorder

    return metric_recorder(request)


def _launched() -> bool:
    """A launcher runs this session: its injected collector records it, not this plugin."""
    from pytest_loopcontract.verifier.inner import CONFIG_ENV

    return bool(os.environ.get(CONFIG_ENV))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """Apply the contract's ``pytest.args`` here as the isolated run does (appended to the
    command line), so both entry points run the same selection. Only when asked for."""
    path = _contract_arg(args)
    if path is None or _launched():
        return
    from pytest_loopcontract.errors import ContractError
    from pytest_loopcontract.verifier.inprocess import load_for_session

    try:
        # The pinned contract's bytes skip the schema (and with it jsonschema's 5 MiB).
        extra = load_for_session(early_config, path).pytest.args
    except (ContractError, OSError):
        return  # pytest_configure reports an invalid contract with its exit code
    args.extend(a for a in extra if a not in args)


def _contract_arg(args: list[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--loop-contract":
            following = args[index + 1] if index + 1 < len(args) else ""
            return following if following.endswith((".yml", ".yaml")) else _CONTRACT_DEFAULT
        if arg.startswith("--loop-contract="):
            return arg.split("=", 1)[1]
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", DOD_MARKER)
    contract = config.getoption("loop_contract") or config.getini("loop_contract")
    if not contract or _launched():
        return
    from pytest_loopcontract.errors import ContractError
    from pytest_loopcontract.verifier.inner import install_egress
    from pytest_loopcontract.verifier.inner.collector import WorkerMarks
    from pytest_loopcontract.verifier.inprocess import load_for_session
    from pytest_loopcontract.verifier.inprocess_writer import VerdictWriter

    try:
        loaded = load_for_session(config, str(contract))
    except ContractError as exc:
        pytest.exit(f"loop-contract: contract invalid: {exc}", returncode=26)
    if loaded.egress_allow is not None:
        install_egress(config, list(loaded.egress_allow))
    if hasattr(config, "workerinput"):
        # xdist worker: outcomes travel to the controller through the report stream.
        config.pluginmanager.register(WorkerMarks(), "loopcontract-worker")
        return
    config.pluginmanager.register(VerdictWriter(config, loaded), "loopcontract-collector")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("loopcontract-egress"):
        from pytest_loopcontract.verifier.inner import egress

        egress.uninstall()
