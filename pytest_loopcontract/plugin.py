"""pytest hooks only: the in-process entry point (``pytest --loop-contract``).

The verdict is computed here, in the process under test (trust ``in-process``: quick and local,
but candidate code runs beside it). The collector, the ``dod`` marker and the ``loop_metric``
fixture are the ones the launcher injects into its isolated runs (:mod:`.inner`), so both
entry points record a run the same way. Installed but not asked for, this plugin only registers
the marker and the fixture.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier.inner import (
    CONFIG_ENV,
    DOD_MARKER,
    install_egress,
    leftover_egress,
)
from pytest_loopcontract.verifier.inner.collector import ResultCollector, WorkerMarks, loop_metric

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = ["VerdictWriter", "loop_metric"]

DEFAULT_VERDICT = str(StateDir.of(".").verdict)
_CONTRACT_DEFAULT = "loopcontract.yml"


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


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """Apply the contract's ``pytest.args`` here as the isolated run does (appended to the
    command line), so both entry points run the same selection. Only when asked for."""
    path = _contract_arg(args)
    if path is None or os.environ.get(CONFIG_ENV):
        return
    from pytest_loopcontract.contract.model import load_contract
    from pytest_loopcontract.errors import ContractError

    try:
        extra = load_contract(Path(path)).pytest.args
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
    if not contract or os.environ.get(CONFIG_ENV):
        # Not asked for, or a launcher runs this session: its injected collector records it.
        return
    from pytest_loopcontract.errors import ContractError
    from pytest_loopcontract.verifier.inprocess import load_for_session

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


class VerdictWriter(ResultCollector):
    """Collects the run like the launcher's collector, then writes the in-process verdict."""

    def __init__(self, config: pytest.Config, contract: Contract) -> None:
        super().__init__(config)
        self.contract = contract
        self.started_at = ""
        self.verdict: dict[str, Any] | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from pytest_loopcontract.fsio import utc_now

        self.started_at = utc_now()
        self._write_provisional()

    def _write_provisional(self) -> None:
        """Leave an ``error`` verdict on disk until the real one replaces it, so a run that
        dies half-way (os._exit, a kill) never leaves an older ``pass`` looking current."""
        from pytest_loopcontract.fsio import write_json_atomic
        from pytest_loopcontract.verifier.inprocess import incomplete_verdict

        write_json_atomic(
            self.verdict_path(),
            incomplete_verdict(self.config, self.contract, self.nonce, self.started_at),
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from pytest_loopcontract.fsio import write_json_atomic
        from pytest_loopcontract.verifier.inprocess import verdict_in_process
        from pytest_loopcontract.verifier.results import RunResults

        data = self.results(session, exitstatus, leftover_egress(self.config))
        results = RunResults.from_json(data)
        self.verdict = verdict_in_process(
            self.config, self.contract, results, self.started_at, self.started
        )
        write_json_atomic(self.verdict_path(), self.verdict)
        session.exitstatus = int(self.verdict["exit_code"])

    def verdict_path(self) -> Path:
        configured = self.config.getoption("loop_contract_verdict") or self.config.getini(
            "loop_contract_verdict"
        )
        path = Path(configured or DEFAULT_VERDICT)
        if not path.is_absolute():
            path = Path(self.config.rootpath) / path
        return path

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        from pytest_loopcontract.verdict import render_checklist

        terminalreporter.section("loop contract")
        for line in render_checklist(self.verdict):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"  verdict written to {self.verdict_path()}")
