"""The governed loop: agent turn, isolated verification, decision; repeat until a stop rule.

Every decision is computed from the history (never from memory), so a loop killed at any point
resumes with ``--resume`` exactly where the record says it was. The agent never decides that
it is done: only a ``pass`` verdict from the launcher ends the loop as met.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import write_json_atomic
from pytest_loopcontract.loop.budget import (
    Caps,
    elapsed_seconds,
    now_instant,
    record_spend,
    spend_from_agent_output,
    start_instant,
    time_budget_exceeded,
)
from pytest_loopcontract.loop.history import History
from pytest_loopcontract.loop.lock import LoopLock
from pytest_loopcontract.loop.progress import stalled
from pytest_loopcontract.loop.prompt import build_prompt, substitute
from pytest_loopcontract.loop.records import Instant
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.loop.wait import Parking
from pytest_loopcontract.processes import kill_group, spawn
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import (
    EXIT_AWAIT_HUMAN,
    EXIT_BUDGET,
    EXIT_ITERATION_CAP,
    EXIT_MET,
    EXIT_NO_PROGRESS,
    EXIT_NOT_MET,
    EXIT_TAMPER,
    VerdictView,
)
from pytest_loopcontract.verifier.baseline import load_baseline
from pytest_loopcontract.verifier.harness import harness_checkpoints
from pytest_loopcontract.verifier.verify import pinned_contract, verify
from pytest_loopcontract.verifier.workspace import matches_any

__all__ = ["AgentTurn", "LoopError", "Stop", "post_turn_stop", "pre_turn_stop", "run_loop"]

EXIT_AGENT = 2
DEFAULT_POLL = 2.0  # seconds between looks while parked or paused
OUTPUT_KEEP = 1 << 20


class LoopError(LoopContractError):
    """A loop that cannot start or continue; the message says what to do."""


@dataclass(frozen=True)
class Stop:
    reason: str
    exit_code: int
    decision: str  # done | stop | await_human
    message: str


@dataclass(frozen=True)
class AgentTurn:
    exit_code: int | None
    timed_out: bool
    output: str
    seconds: float


def _elapsed_minutes(state: Mapping[str, Any], now: Instant) -> float:
    """Minutes since the run started: monotonic on one boot, so a clock jump changes nothing."""
    start = start_instant(state)
    return 0.0 if start is None else elapsed_seconds(start, now) / 60.0


def pre_turn_stop(state: Mapping[str, Any], contract: Contract, now: Instant) -> Stop | None:
    """Stops that hold before the agent may take another turn (pure)."""
    pending = [cid for cid, cp in state["checkpoints"].items() if cp.get("status") == "pending"]
    if pending:
        return Stop(
            "checkpoint",
            EXIT_AWAIT_HUMAN,
            "await_human",
            f"waiting on a person for {', '.join(pending)}: "
            "'loop-contract checkpoint resolve ID --by NAME [--deny]', then 'loop --resume'",
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
    if code == EXIT_AWAIT_HUMAN:
        waiting = [
            str(r.get("message", ""))
            for r in verdict.get("reasons") or ()
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
    window = int(contract.stop_when.get("no_progress", 3))
    span = 6 if contract.stop_when.get("oscillation", True) else 10**9
    why = stalled(keys, window, span)
    if why:
        return Stop("no_progress", EXIT_NO_PROGRESS, "stop", why)
    return None


def touched_stop_paths(changed: Sequence[str], contract: Contract) -> list[str]:
    globs = list(contract.stop_when.get("paths_touched") or ())
    return [p for p in changed if globs and matches_any(p, globs)]


def run_agent(
    argv: Sequence[str], *, stdin_text: str | None, cwd: Path, timeout: float, log: Path
) -> AgentTurn:
    """One agent turn in its own process group; output to a log file; killed on timeout."""
    started = time.monotonic()
    with log.open("wb") as out:
        try:
            proc = spawn(
                argv,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise LoopError(
                f"agent command not found: {argv[0]!r} (is it installed and on PATH?)"
            ) from None
        except PermissionError:
            raise LoopError(f"agent command is not executable: {argv[0]!r}") from None
        timed_out = False
        code: int | None = None
        try:
            # communicate() feeds stdin and waits under one timeout: an agent that never reads
            # a prompt larger than the pipe buffer cannot hold the loop past the turn timeout.
            proc.communicate(
                None if stdin_text is None else stdin_text.encode("utf-8"), timeout=timeout
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
        except KeyboardInterrupt:
            kill_group(proc)
            raise
        finally:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
    with log.open("rb") as fh:
        fh.seek(max(0, log.stat().st_size - OUTPUT_KEEP))
        output = fh.read().decode("utf-8", "replace")
    return AgentTurn(code, timed_out, output, time.monotonic() - started)


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


def _failing(verdict: Mapping[str, Any]) -> list[str]:
    return sorted(VerdictView(verdict).failing_tests())


def _checkpoint_notes(state: Mapping[str, Any]) -> list[str]:
    notes = []
    for cid, cp in state["checkpoints"].items():
        if cp.get("status") == "denied":
            notes.append(
                f"{cid} DENIED by {cp.get('by')}: {cp.get('message', '')} - undo it and do not "
                "try it again"
            )
        elif cp.get("status") == "approved":
            notes.append(f"{cid} approved by {cp.get('by')}: {cp.get('message', '')}")
    return notes


def run_loop(
    root: Path,
    command: Sequence[str] | None,
    *,
    resume: bool = False,
    turn_timeout: float | None = None,
    say: Callable[[str], None] = print,
    lessons: str = "",
    poll: float = DEFAULT_POLL,
) -> int:
    """Run the governed loop in ``root``; returns the exit code of the stop.

    Between turns it parks (no turn, no spend) while a barrier stands or a person paused it,
    checking again every ``poll`` seconds (see :mod:`pytest_loopcontract.loop.control`).
    """
    state_dir = StateDir.of(root).folder
    history = History(state_dir)
    lock_command = " ".join(command) if command else "loop --resume"
    with LoopLock(state_dir, command=lock_command):
        read = history.read()
        for message in read.messages():
            say(f"[loop] history: {message}")
        state = reduce(read.records)
        status = state["loop"].get("status")
        running = status in ("running", "awaiting_human")
        if resume and status == "idle":
            raise LoopError("nothing to resume: no loop was started here ('loop -- CMD...')")
        if resume and status == "done":
            raise LoopError(
                "nothing to resume: the recorded loop already met the contract; "
                "start a new one with 'loop-contract loop -- CMD...'"
            )
        if running and not resume:
            raise LoopError(
                f"a loop is already recorded here (iteration {state['loop'].get('iteration')}, "
                f"{state['loop'].get('status')}): continue it with 'loop-contract loop --resume'"
            )
        baseline = load_baseline(root)
        contract = pinned_contract(root, baseline)
        if resume:
            command = command or list(state["loop"].get("command") or ())
            history.append("resumed", {"command": list(command)})
        else:
            if not command:
                raise LoopError("no agent command: 'loop-contract loop -- AGENT ARGS...'")
            history.append("loop_started", loop_started_record(contract, list(command)))
        if not command:
            raise LoopError("the recorded loop has no agent command; start a new one")
        timeout = turn_timeout or contract.turn_timeout
        caps = Caps(tokens=contract.budget.tokens, usd=contract.budget.usd)
        verdict = _last_verdict(root) if resume else None
        parked = Parking(root, history, say, poll)
        while True:
            # The guard rails first: a changed hook file waits for a person before any turn.
            for reason in harness_checkpoints(root, history):
                say(f"[loop] harness: {reason.message}")
            state = reduce(history.read().records)
            stop = pre_turn_stop(state, contract, now_instant())
            if stop is None:
                try:
                    action, message = parked.step(state)
                except KeyboardInterrupt:
                    history.append("interrupted", {"phase": "parked"})
                    say("[loop] interrupted; 'loop-contract loop --resume' continues")
                    return 130
                if action == "wait":
                    continue
                if action == "stop":
                    stop = Stop("cleared", EXIT_NOT_MET, "stop", message)
            if stop is not None:
                return _finish(history, stop, say)
            iteration = int(state["loop"].get("iteration") or 0) + 1
            prompt = build_prompt(
                contract,
                iteration=iteration,
                verdict=verdict,
                checkpoint_notes=_checkpoint_notes(state),
                lessons=lessons,
                protected=list(baseline.pins),
            )
            prompt_file = StateDir(state_dir).prompt
            prompt_file.write_text(prompt, "utf-8")
            argv, placed = substitute(command, prompt, str(prompt_file))
            try:
                turn = run_agent(
                    argv,
                    stdin_text=None if placed else prompt,
                    cwd=root,
                    timeout=timeout,
                    log=StateDir(state_dir).turn_log(iteration),
                )
            except KeyboardInterrupt:
                history.append("interrupted", {"iteration": iteration, "phase": "agent"})
                say("[loop] interrupted; 'loop-contract loop --resume' continues")
                return 130
            except LoopError as exc:
                history.append("agent_error", {"iteration": iteration, "error": str(exc)})
                _finish(history, Stop("agent_error", EXIT_AGENT, "stop", str(exc)), say)
                raise
            try:
                spend = spend_from_agent_output(turn.output)
            except ValueError as exc:  # the agent's own report: data, never a crash
                spend = None
                history.append("spend_invalid", {"iteration": iteration, "error": str(exc)})
                say(f"[loop] the agent reported a spend that is not valid ({exc}); not recorded")
            if spend is not None:
                record_spend(history, spend, "agent", caps)
            if turn.timed_out:
                say(f"[loop] agent turn {iteration} timed out after {timeout:g}s; verifying anyway")
            elif turn.exit_code:
                say(f"[loop] agent exited {turn.exit_code}; verifying anyway")
            try:
                verdict, stop = verify_iteration(
                    root, history, contract, iteration=iteration, turn=turn, say=say
                )
            except KeyboardInterrupt:
                history.append("interrupted", {"iteration": iteration, "phase": "verify"})
                say("[loop] interrupted; 'loop-contract loop --resume' continues")
                return 130
            if stop is not None:
                return _finish(history, stop, say)


def loop_started_record(contract: Contract, command: list[str]) -> dict[str, Any]:
    """What a new run records: the contract it runs under, its caps and the agent command."""
    return {
        "contract_id": contract.id,
        "contract_sha256": contract.sha256,
        "budget": {
            "iterations": contract.budget.iterations,
            "minutes": contract.budget.minutes,
            "tokens": contract.budget.tokens,
            "usd": contract.budget.usd,
        },
        "command": command,
        "started_at": time.time(),
    }


def verify_iteration(
    root: Path,
    history: History,
    contract: Contract,
    *,
    iteration: int,
    turn: AgentTurn | None,
    say: Callable[[str], None],
) -> tuple[dict[str, Any], Stop | None]:
    """Verify the tree in isolation, record the iteration, and say whether to stop.

    Shared by the loop and by agent-CLI hooks (a Claude Code Stop hook is an iteration too).
    """
    state = reduce(history.read().records)
    outcome = verify(root, history=history)
    verdict = outcome.verdict
    touched = touched_stop_paths(outcome.changed, contract)
    keys = [*state.get("progress_keys", []), outcome.progress_key]
    gates = verdict["gates"]["hard"] + verdict["gates"]["measured"]
    history.append(
        "iteration",
        {
            "n": iteration,
            "verdict": verdict["verdict"],
            "exit_code": verdict["exit_code"],
            "failing": _failing(verdict)[:200],
            "progress_key": outcome.progress_key,
            "empty_diff": not outcome.changed,
            "gates_passing": sum(1 for g in gates if g["status"] in ("pass", "not_measurable")),
            "gates_total": len(gates),
            "duration_s": round(turn.seconds, 3) if turn else None,
            "agent_exit": turn.exit_code if turn else None,
            "agent_timed_out": turn.timed_out if turn else False,
            "nonce": verdict["nonce"],
            "reasons": [r["code"] for r in verdict["reasons"]],
        },
    )
    state = reduce(history.read().records)
    stop = post_turn_stop(verdict, keys, contract)
    # A guarded path waits for a person even when the verdict passes: "met" must not skip them.
    if touched and (stop is None or stop.reason == "met"):
        request = clearance.request(
            history,
            "stop_when:" + ",".join(sorted(touched)),
            [_StopRuleMatch(p) for p in touched],
            kind="stop_rule",
            standing=True,
        )
        if request.status != "cleared":
            stop = Stop(
                "checkpoint",
                EXIT_AWAIT_HUMAN,
                "await_human",
                f"stop rule: {', '.join(touched)} touched ({request.id})",
            )
    if stop is None:
        stop = pre_turn_stop(state, contract, now_instant())
    if verdict["verdict"] != "pass" and not outcome.changed:
        say("[loop] the candidate's diff against the baseline is empty")
    verdict["loop"] = {
        "iteration": iteration,
        "decision": stop.decision if stop else "continue",
        "stop_reason": stop.reason if stop else None,
    }
    write_json_atomic(outcome.verdict_path, verdict)
    say(progress_line(state, contract, verdict, now_instant()))
    return verdict, stop


@dataclass(frozen=True)
class _StopRuleMatch:
    path: str
    pattern_id: str = "stop-when-path"
    kind: str = "path"
    line: int | None = None

    @property
    def message(self) -> str:
        return f"stop rule: {self.path} was touched"

    @property
    def evidence(self) -> str:
        return self.path


def _last_verdict(root: Path) -> dict[str, Any] | None:
    """The verdict on disk, to brief the first resumed turn (None if absent or unreadable)."""
    import json

    try:
        document = json.loads((StateDir.of(root).verdict).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "dod" in document else None


def _finish(history: History, stop: Stop, say: Callable[[str], None]) -> int:
    history.append(
        "stop",
        {
            "reason": stop.reason,
            "exit_code": stop.exit_code,
            "decision": stop.decision,
            "message": stop.message,
        },
    )
    say(f"[loop] stop: {stop.message} (exit {stop.exit_code})")
    return stop.exit_code
