"""When the loop stops: the rules checked before a turn and after a verification, the paths
that wait for a person, and the one line of progress the loop prints (all pure: state,
contract and verdict in, a :class:`Stop` or text out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.checkpoints.clearance import resolve_command
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.history.records import Instant
from pytest_loopcontract.loop.budget import elapsed_seconds, start_instant, time_budget_exceeded
from pytest_loopcontract.loop.no_progress import stalled
from pytest_loopcontract.verdict import (
    EXIT_AWAIT_HUMAN,
    EXIT_BASELINE,
    EXIT_BUDGET,
    EXIT_ITERATION_CAP,
    EXIT_MET,
    EXIT_NO_PROGRESS,
    EXIT_TAMPER,
    VerdictView,
)
from pytest_loopcontract.workspace import matches_any

__all__ = [
    "Stop",
    "post_turn_stop",
    "pre_turn_stop",
    "progress_line",
    "touched_stop_paths",
    "waiting_line",
]


@dataclass(frozen=True)
class Stop:
    reason: str
    exit_code: int
    decision: str  # done | stop | await_human
    message: str


def _elapsed_minutes(state: Mapping[str, Any], now: Instant) -> float:
    """Minutes since the run started: monotonic on one boot, so a clock jump changes nothing."""
    start = start_instant(state)
    return 0.0 if start is None else elapsed_seconds(start, now) / 60.0


def waiting_line(cp: Mapping[str, Any], by: str) -> str:
    """One pending checkpoint: what it is and the two commands that decide it, as printed
    runnable (``by`` is the name they carry, see :func:`clearance.resolve_command`)."""
    cid = str(cp.get("id"))
    subject = str(cp.get("subject") or "")
    where = f"{subject.removeprefix('diff:') or 'diff'}: " if cp.get("kind") == "diff" else ""
    return (
        f"{cid}: {where}{str(cp.get('message') or subject)[:300]} - approve with "
        f"'{resolve_command(cid, by)}' or refuse with '{resolve_command(cid, by, deny=True)}'"
    )


def pre_turn_stop(
    state: Mapping[str, Any], contract: Contract, now: Instant, *, by: str = ""
) -> Stop | None:
    """Stops that hold before the agent may take another turn (pure). ``by`` is the name the
    printed resolve commands carry."""
    pending = [cp for cp in state["checkpoints"].values() if cp.get("status") == "pending"]
    if pending:
        shown = "; ".join(waiting_line(cp, by) for cp in pending)
        return Stop(
            "checkpoint",
            EXIT_AWAIT_HUMAN,
            "await_human",
            f"waiting on a person for {shown}; then 'loop-contract loop --resume'",
        )
    tripped = [
        f"{t['which']} ({t.get('observed')} of {t.get('cap')})"
        for t in state["budget"].get("tripped") or []
    ]
    if tripped:
        return Stop("budget", EXIT_BUDGET, "stop", f"budget spent: {', '.join(tripped)}")
    minutes = contract.budget.minutes
    if minutes is not None and time_budget_exceeded(start_instant(state), minutes, now):
        return Stop("budget", EXIT_BUDGET, "stop", f"time budget of {minutes:g} minutes spent")
    cap = contract.budget.iterations
    done = int(state["loop"].get("iteration") or 0)
    if cap is not None and done >= cap:
        return Stop(
            "iteration_cap",
            EXIT_ITERATION_CAP,
            "stop",
            f"iteration cap reached ({done}/{cap}) without meeting the contract",
        )
    return None


def post_turn_stop(
    verdict: Mapping[str, Any],
    keys: Sequence[str],
    contract: Contract,
) -> Stop | None:
    """Stops that follow from one verification (pure)."""
    code = int(verdict["exit_code"])
    if verdict["verdict"] == "pass":
        return Stop("met", EXIT_MET, "done", "contract met")
    if code == EXIT_TAMPER:
        return Stop(
            "tamper",
            EXIT_TAMPER,
            "stop",
            "tampering found: a person must look before the loop goes on",
        )
    if code == EXIT_BASELINE:
        return Stop(
            "baseline",
            EXIT_BASELINE,
            "stop",
            "the baseline is stale (taken on another line of history): a person must run "
            "'loop-contract baseline' before the loop goes on",
        )
    if code == EXIT_AWAIT_HUMAN:
        waiting = [
            str(r.get("message", ""))
            for r in VerdictView(verdict).reasons()
            if r.get("code") == "checkpoint_pending"
        ]
        return Stop(
            "checkpoint",
            EXIT_AWAIT_HUMAN,
            "await_human",
            "a person's clearance is needed: " + "; ".join(waiting)
            if waiting
            else "the candidate's diff needs a person's clearance",
        )
    window = contract.stop_when.no_progress
    span = 6 if contract.stop_when.oscillation else 10**9
    why = stalled(keys, window, span)
    if why:
        return Stop("no_progress", EXIT_NO_PROGRESS, "stop", why)
    return None


def touched_stop_paths(changed: Sequence[str], contract: Contract) -> list[str]:
    globs = contract.stop_when.paths_touched
    return [p for p in changed if globs and matches_any(p, globs)]


def progress_line(
    state: Mapping[str, Any], contract: Contract, verdict: Mapping[str, Any], now: Instant
) -> str:
    loop, budget = state["loop"], state["budget"]
    cap = contract.budget.iterations
    spent = budget["spent"]
    gates = verdict["gates"]["hard"] + verdict["gates"]["measured"]
    passing = sum(1 for g in gates if g["status"] in ("pass", "not_measurable"))
    minutes = _elapsed_minutes(state, now)
    parts = [
        f"iteration {loop.get('iteration')}/{cap if cap is not None else '-'}",
        f"time {minutes:.1f}/{contract.budget.minutes:g} min"
        if contract.budget.minutes
        else f"time {minutes:.1f} min",
        f"tokens {spent.get('tokens', 0):g}"
        + (f"/{contract.budget.tokens:g}" if contract.budget.tokens is not None else ""),
        f"${spent.get('usd', 0):.2f}"
        + (f"/${contract.budget.usd:.2f}" if contract.budget.usd is not None else ""),
        f"gates {passing}/{len(gates)}",
        str(verdict["verdict"]),
    ]
    return "[loop] " + " · ".join(parts)
