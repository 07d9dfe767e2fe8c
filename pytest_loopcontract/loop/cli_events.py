"""What the agent-CLI hooks decide: the guard before a tool call and the gate at a stop.

Each handler returns the answer in Claude Code's JSON shape (None lets the CLI's own rules
decide) and raises on anything it cannot judge; :mod:`cli_hooks` turns a raise into a block
and writes the answer in the form the CLI's :class:`~.cli_hooks.Dialect` reads.

* Guard: a shell command goes through the checkpoint check; a file-writing tool (Claude Code's
  Write, Edit, MultiEdit, NotebookEdit; Gemini's write_file, replace; the files a Codex
  ``apply_patch`` names) aimed at a pinned path, a harness file, git's folder or the state
  folder is denied before the write happens, with the path named.
* Stop: each stop attempt is one verified iteration of a run. While the contract is not met
  the stop is blocked with the verifier's reasons; the contract's iteration cap (not the CLI's
  count of blocks) ends the run, and the answer says so. When a checkpoint waits for a
  person the stop is allowed, never silently: the user sees the checkpoint ids and the command
  that resolves them, and the history records the stop.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.lock import LockHeld, LoopLock
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import harness

if TYPE_CHECKING:
    from pytest_loopcontract.loop.cli_hooks import Dialect

__all__ = ["HookBlock", "pre_tool_use", "protected_reason", "stop"]

_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)


class HookBlock(LoopContractError):
    """The handler's answer is "blocked" for the reason given (nothing broke); under the
    package's error root like every exception it raises, with Claude Code's blocking exit."""

    exit_code = 2


# --------------------------------------------------------------------------- PreToolUse


def _deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def pre_tool_use(root: Path, payload: Mapping[str, Any], dialect: Dialect) -> dict[str, Any] | None:
    """Deny what needs a person or would rewrite the referee; None lets the call through."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if tool in dialect.write_tools:
        return _guard_write(root, str(tool), _written_paths(tool_input))
    if tool not in dialect.shell_tools:
        return None
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if not isinstance(command, str) or not command.strip():
        return None
    return _guard_command(root, command)


def _written_paths(tool_input: object) -> list[str]:
    """The files a write tool names: ``file_path`` (or ``notebook_path``), else the files of
    a patch (``*** Update File: <path>``, Codex's apply_patch) in any string of its input."""
    if not isinstance(tool_input, Mapping):
        return []
    named = tool_input.get("file_path") or tool_input.get("notebook_path")
    if isinstance(named, str) and named:
        return [named]
    found: list[str] = []
    for value in tool_input.values():
        if isinstance(value, str):
            found += [a or b for a, b in _PATCH_FILE.findall(value)]
    return [path.strip() for path in found]


def _guard_command(root: Path, command: str) -> dict[str, Any] | None:
    from pytest_loopcontract.checkpoints.clearance import person_name, resolve_command
    from pytest_loopcontract.loop.agent_hooks import check_command

    matches, request = check_command(root, command)
    if request is None or request.status == "cleared":
        return None
    what = "; ".join(dict.fromkeys(m.message for m in matches))
    if request.status == "denied":
        reason = f"loop-contract checkpoint {request.id}: {what}. {request.message}; do not retry."
    else:
        reason = (
            f"loop-contract checkpoint {request.id}: {what}. A person must clear it "
            f"('{resolve_command(request.id, person_name(root))}'); "
            "continue with other work meanwhile."
        )
    return _deny(reason)


def _guard_write(root: Path, tool: str, targets: list[str]) -> dict[str, Any] | None:
    if not targets:
        return _deny(f"loop-contract: {tool} names no file it writes; the write is denied")
    for target in targets:
        why = protected_reason(root, target)
        if why is not None:
            return _deny(
                f"loop-contract: {tool} to {target} denied: {why}. The agent does not change "
                "the referee; change the code under test instead (a person may change this file)."
            )
    return None


def protected_reason(root: Path, target: str) -> str | None:
    """Why writing ``target`` is not the agent's to do, or None when it may write it."""
    real_root = Path(os.path.realpath(root))
    path = Path(target) if os.path.isabs(target) else root / target
    real = Path(os.path.realpath(path))  # a symlink to a pinned file is that file
    for name, governed in harness.governed(root).items():
        if os.path.realpath(governed) == str(real):
            return f"{name} is a harness file that governs the agent"
    try:
        rel = real.relative_to(real_root).as_posix()
    except ValueError:
        return None  # outside the repository: not the contract's business
    top = rel.split("/", 1)[0]
    if top == ".git":
        return f"{rel} is inside git's own folder (hooks, configuration)"
    if top == StateDir.NAME:
        return f"{rel} is inside the loop's state folder"
    return _pinned_reason(root, rel)


def _pinned_reason(root: Path, rel: str) -> str | None:
    from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME
    from pytest_loopcontract.workspace import DEFAULT_PROTECT, matches_any

    if not StateDir.of(root).baseline.exists():
        if rel == DEFAULT_CONTRACT_NAME or matches_any(rel, DEFAULT_PROTECT):
            return f"{rel} is protected by default (tests' configuration or the contract)"
        return None
    from pytest_loopcontract.verifier.baseline.record import load_baseline
    from pytest_loopcontract.verifier.baseline.take import protect_globs
    from pytest_loopcontract.verifier.verify import pinned_contract

    baseline = load_baseline(root)
    contract = pinned_contract(root, baseline)
    if rel == baseline.contract_path:
        return f"{rel} is the contract, pinned by the baseline"
    if rel in baseline.pins:
        return f"{rel} is pinned by the baseline"
    if matches_any(rel, protect_globs(contract)) and not matches_any(rel, contract.protect.allow):
        return f"{rel} matches a protected glob of the contract"
    if contract.boundaries.deny and matches_any(rel, contract.boundaries.deny):
        return f"{rel} is outside the contract's boundaries (deny)"
    return None


# --------------------------------------------------------------------------- Stop


def _allow(message: str) -> dict[str, Any]:
    """Let Claude stop, and tell the user why (``systemMessage`` is shown to the user)."""
    return {"systemMessage": message}


def stop(root: Path, payload: Mapping[str, Any], dialect: Dialect) -> dict[str, Any] | None:
    """Block the stop with the verifier's reasons until the run stops; see the module doc."""
    session = str(payload.get("session_id") or "")
    active = payload.get("stop_hook_active") is True
    if not StateDir.of(root).baseline.exists():
        raise HookBlock(
            "no adopted contract here (no baseline): a person runs 'loop-contract baseline' "
            "on the base commit, then the stop is verified"
        )
    # One loop per repository. When ``loop-contract loop`` runs Claude, the Stop hook fires
    # inside its agent turn: the governed loop verifies after the turn and owns the record, so
    # the hook stays out of it (starting a run here would reset the loop's counters, spend and
    # progress). Holding the lock also keeps two stop attempts from interleaving iterations.
    try:
        holder = f"{dialect.agent} stop hook {session}".strip()
        with LoopLock(StateDir.of(root).folder, command=holder):
            return _stop_locked(root, session, active, dialect)
    except LockHeld as exc:
        return _allow(f"loop-contract: the governed loop verifies after this turn ({exc})")


def _stop_locked(root: Path, session: str, active: bool, dialect: Dialect) -> dict[str, Any] | None:
    from pytest_loopcontract.checkpoints.clearance import person_name
    from pytest_loopcontract.loop.budget import now_instant
    from pytest_loopcontract.loop.run import loop_started_record, recheck_tree, verify_iteration
    from pytest_loopcontract.loop.stops import pre_turn_stop
    from pytest_loopcontract.verifier.baseline.record import load_baseline
    from pytest_loopcontract.verifier.verify import pinned_contract

    history = History(StateDir.of(root).folder)
    contract = pinned_contract(root, load_baseline(root))
    command = [dialect.agent, session]
    loop = reduce(history.read().records)["loop"]
    same, status = loop.get("command") == command, loop.get("status")
    if same and status in ("stopped", "done") and active:
        # Claude continues because of an earlier block, but the run has ended since.
        return _allow(f"loop-contract: the run has ended ({loop.get('stop_reason')})")
    if not same or status == "idle" or status in ("stopped", "done"):
        # A new session, or a person spoke after the run ended: a new run starts.
        history.append("loop_started", loop_started_record(contract, command))
    elif status == "awaiting_human":
        history.append("resumed", {"command": command})
    harness.harness_checkpoints(root, history)
    recheck_tree(root, history, contract, _to_stderr)  # what the tree no longer raises goes
    state = reduce(history.read().records)
    by = person_name(root)
    ended = pre_turn_stop(state, contract, now_instant(), by=by)
    if ended is None:
        iteration = int(state["loop"].get("iteration") or 0) + 1
        verdict, ended = verify_iteration(
            root, history, contract, iteration=iteration, turn=None, say=_to_stderr
        )
        if ended is None:
            return _block(contract, verdict, iteration, dialect)
    message = ended.message
    if ended.decision == "await_human":
        message = _waiting_message(reduce(history.read().records), by) or message
    history.append(
        "stop",
        {
            "reason": ended.reason,
            "exit_code": ended.exit_code,
            "decision": ended.decision,
            "message": message,
        },
    )
    return _allow(f"loop-contract ({contract.id}): {message} (exit {ended.exit_code})")


def _waiting_message(state: Mapping[str, Any], by: str) -> str:
    """The pending checkpoints, each with what it is and the commands that decide it."""
    from pytest_loopcontract.loop.stops import waiting_line

    lines = [
        waiting_line(cp, by)
        for cp in state["checkpoints"].values()
        if cp.get("status") == "pending"
    ]
    if not lines:
        return ""
    return "stopped to wait for a person: " + "; ".join(lines)


def _block(
    contract: Any, verdict: Mapping[str, Any], iteration: int, dialect: Dialect
) -> dict[str, Any]:
    from pytest_loopcontract.loop.prompt import failure_report

    cap = contract.budget.iterations
    reasons = "\n".join(failure_report(contract, verdict))
    return {
        "decision": "block",
        "reason": f"The contract {contract.id} is not met yet (verified externally):\n"
        f"{reasons}\nKeep working; do not edit tests or configuration. "
        f"{_cap_note(iteration, cap, dialect)}",
        "systemMessage": f"loop-contract: iteration {iteration}/{cap or '-'}: "
        f"{contract.id} not met, {dialect.display} continues",
    }


def _cap_note(iteration: int, cap: int | None, dialect: Dialect) -> str:
    """Who ends the run: the contract's iteration cap; Claude Code's own block cap is noted
    when it could end a turn first (the next stop then continues this run's count)."""
    try:
        claude_cap = int(os.environ.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", ""))
    except ValueError:
        claude_cap = 8
    note = (
        f"(iteration {iteration} of {cap}: the contract's iteration cap decides when this run ends"
        if cap is not None
        else f"(iteration {iteration}; the contract sets no iteration cap"
    )
    if dialect.agent == "claude-code" and (cap is None or cap > claude_cap):
        note += (
            f"; Claude Code ends a turn itself after {claude_cap} blocks in a row, and the "
            "next stop continues this run's count"
        )
    return note + ")"


def _to_stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
