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
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.budget import (
    Caps,
    now_instant,
    record_spend,
    spend_from_agent_output,
)
from pytest_loopcontract.loop.lock import LoopLock
from pytest_loopcontract.loop.prompt import build_prompt, substitute
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.loop.stops import (
    Stop,
    post_turn_stop,
    pre_turn_stop,
    progress_line,
    touched_stop_paths,
)
from pytest_loopcontract.loop.wait import Parking
from pytest_loopcontract.processes import kill_group, spawn
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import (
    EXIT_AWAIT_HUMAN,
    EXIT_NOT_MET,
    VerdictView,
)
from pytest_loopcontract.verifier.baseline.record import load_baseline
from pytest_loopcontract.verifier.harness import harness_checkpoints
from pytest_loopcontract.verifier.verify import VerifyOutcome, pinned_contract, verify

__all__ = [
    "AgentTurn",
    "LoopError",
    "loop_started_record",
    "recheck_tree",
    "run_loop",
    "verify_iteration",
]

EXIT_AGENT = 2
DEFAULT_POLL = 2.0  # seconds between looks while parked or paused
OUTPUT_KEEP = 1 << 20


class LoopError(LoopContractError):
    """A loop that cannot start or continue; the message says what to do."""


@dataclass(frozen=True)
class AgentTurn:
    exit_code: int | None
    timed_out: bool
    output: str
    seconds: float


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


def _failing(verdict: Mapping[str, Any]) -> list[str]:
    return sorted(VerdictView(verdict).failing_tests())


def _checkpoint_notes(state: Mapping[str, Any]) -> list[str]:
    notes = []
    for cid, cp in state["checkpoints"].items():
        if cp.get("kind") == "flag" and cp.get("status") in ("approved", "denied"):
            verb = "agreed" if cp["status"] == "approved" else "disagreed"
            notes.append(
                f"{cid}: {cp.get('by')} {verb} with your flag ({cp.get('message', '')})"
                + ("" if verb == "agreed" else " - the task can be done: keep working")
            )
        elif cp.get("status") == "denied":
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
        _check_can_start(reduce(read.records), resume)
        baseline = load_baseline(root)
        contract = pinned_contract(root, baseline)
        argv = _record_start(history, reduce(read.records), contract, command, resume)
        run = _LoopRun(
            root=root,
            history=history,
            contract=contract,
            command=argv,
            timeout=turn_timeout or contract.turn_timeout,
            caps=Caps(tokens=contract.budget.tokens, usd=contract.budget.usd),
            lessons=lessons,
            protected=list(baseline.pins),
            say=say,
            parking=Parking(root, history, say, poll),
        )
        return run.turns(_last_verdict(root) if resume else None)


def _check_can_start(state: Mapping[str, Any], resume: bool) -> None:
    """A resume needs a loop that is still going; a new start needs none going."""
    status = state["loop"].get("status")
    if resume and status == "idle":
        raise LoopError("nothing to resume: no loop was started here ('loop -- CMD...')")
    if resume and status == "done":
        raise LoopError(
            "nothing to resume: the recorded loop already met the contract; "
            "start a new one with 'loop-contract loop -- CMD...'"
        )
    if status in ("running", "awaiting_human") and not resume:
        raise LoopError(
            f"a loop is already recorded here (iteration {state['loop'].get('iteration')}, "
            f"{state['loop'].get('status')}): continue it with 'loop-contract loop --resume'"
        )


def _record_start(
    history: History,
    state: Mapping[str, Any],
    contract: Contract,
    command: Sequence[str] | None,
    resume: bool,
) -> list[str]:
    """Record the start (or the resume) and return the agent command it runs."""
    if resume:
        command = command or list(state["loop"].get("command") or ())
        history.append("resumed", {"command": list(command)})
    else:
        if not command:
            raise LoopError("no agent command: 'loop-contract loop -- AGENT ARGS...'")
        history.append("loop_started", loop_started_record(contract, list(command)))
    if not command:
        raise LoopError("the recorded loop has no agent command; start a new one")
    return list(command)


@dataclass(frozen=True)
class _LoopRun:
    """One running loop: what every turn needs, and the turn's steps."""

    root: Path
    history: History
    contract: Contract
    command: list[str]
    timeout: float
    caps: Caps
    lessons: str
    protected: list[str]
    say: Callable[[str], None]
    parking: Parking

    def turns(self, verdict: dict[str, Any] | None) -> int:
        """Turn after turn until a stop rule; returns the stop's exit code."""
        while True:
            # The guard rails first: a changed hook file waits for a person before any turn.
            for reason in harness_checkpoints(self.root, self.history):
                self.say(f"[loop] harness: {reason.message}")
            # What the tree raised is looked at again before the loop waits on it.
            verdict = recheck_tree(self.root, self.history, self.contract, self.say) or verdict
            state = reduce(self.history.read().records)
            by = clearance.person_name(self.root)
            stop = pre_turn_stop(state, self.contract, now_instant(), by=by)
            if stop is None:
                try:
                    action, message = self.parking.step(state)
                except KeyboardInterrupt:
                    self.history.append("interrupted", {"phase": "parked"})
                    self.say("[loop] interrupted; 'loop-contract loop --resume' continues")
                    return 130
                if action == "wait":
                    continue
                if action == "stop":
                    stop = Stop("cleared", EXIT_NOT_MET, "stop", message)
            if stop is not None:
                return _finish(self.history, stop, self.say)
            iteration = int(state["loop"].get("iteration") or 0) + 1
            turn = self.agent_turn(iteration, self.prompt(state, iteration, verdict))
            if turn is None:
                return 130
            self.record_spend(iteration, turn)
            try:
                verdict, stop = verify_iteration(
                    self.root, self.history, self.contract, iteration=iteration, turn=turn,
                    say=self.say,
                )  # fmt: skip
            except KeyboardInterrupt:
                return self.interrupted(iteration, "verify")
            if stop is not None:
                return _finish(self.history, stop, self.say)

    def prompt(
        self, state: Mapping[str, Any], iteration: int, verdict: dict[str, Any] | None
    ) -> str:
        return build_prompt(
            self.contract,
            iteration=iteration,
            verdict=verdict,
            checkpoint_notes=_checkpoint_notes(state),
            lessons=self.lessons,
            protected=self.protected,
        )

    def agent_turn(self, iteration: int, prompt: str) -> AgentTurn | None:
        """Run the agent on ``prompt``; ``None`` when interrupted (the history says so)."""
        state_dir = StateDir.of(self.root)
        state_dir.prompt.write_text(prompt, "utf-8")
        argv, placed = substitute(self.command, prompt, str(state_dir.prompt))
        try:
            return run_agent(
                argv,
                stdin_text=None if placed else prompt,
                cwd=self.root,
                timeout=self.timeout,
                log=state_dir.turn_log(iteration),
            )
        except KeyboardInterrupt:
            self.interrupted(iteration, "agent")
            return None
        except LoopError as exc:
            self.history.append("agent_error", {"iteration": iteration, "error": str(exc)})
            _finish(self.history, Stop("agent_error", EXIT_AGENT, "stop", str(exc)), self.say)
            raise

    def record_spend(self, iteration: int, turn: AgentTurn) -> None:
        """The spend the agent reported (data, never a crash) and how its turn ended."""
        try:
            spend = spend_from_agent_output(turn.output)
        except ValueError as exc:
            spend = None
            self.history.append("spend_invalid", {"iteration": iteration, "error": str(exc)})
            self.say(f"[loop] the agent reported a spend that is not valid ({exc}); not recorded")
        if spend is not None:
            record_spend(self.history, spend, "agent", self.caps)
            if not spend.usd_reported and self.caps.usd is not None:
                self.say(
                    f"[loop] the agent printed tokens but no cost: the usd cap "
                    f"(${self.caps.usd:g}) cannot count this turn; the tokens cap can"
                )
        if turn.timed_out:
            self.say(
                f"[loop] agent turn {iteration} timed out after {self.timeout:g}s; verifying anyway"
            )
        elif turn.exit_code:
            self.say(f"[loop] agent exited {turn.exit_code}; verifying anyway")

    def interrupted(self, iteration: int, phase: str) -> int:
        self.history.append("interrupted", {"iteration": iteration, "phase": phase})
        self.say("[loop] interrupted; 'loop-contract loop --resume' continues")
        return 130


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
    _say_withdrawn([*outcome.withdrawn, *_withdraw_stop_rules(history, touched)], say)
    keys = [*state.get("progress_keys", []), outcome.progress_key]
    history.append("iteration", _iteration_record(iteration, outcome, turn))
    state = reduce(history.read().records)
    stop = post_turn_stop(verdict, keys, contract)
    # A guarded path waits for a person even when the verdict passes: "met" must not skip them.
    if touched and (stop is None or stop.reason == "met"):
        stop = _stop_rule_clearance(history, touched) or stop
    if stop is None:
        stop = pre_turn_stop(state, contract, now_instant(), by=clearance.person_name(root))
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


def recheck_tree(
    root: Path, history: History, contract: Contract, say: Callable[[str], None]
) -> dict[str, Any] | None:
    """Verify the tree again when a request it raised waits (content in the candidate's diff,
    a touched ``stop_when`` path), before the loop stops on it: a request whose cause is gone
    is withdrawn (and said), one whose cause is still there stays pending. Returns the fresh
    verdict; None when nothing the tree raised waits (then nothing runs).

    The loop's stop leaves the tree to a person: a file deleted before ``loop --resume`` must
    not hold the loop up as if it were still there."""
    state = reduce(history.read().records)
    waiting = [
        cid
        for cid, cp in state["checkpoints"].items()
        if cp.get("status") == "pending" and cp.get("kind") in ("diff", "stop_rule")
    ]
    if not waiting:
        return None
    say(f"[loop] {', '.join(waiting)}: raised by the tree; verifying the tree again")
    outcome = verify(root, history=history)
    touched = touched_stop_paths(outcome.changed, contract)
    _say_withdrawn([*outcome.withdrawn, *_withdraw_stop_rules(history, touched)], say)
    return outcome.verdict


def _withdraw_stop_rules(history: History, touched: Sequence[str]) -> list[dict[str, Any]]:
    """Withdraw the pending ``stop_when`` requests none of whose paths is touched any more (a
    request with one of its paths still touched stays: that path still waits for a person)."""
    still = set(touched)

    def why(raised: Mapping[str, Any], records: Sequence[Any]) -> str | None:
        paths = [str(m.get("path")) for m in raised.get("matches") or [] if isinstance(m, Mapping)]
        if not paths or still.intersection(paths):
            return None
        return f"the candidate's diff no longer touches {', '.join(paths)}"

    return [record.data for record in clearance.withdraw(history, "stop_rule", why)]


def _say_withdrawn(withdrawn: Sequence[Mapping[str, Any]], say: Callable[[str], None]) -> None:
    for data in withdrawn:
        say(f"[loop] checkpoint {data.get('id')} withdrawn: {data.get('why')}")


def _iteration_record(
    iteration: int, outcome: VerifyOutcome, turn: AgentTurn | None
) -> dict[str, Any]:
    """What the history keeps of one iteration: the verdict's summary and how the turn ended."""
    verdict = outcome.verdict
    gates = verdict["gates"]["hard"] + verdict["gates"]["measured"]
    return {
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
    }


def _stop_rule_clearance(history: History, touched: Sequence[str]) -> Stop | None:
    """Ask a person about the touched ``stop_when`` paths; a stop until they clear it."""
    request = clearance.request(
        history,
        "stop_when:" + ",".join(sorted(touched)),
        [_StopRuleMatch(p) for p in touched],
        kind="stop_rule",
        standing=True,
    )
    if request.status == "cleared":
        return None
    return Stop(
        "checkpoint",
        EXIT_AWAIT_HUMAN,
        "await_human",
        f"stop rule: {', '.join(touched)} touched ({request.id})",
    )


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
