"""``loop-contract status``: goal, items, iterations, budgets, checkpoints, the last verdict."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints.clearance import person_name
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, loop_history, repo_root
from pytest_loopcontract.history.records import Instant, Record
from pytest_loopcontract.loop.budget import now_instant, run_elapsed_seconds
from pytest_loopcontract.loop.lock import lock_holder
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.loop.status import render_status, status_document
from pytest_loopcontract.statedir import StateDir

__all__ = ["collect_status", "status"]


def status(*, as_json: bool = False) -> int:
    """Print the loop's state (read-only; a damaged history is reported, not repaired)."""
    doc = collect_status(repo_root())
    if as_json:
        print_json(doc)
    else:
        for line in render_status(doc):
            print(line)
        for problem in doc["history"]["problems"]:
            print(f"history: {problem}")
    return 0


def collect_status(root: Path) -> dict[str, Any]:
    """The status document of ``root``, read fresh: what ``status``, ``status --json`` and the
    live page (``status --serve``) all show. Reads only; repairs nothing."""
    contract = adopted_contract(root)
    read = loop_history(root).read()
    state = reduce(read.records)
    now = now_instant()
    holder = lock_holder(StateDir.of(root).folder)
    # Recorded as running, but no process holds the loop: it was killed or interrupted.
    interrupted = state["loop"].get("status") == "running" and holder is None
    # A stopped run's time is its start to its stop record, a killed one's to the last thing
    # it recorded: reading either later adds nothing.
    until = (_last_run_instant(read.records) if interrupted else None) or now
    minutes = run_elapsed_seconds(state, until) / 60
    waiting = any(cp.get("status") == "pending" for cp in state["checkpoints"].values())
    by = person_name(root) if waiting else ""  # the name the resolve commands carry
    doc = status_document(contract, state, _last_verdict(root), minutes, now, by=by)
    doc["history"] = {"records": len(read.records), "problems": read.messages()}
    doc["loop"]["lock_holder"] = holder
    if interrupted:
        doc["loop"]["status"] = "interrupted"
    return doc


# What a running loop writes itself; a person's records (a resolved checkpoint, a pause) may
# come hours after the loop was killed and say nothing of how long it ran.
_RUN_KINDS = frozenset({
    "loop_started", "resumed", "iteration", "budget_tripped", "agent_error", "item_claimed",
    "spend", "checkpoint_raised", "checkpoint_withdrawn",
})  # fmt: skip


def _last_run_instant(records: Sequence[Record]) -> Instant | None:
    """When the loop last wrote anything itself (None before it wrote anything)."""
    last = next((r for r in reversed(records) if r.kind in _RUN_KINDS), None)
    return None if last is None else last.instant()


def _last_verdict(root: Path) -> Any:
    """The last verdict written, or None when there is none or it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads(StateDir.of(root).verdict.read_text("utf-8"))
    return None
