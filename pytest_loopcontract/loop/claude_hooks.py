"""Claude Code hooks that fail closed: a ``PreToolUse`` guard and a ``Stop`` gate.

Claude Code treats every exit code of a command hook other than 2 as "go ahead" (a missing
interpreter is exit 127, a crash exit 1, a hook killed by its timeout is an error too). A guard
that lets the action through whenever it breaks is no guard, so every way out of these hooks
ends in Claude Code's blocking form:

* the installed command names this interpreter by its absolute path (no ``PATH`` lookup) and
  is wrapped in a few lines of shell that turn any exit other than 0 or 2 into exit 2 with the
  reason on stderr, so a deleted virtual environment or a crash while starting blocks too;
* inside, every error (bad input, unreadable state, a corrupt baseline, any exception) becomes
  the blocking answer, and a watchdog answers "blocked: timed out" before Claude Code's own
  ``timeout`` for the hook would kill it.

Output shapes follow Claude Code's hooks reference (code.claude.com/docs/en/hooks, as of
May 2026, Claude Code 2.1.x): exit 0 with JSON on stdout (``hookSpecificOutput`` with
``permissionDecision: "deny"`` and ``permissionDecisionReason`` for PreToolUse; ``decision:
"block"`` and ``reason`` for Stop; ``systemMessage`` for text shown to the user), or exit 2
with the reason on stderr.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.fsio import write_bytes_atomic
from pytest_loopcontract.loop.claude_events import WRITE_TOOLS, HookBlock, pre_tool_use, stop
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import harness

__all__ = [
    "EVENTS",
    "HookAnswer",
    "emit",
    "hook_command",
    "install_claude_code",
    "run_claude_hook",
]

TOOL_MATCHER = "|".join(("Bash", *WRITE_TOOLS))
BLOCK_CAP_VAR = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
CLAUDE_DEFAULT_BLOCK_CAP = 8
DEADLINE_VAR = "LOOP_CONTRACT_HOOK_DEADLINE"
"""Seconds before the watchdog blocks (a shorter value only blocks sooner)."""


@dataclass(frozen=True)
class _Event:
    claude_name: str
    matcher: str | None
    timeout: int  # what Claude Code is told (seconds)
    deadline: float  # when our watchdog answers, safely before Claude Code gives up


EVENTS: Mapping[str, _Event] = {
    "claude-pre-tool-use": _Event("PreToolUse", TOOL_MATCHER, 60, 50.0),
    "claude-stop": _Event("Stop", None, 1800, 1780.0),
}


@dataclass(frozen=True)
class HookAnswer:
    """What the hook process says: its exit code, stdout (JSON or empty) and stderr."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


# --------------------------------------------------------------------------- install


def hook_command(event: str, python: str | None = None) -> str:
    """The shell command Claude Code runs for ``event``: absolute interpreter, fail closed."""
    py = shlex.quote(python or sys.executable)
    fix = "reinstall it with 'loop-contract hook install claude-code'"
    return (
        f"{py} -m pytest_loopcontract hook run {event}; rc=$?; "
        f'if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then '
        f'echo "loop-contract: the {event} hook could not run (exit $rc), so this is blocked; '
        f'{fix}" >&2; exit 2; fi; exit "$rc"'
    )


def _ours(command: object, event: str) -> bool:
    """A command one of our installers wrote for ``event`` (any version, any interpreter)."""
    if not isinstance(command, str):
        return False
    return any(
        f"{stem} hook run {event}" in command for stem in ("loop-contract", "pytest_loopcontract")
    )


def _merge(hooks: dict[str, Any], event: str) -> None:
    """Put our entry for ``event`` in place: an older entry of ours is replaced in its group,
    everything else the user has is kept as it is."""
    spec = EVENTS[event]
    entry = {"type": "command", "command": hook_command(event), "timeout": spec.timeout}
    groups = hooks.setdefault(spec.claude_name, [])
    if not isinstance(groups, list):
        raise ValueError(f"hooks.{spec.claude_name} is not a list; fix .claude/settings.json")
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            continue
        mine = [h for h in inner if isinstance(h, dict) and _ours(h.get("command"), event)]
        if mine and len(mine) == len(inner):  # a group of ours: updated in place
            inner[:] = [entry]
            if spec.matcher is not None:
                group["matcher"] = spec.matcher
            return
        if mine:  # ours inside a user's group: their matcher stays theirs, ours moves out
            inner[:] = [h for h in inner if h not in mine]
    group_spec: dict[str, Any] = {"hooks": [entry]}
    if spec.matcher is not None:
        group_spec = {"matcher": spec.matcher, **group_spec}
    groups.append(group_spec)


def _read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = json.loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return loaded


def _contract_cap(root: Path) -> int | None:
    """The iteration cap of the contract here (pinned when adopted), None when unknown."""
    from pytest_loopcontract.contract.model import DEFAULT_CONTRACT_NAME, load_contract
    from pytest_loopcontract.errors import LoopContractError

    try:
        if StateDir.of(root).baseline.exists():
            from pytest_loopcontract.verifier.baseline import load_baseline
            from pytest_loopcontract.verifier.verify import pinned_contract

            return pinned_contract(root, load_baseline(root)).budget.iterations
        return load_contract(root / DEFAULT_CONTRACT_NAME).budget.iterations
    except (LoopContractError, OSError):
        return None


def install_claude_code(root: Path) -> tuple[Path, list[str]]:
    """Merge our PreToolUse and Stop hooks into ``.claude/settings.json`` (indented JSON, the
    user's own hooks and keys kept), record its digest, and keep it out of git's view when
    it is new (so the tree stays clean enough for ``loop-contract baseline``)."""
    path = root / ".claude" / "settings.json"
    notes: list[str] = []
    settings = _read_settings(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix it first")
    for event in EVENTS:
        _merge(hooks, event)
    cap = _contract_cap(root)
    if cap is not None:
        env = settings.setdefault("env", {})
        if isinstance(env, dict):
            env[BLOCK_CAP_VAR] = str(max(cap, CLAUDE_DEFAULT_BLOCK_CAP))
            notes.append(
                f"{BLOCK_CAP_VAR}={env[BLOCK_CAP_VAR]}: Claude Code's own cap on consecutive "
                f"Stop blocks is set at or above the contract's iteration cap ({cap})"
            )
    before = harness.current(root, [".claude/settings.json"])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, (json.dumps(settings, indent=2) + "\n").encode("utf-8"))
    harness.record(root, [".claude/settings.json"], by="hook install claude-code", before=before)
    if _exclude_if_untracked(root, ".claude/settings.json"):
        notes.append(
            ".claude/settings.json is new, so it is listed in .git/info/exclude (the "
            "baseline needs a clean tree); commit it with 'git add -f' to share it"
        )
    return path, notes


def _exclude_if_untracked(root: Path, name: str) -> bool:
    """List an untracked ``name`` in ``.git/info/exclude``; True when it was added."""
    from pytest_loopcontract.verifier.workspace import WorkspaceError, git

    try:
        if git(root, "ls-files", "--", name).strip():
            return False  # tracked: the user commits the change
        info = Path(git(root, "rev-parse", "--git-path", "info/exclude").decode().strip())
    except WorkspaceError:
        return False
    info = info if info.is_absolute() else root / info
    text = info.read_text("utf-8") if info.exists() else ""
    line = "/" + name
    if line in text.splitlines():
        return False
    info.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not text or text.endswith("\n") else "\n"
    write_bytes_atomic(info, (text + prefix + line + "\n").encode("utf-8"))
    return True


# --------------------------------------------------------------------------- run


def _blocked(event: str, why: str) -> HookAnswer:
    """Claude Code's blocking form for ``event``: exit 2, the reason on stderr."""
    what = "this tool call is blocked" if event == "claude-pre-tool-use" else "do not stop yet"
    return HookAnswer(2, stderr=f"loop-contract: {why}; {what} (the hook fails closed)\n")


def _deadline(event: str) -> float:
    default = EVENTS[event].deadline
    try:
        given = float(os.environ.get(DEADLINE_VAR, ""))
    except ValueError:
        return default
    return min(default, given) if given > 0 else default


class _Watchdog:
    """Answers "blocked" and ends the process if the hook outlives its deadline."""

    def __init__(self, event: str, seconds: float, emit: Callable[[HookAnswer], None]):
        self._timer = threading.Timer(seconds, self._fire, args=(event, seconds, emit))
        self._timer.daemon = True

    @staticmethod
    def _fire(event: str, seconds: float, emit: Callable[[HookAnswer], None]) -> None:
        emit(_blocked(event, f"the {event} hook did not finish within {seconds:g}s"))
        os._exit(2)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def emit(answer: HookAnswer) -> None:
    """Write an answer to the process's streams (flushed: the watchdog may exit next)."""
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr)
        sys.stderr.flush()


def run_claude_hook(event: str, root: Path | None, stdin_text: str) -> HookAnswer:
    """Run one Claude Code hook event; every failure is an answer that blocks."""
    if event not in EVENTS:
        return _blocked(event, f"unknown hook event {event!r}")
    with _Watchdog(event, _deadline(event), emit):
        try:
            return _answer(event, root, stdin_text)
        except HookBlock as exc:
            return _blocked(event, str(exc))
        except Exception as exc:  # fail closed: a crash must not read as "go ahead"
            return _blocked(event, f"the {event} hook failed ({type(exc).__name__}: {exc})")


def _answer(event: str, root: Path | None, stdin_text: str) -> HookAnswer:
    if root is None:
        from pytest_loopcontract.cli.repo import repo_root

        root = repo_root()
    try:
        payload = json.loads(stdin_text or "{}")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        return _blocked(event, f"the {event} hook input is not a JSON object")
    handler = pre_tool_use if event == "claude-pre-tool-use" else stop
    result = handler(root, payload)
    return HookAnswer(0, stdout=json.dumps(result) + "\n" if result is not None else "")
