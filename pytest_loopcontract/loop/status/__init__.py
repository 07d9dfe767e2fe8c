"""``loop-contract status``: the loop at a glance, as data (``--json``) or as text (pure)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.checkpoints.clearance import resolve_command
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.history.records import Instant
from pytest_loopcontract.loop.control import barrier_summary

__all__ = ["bar", "failing_gates", "loop_line", "render_status", "status_document"]


def bar(used: float, cap: float | None, width: int = 20) -> str:
    """``[#####...............] 5/20``; without a cap just the figure."""
    if cap is None:
        return f"{used:g} (no cap)"
    if cap <= 0:
        return f"[{'#' * width}] {used:g}/{cap:g}"
    filled = max(0, min(width, round(width * used / cap)))
    return f"[{'#' * filled}{'.' * (width - filled)}] {used:g}/{cap:g}"


def status_document(
    contract: Contract,
    state: Mapping[str, Any],
    verdict: Mapping[str, Any] | None,
    elapsed_minutes: float,
    now: Instant | None = None,
    *,
    by: str = "",
) -> dict[str, Any]:
    """The status as data: what ``status --json``, the terminal view and the live page show.

    ``now`` places the barriers' deadlines (without it, the time the document is built);
    ``by`` is the name the pending checkpoints' resolve commands carry.
    """
    now = now or Instant(time.time())
    control = state.get("control") or {}
    verdict_items = {d["id"]: d["status"] for d in (verdict or {}).get("dod", [])}
    items = [
        {
            "id": item.id,
            "text": item.text,
            "verified": verdict_items.get(item.id),
            "marked": state["items"].get(item.id),
        }
        for item in contract.dod
    ]
    spent = state["budget"]["spent"]
    pending = _pending(state, by)
    last = _last(verdict)
    return {
        "contract": {"id": contract.id, "goal": contract.goal, "mode": contract.mode},
        "loop": dict(state["loop"]),
        "items": items,
        "budget": {
            "iterations": {
                "used": state["loop"].get("iteration", 0),
                "cap": contract.budget.iterations,
            },
            "minutes": {"used": round(elapsed_minutes, 2), "cap": contract.budget.minutes},
            "tokens": {"used": spent.get("tokens", 0), "cap": contract.budget.tokens},
            "usd": {"used": spent.get("usd", 0.0), "cap": contract.budget.usd},
            "tripped": [t.get("which") for t in state["budget"].get("tripped", [])],
        },
        "checkpoints_pending": pending,
        "last_verdict": last,
        "parked": {
            "paused": control.get("paused"),
            "clear_requested": control.get("clear_requested"),
            "barriers": barrier_summary(state, now),
        },
    }


def _pending(state: Mapping[str, Any], by: str) -> list[dict[str, Any]]:
    """The checkpoints waiting for a person, each with the commands that approve it
    (``resolve``) and refuse it (``deny``), runnable as shown."""
    return [
        {
            **{k: cp.get(k) for k in ("id", "kind", "subject", "message", "pattern_id")},
            "resolve": resolve_command(str(cp.get("id")), by),
            "deny": resolve_command(str(cp.get("id")), by, deny=True),
        }
        for cp in state["checkpoints"].values()
        if cp.get("status") == "pending"
    ]


def _last(verdict: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the status shows of the last verdict."""
    if verdict is None:
        return None
    return {
        "verdict": verdict.get("verdict"),
        "exit_code": verdict.get("exit_code"),
        "trust": verdict.get("trust"),
        "reasons": verdict.get("reasons", []),
        "finished": verdict.get("timing", {}).get("finished"),
        "failing_gates": failing_gates(verdict),
    }


def failing_gates(verdict: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hard and measured gates of a verdict that did not pass, with what was observed."""
    gates = verdict.get("gates") or {}
    out = []
    for kind in ("hard", "measured"):
        for gate in gates.get(kind) or []:
            if not isinstance(gate, Mapping) or gate.get("status") in ("pass", "not_measurable"):
                continue
            entry = {"id": gate.get("id"), "kind": kind, "status": gate.get("status")}
            if kind == "measured":
                entry["detail"] = (
                    f"{gate.get('metric')} {gate.get('observed')} "
                    f"{gate.get('op')} {gate.get('threshold')}"
                )
            out.append(entry)
    return out


def loop_line(loop: Mapping[str, Any]) -> str:
    """``loop: running``, ``loop: stopped (budget, exit 21)``, ``loop: done (met, exit 0)``:
    the status, then why it ended (the terminal view and the live page say the same)."""
    status = loop.get("status")
    if status == "interrupted":
        return "loop: interrupted (resume with 'loop-contract loop --resume')"
    why = [str(loop["stop_reason"])] if loop.get("stop_reason") else []
    if why and loop.get("exit_code") is not None:
        why.append(f"exit {loop['exit_code']}")
    return f"loop: {status}" + (f" ({', '.join(why)})" if why else "")


def render_status(doc: Mapping[str, Any]) -> list[str]:
    loop = doc["loop"]
    lines = [
        f"contract {doc['contract']['id']} ({doc['contract']['mode']}): {doc['contract']['goal']}",
        loop_line(loop),
        "items:",
    ]
    for item in doc["items"]:
        mark = "[x]" if item["verified"] == "done" else "[ ]"
        marked = f" (marked {item['marked']})" if item["marked"] else ""
        lines.append(f"  {mark} {item['id']}: {item['text']}{marked}")
    lines.append("budget:")
    for key in ("iterations", "minutes", "tokens", "usd"):
        entry = doc["budget"][key]
        lines.append(f"  {key:<10} {bar(float(entry['used']), entry['cap'])}")
    if doc["budget"]["tripped"]:
        lines.append(f"  tripped: {', '.join(map(str, doc['budget']['tripped']))}")
    parked = doc.get("parked") or {}
    if parked.get("paused"):
        paused = parked["paused"]
        why = f": {paused['reason']}" if paused.get("reason") else ""
        lines.append(f"paused by {paused.get('by')}{why} ('loop-contract resume' goes on)")
    for barrier in parked.get("barriers") or []:
        lines.append(f"parked {barrier['text']} ('loop-contract unwait {barrier['id']}')")
    pending = doc["checkpoints_pending"]
    lines.append(f"checkpoints pending: {len(pending)}")
    lines.extend(f"  {cp['id']}: {cp['message']}" for cp in pending)
    last = doc["last_verdict"]
    if last is None:
        lines.append("last verdict: none yet")
    else:
        lines.append(
            f"last verdict: {last['verdict']} (exit {last['exit_code']}, "
            f"{last['trust']}, {last['finished']})"
        )
        lines.extend(f"  {r['code']}: {r['message']}" for r in last["reasons"][:8])
    return lines
