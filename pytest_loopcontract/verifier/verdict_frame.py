"""The parts of a verdict every entry point writes alike (which contract, when), and the
verdict that judged nothing.

Apart from :mod:`.evaluate` so that the in-process plugin can leave its provisional verdict
at the session's start without importing the gates, sensors and hooks that only its end needs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest_loopcontract
from pytest_loopcontract.fsio import utc_now
from pytest_loopcontract.verdict import Reason, build_verdict

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = ["contract_summary", "error_verdict", "run_timing"]


def contract_summary(contract: Contract, relpath: str) -> dict[str, Any]:
    """The verdict's ``contract`` section: which contract judged the run, and where it lives."""
    return {"path": relpath, "id": contract.id, "sha256": contract.sha256, "mode": contract.mode}


def run_timing(started: str, started_monotonic: float) -> dict[str, Any]:
    """The verdict's ``timing`` section for a run that ends now (monotonic duration)."""
    return {
        "started": started,
        "finished": utc_now(),
        "duration_s": round(time.monotonic() - started_monotonic, 6),
    }


def error_verdict(
    contract: Contract,
    reason: Reason,
    *,
    relpath: str,
    trust: str,
    nonce: str,
    baseline: Mapping[str, Any],
    environment: Mapping[str, Any],
    timing: Mapping[str, Any],
) -> dict[str, Any]:
    """An ``error`` verdict that judged nothing: no test ran, no gate was evaluated.

    What a run leaves when it cannot be judged at all (the in-process run that never finished,
    the launcher's stale baseline): one reason is the whole verdict. Built straight from the
    verdict model, without gates or sensors, so it costs next to nothing."""
    return build_verdict(
        contract=contract_summary(contract, relpath),
        trust=trust,
        nonce=nonce,
        dod=[],
        hard=[],
        measured=[],
        findings=[],
        errors=[reason],
        tests=[],
        baseline=baseline,
        environment=environment,
        timing=timing,
        tool_version=pytest_loopcontract.__version__,
    )
