"""``loop-contract status``: goal, items, iterations, budgets, checkpoints, the last verdict."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, loop_history, repo_root
from pytest_loopcontract.loop.budget import elapsed_seconds, now_instant, start_instant
from pytest_loopcontract.loop.state import lock_holder, reduce
from pytest_loopcontract.loop.status import render_status, status_document
from pytest_loopcontract.verifier.workspace import STATE_DIR

__all__ = ["status"]


def status(*, as_json: bool = False) -> int:
    """Print the loop's state (read-only; a damaged history is reported, not repaired)."""
    root = repo_root()
    contract = adopted_contract(root)
    read = loop_history(root).read()
    state = reduce(read.records)
    start = start_instant(state)
    minutes = elapsed_seconds(start, now_instant()) / 60 if start else 0.0
    doc = status_document(contract, state, _last_verdict(root), minutes)
    doc["history"] = {"records": len(read.records), "problems": read.messages()}
    holder = lock_holder(root / STATE_DIR)
    doc["loop"]["lock_holder"] = holder
    if doc["loop"].get("status") == "running" and holder is None:
        # recorded as running, but no process holds the loop: it was killed or interrupted
        doc["loop"]["status"] = "interrupted"
    if as_json:
        print_json(doc)
    else:
        for line in render_status(doc):
            print(line)
        for problem in read.messages():
            print(f"history: {problem}")
    return 0


def _last_verdict(root: Path) -> Any:
    """The last verdict written, or None when there is none or it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads((root / STATE_DIR / "verdict.json").read_text("utf-8"))
    return None
