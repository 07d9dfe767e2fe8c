"""Agent-CLI hooks that fail closed: a guard before each tool call and a gate at each stop,
for Claude Code, Codex and Gemini CLI.

All three CLIs run a command hook with the event as JSON on stdin and read exit 2 as "blocked"
(the reason on stderr goes to the model), and all three treat every other failing exit code as
"go ahead" (a missing interpreter is exit 127, a crash exit 1, a hook killed by its timeout is
an error too). A guard that lets the action through whenever it breaks is no guard, so every
way out of these hooks ends in the blocking form:

* the installed command names this interpreter by its absolute path (no ``PATH`` lookup) and
  is wrapped in a few lines of shell that turn any exit other than 0 or 2 into exit 2 with the
  reason on stderr, so a deleted virtual environment or a crash while starting blocks too;
* inside, every error (bad input, unreadable state, a corrupt baseline, any exception) becomes
  the blocking answer, and a watchdog answers "blocked: timed out" before the CLI's own
  ``timeout`` for the hook would kill it.

What differs is a :class:`Dialect`, each proven against the pinned release of its CLI
(``tests/loop/test_cli_hooks_*_real.py``):

* Claude Code 2.1.332: ``.claude/settings.json``, ``PreToolUse`` and ``Stop``, timeouts in
  seconds; answers as JSON on stdout (``permissionDecision: "deny"``, ``decision: "block"``).
* Codex 0.171.0: ``.codex/hooks.json`` in Claude Code's format (``tool_name: "Bash"``,
  ``stop_hook_active``); a blocked call reaches the model as "Command blocked by PreToolUse
  hook: <stderr>". Codex runs a project's hooks only in a trusted project with trusted hooks.
* Gemini CLI 0.61.0: ``.gemini/settings.json``, ``BeforeTool`` and ``AfterAgent``, timeouts in
  milliseconds, tools ``run_shell_command``/``write_file``/``replace``; exit 2 blocks a tool
  ("Tool execution blocked: <stderr>") and sends the agent back with stderr as its next prompt.

Codex and Gemini get the exit-2 form for every block (the one answer all three share); Claude
Code keeps the JSON form it documents.
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
from pytest_loopcontract.loop.cli_events import HookBlock, pre_tool_use, stop
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import harness

__all__ = [
    "DIALECTS",
    "EVENTS",
    "Dialect",
    "HookAnswer",
    "emit",
    "hook_command",
    "install_agent_hooks",
    "run_cli_hook",
]

BLOCK_CAP_VAR = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
CLAUDE_DEFAULT_BLOCK_CAP = 8
DEADLINE_VAR = "LOOP_CONTRACT_HOOK_DEADLINE"
"""Seconds before the watchdog blocks (a shorter value only blocks sooner)."""


@dataclass(frozen=True)
class Dialect:
    """How one agent CLI names, configures and answers its hooks."""

    agent: str  # the name users type: hook install <agent>
    display: str
    settings: str  # the project file holding the hooks, relative to the repository
    guard_event: str  # the CLI's event before a tool runs
    stop_event: str  # the CLI's event when the agent would end its turn
    shell_tools: tuple[str, ...]  # tools whose input ``command`` is a shell command
    write_tools: tuple[str, ...]  # tools whose input names the file they write
    timeout_scale: int  # the CLI's timeout unit per second (1: seconds, 1000: milliseconds)
    exit_form: bool  # blocks are exit 2 with the reason on stderr (not JSON on stdout)

    @property
    def matcher(self) -> str:
        return "|".join((*self.shell_tools, *self.write_tools))


DIALECTS: Mapping[str, Dialect] = {
    "claude-code": Dialect(
        "claude-code", "Claude Code", ".claude/settings.json", "PreToolUse", "Stop",
        ("Bash",), ("Write", "Edit", "MultiEdit", "NotebookEdit"), 1, exit_form=False,
    ),
    "codex": Dialect(
        "codex", "Codex", ".codex/hooks.json", "PreToolUse", "Stop",
        ("Bash",), ("apply_patch",), 1, exit_form=True,
    ),
    "gemini": Dialect(
        "gemini", "Gemini CLI", ".gemini/settings.json", "BeforeTool", "AfterAgent",
        ("run_shell_command",), ("write_file", "replace"), 1000, exit_form=True,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class _Event:
    dialect: Dialect
    guard: bool  # the guard before a tool (else the stop gate)
    timeout: int  # what the CLI is told (seconds)
    deadline: float  # when our watchdog answers, safely before the CLI gives up

    @property
    def cli_name(self) -> str:
        return self.dialect.guard_event if self.guard else self.dialect.stop_event


def _events() -> dict[str, _Event]:
    prefix = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}
    found = {}
    for agent, dialect in DIALECTS.items():
        found[f"{prefix[agent]}-pre-tool-use"] = _Event(dialect, True, 60, 50.0)
        found[f"{prefix[agent]}-stop"] = _Event(dialect, False, 1800, 1780.0)
    return found


EVENTS: Mapping[str, _Event] = _events()
"""Our event names (``hook run <event>``): ``<cli>-pre-tool-use`` and ``<cli>-stop``."""


@dataclass(frozen=True)
class HookAnswer:
    """What the hook process says: its exit code, stdout (JSON or empty) and stderr."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


# --------------------------------------------------------------------------- install


def hook_command(event: str, python: str | None = None) -> str:
    """The shell command the CLI runs for ``event``: absolute interpreter, fail closed.

    A stop hook that cannot run blocks the first stop only: Codex and Gemini CLI have no cap
    of their own on blocked stops, so blocking every stop would keep the agent (and its spend)
    going for ever. When the CLI says it continues because of a block (``stop_hook_active``)
    the stop goes through, unverified, and the message says so; the verdict is still
    ``verify``'s, outside the agent."""
    py = shlex.quote(python or sys.executable)
    fix = f"reinstall it with 'loop-contract hook install {EVENTS[event].dialect.agent}'"
    broken = f"loop-contract: the {event} hook could not run (exit $rc)"
    run = f"{py} -m pytest_loopcontract hook run {event}"
    if EVENTS[event].guard:
        return (
            f"{run}; rc=$?; "
            f'if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then '
            f'echo "{broken}, so this is blocked; {fix}" >&2; exit 2; fi; exit "$rc"'
        )
    return (
        f'input=$(cat); printf "%s" "$input" | {run}; rc=$?; '
        f'if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then '
        f'case "$input" in *\'"stop_hook_active":true\'*|*\'"stop_hook_active": true\'*) '
        f'echo "{broken} again; this stop is not verified; {fix}" >&2; exit 0;; esac; '
        f'echo "{broken}, so this is blocked; {fix}" >&2; exit 2; fi; exit "$rc"'
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
    timeout = spec.timeout * spec.dialect.timeout_scale
    entry = {"type": "command", "command": hook_command(event), "timeout": timeout}
    groups = hooks.setdefault(spec.cli_name, [])
    if not isinstance(groups, list):
        raise ValueError(f"hooks.{spec.cli_name} is not a list; fix {spec.dialect.settings}")
    matcher = spec.dialect.matcher if spec.guard else None
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            continue
        mine = [h for h in inner if isinstance(h, dict) and _ours(h.get("command"), event)]
        if mine and len(mine) == len(inner):  # a group of ours: updated in place
            inner[:] = [entry]
            if matcher is not None:
                group["matcher"] = matcher
            return
        if mine:  # ours inside a user's group: their matcher stays theirs, ours moves out
            inner[:] = [h for h in inner if h not in mine]
    group_spec: dict[str, Any] = {"hooks": [entry]}
    if matcher is not None:
        group_spec = {"matcher": matcher, **group_spec}
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
            from pytest_loopcontract.verifier.baseline.record import load_baseline
            from pytest_loopcontract.verifier.verify import pinned_contract

            return pinned_contract(root, load_baseline(root)).budget.iterations
        return load_contract(root / DEFAULT_CONTRACT_NAME).budget.iterations
    except (LoopContractError, OSError):
        return None


def install_agent_hooks(root: Path, agent: str) -> tuple[Path, list[str]]:
    """Merge our guard and stop hooks into ``agent``'s project settings (indented JSON, the
    user's own hooks and keys kept), record its digest, and keep it out of git's view when
    it is new (so the tree stays clean enough for ``loop-contract baseline``)."""
    dialect = DIALECTS[agent]
    path = root / dialect.settings
    notes: list[str] = []
    settings = _read_settings(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix it first")
    for event, spec in EVENTS.items():
        if spec.dialect is dialect:
            _merge(hooks, event)
    if agent == "claude-code":
        notes += _claude_block_cap(root, settings)
    before = harness.current(root, [dialect.settings])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, (json.dumps(settings, indent=2) + "\n").encode("utf-8"))
    harness.record(root, [dialect.settings], by=f"hook install {agent}", before=before)
    if _exclude_if_untracked(root, dialect.settings):
        notes.append(
            f"{dialect.settings} is new, so it is listed in .git/info/exclude (the "
            "baseline needs a clean tree); commit it with 'git add -f' to share it"
        )
    return path, notes + list(_TRUST_NOTES.get(agent, ()))


_TRUST_NOTES = {
    "codex": (
        "Codex runs a project's hooks only in a trusted project with trusted hooks: run "
        "'codex exec --trust --dangerously-bypass-hook-trust ...' (these hooks' bytes are "
        "recorded, and a change to them waits for a person) or trust them once in codex",
    ),
    "gemini": (
        "Gemini CLI runs a project's hooks in a trusted folder: trust it once in gemini, or "
        "set GEMINI_CLI_TRUST_WORKSPACE=true for a headless run",
    ),
}


def _claude_block_cap(root: Path, settings: dict[str, Any]) -> list[str]:
    """Claude Code's own cap on consecutive Stop blocks, set at or above the contract's."""
    cap = _contract_cap(root)
    env = settings.setdefault("env", {})
    if cap is None or not isinstance(env, dict):
        return []
    env[BLOCK_CAP_VAR] = str(max(cap, CLAUDE_DEFAULT_BLOCK_CAP))
    return [
        f"{BLOCK_CAP_VAR}={env[BLOCK_CAP_VAR]}: Claude Code's own cap on consecutive "
        f"Stop blocks is set at or above the contract's iteration cap ({cap})"
    ]


def _exclude_if_untracked(root: Path, name: str) -> bool:
    """List an untracked ``name`` in ``.git/info/exclude``; True when it was added."""
    from pytest_loopcontract.workspace import WorkspaceError, git

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
    """The blocking form every CLI shares: exit 2, the reason on stderr."""
    guard = event not in EVENTS or EVENTS[event].guard
    what = "this tool call is blocked" if guard else "do not stop yet"
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


def run_cli_hook(event: str, root: Path | None, stdin_text: str) -> HookAnswer:
    """Run one agent-CLI hook event; every failure is an answer that blocks."""
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
        from pytest_loopcontract.workspace import find_repo

        root = find_repo(Path.cwd())
    try:
        payload = json.loads(stdin_text or "{}")
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        return _blocked(event, f"the {event} hook input is not a JSON object")
    spec = EVENTS[event]
    handler = pre_tool_use if spec.guard else stop
    result = handler(root, payload, spec.dialect)
    if result is None:
        return HookAnswer(0)
    if spec.dialect.exit_form:
        reason = _block_reason(result)
        if reason is not None:
            return HookAnswer(2, stderr=reason + "\n")
    return HookAnswer(0, stdout=json.dumps(result) + "\n")


def _block_reason(result: Mapping[str, Any]) -> str | None:
    """The reason of a deny or block answer, None when the answer lets the agent go on."""
    if result.get("decision") == "block":
        return str(result.get("reason") or "blocked")
    specific = result.get("hookSpecificOutput")
    if isinstance(specific, Mapping) and specific.get("permissionDecision") == "deny":
        return str(specific.get("permissionDecisionReason") or "denied")
    return None
