"""The run result document: the parts both sides build alike, and the file on disk.

The document (``result.json``, shape in ``schemas/contest_result.schema.json``) is
what every report renders and what the human gate decides on. A local run and the GitHub
Action build it from different sources, so the parts they share (the contract block, an empty
gate summary) are written once here; and reading a past run back (the named one or the newest)
lives beside writing it, so the two cannot disagree on where it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.errors import ContestError
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.fsio import write_json_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN, EXIT_NOT_MET

__all__ = [
    "RESULT_SCHEMA_VERSION",
    "contest_exit_code",
    "contract_document",
    "empty_gates",
    "latest_result",
    "load_result",
    "save_result",
]

RESULT_SCHEMA_VERSION = 1


def contract_document(contract: Contract, path: str) -> dict[str, Any]:
    """The ``contract`` block of a result: which contract, at which hash, with its DoD.
    ``path`` is how the run names the contract file (relative to the repository, or its name)."""
    return {
        "id": contract.id,
        "path": path,
        "sha256": contract.sha256,
        "goal": contract.goal,
        "mode": contract.mode,
        "dod": [{"id": i.id, "text": i.text} for i in contract.dod],
    }


def empty_gates() -> dict[str, list[Any]]:
    """The gate summary of a candidate that has no verdict."""
    return {"hard": [], "measured": [], "tamper": []}


def save_result(run_dir: Path, result: Mapping[str, Any]) -> None:
    write_json_atomic(run_dir / "result.json", result)


def load_result(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "result.json"
    try:
        doc = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ContestError(f"no result at {path}: the run did not finish") from None
    except ValueError as exc:
        raise ContestError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ContestError(f"{path}: not a result document")
    return doc


def latest_result(root: Path, run_id: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The named run's result, or the newest finished one."""
    runs = StateDir.of(root).runs
    if run_id:
        return runs / run_id, load_result(runs / run_id)
    finished = sorted(p for p in runs.glob("*/result.json")) if runs.exists() else []
    if not finished:
        raise ContestError("no finished contest run yet: `loop-contract contest run` first")
    return finished[-1].parent, load_result(finished[-1].parent)


def contest_exit_code(result: Mapping[str, Any]) -> int:
    """24 when a proposed winner waits for a person, 20 when there is none, 0 once decided."""
    status = result.get("status")
    if status in ("awaiting_human", "escalated"):
        return EXIT_AWAIT_HUMAN
    if status == "decided":
        return 0
    return EXIT_NOT_MET
