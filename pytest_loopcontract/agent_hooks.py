"""Hooks that put the verifier and the checkpoints in front of git and of agent CLIs.

* ``pre-push`` (git, or pre-commit's ``pre-push`` stage): checkpoint scan of the commits being
  pushed, protected-branch and force pushes, and the contract's gates on the pushed commit.
* Claude Code: a ``PreToolUse`` hook that sends Bash commands through the checkpoint check and
  a ``Stop`` hook that refuses to stop until the contract is met or the loop has stopped.

Installers merge into what is there and never overwrite a user's own hook or settings.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import clearance
from .baseline import baseline_path, load_baseline
from .checkpoint_gate import contract_patterns
from .checkpoints import Match, scan_command, scan_diff
from .history import History
from .state import reduce
from .verdict import write_json_atomic
from .workspace import STATE_DIR, git, resolve_commit

__all__ = [
    "check_command",
    "claude_pre_tool_use",
    "claude_stop",
    "install_claude_code",
    "install_pre_push",
    "pre_push",
]

HOOK_MARKER = "# installed by loop-contract"
ZERO_SHA = "0" * 40
PROTECTED_BRANCHES = ("main", "master", "release/*", "production")
HOOK_COMMAND = "loop-contract hook run"


# --------------------------------------------------------------------------- command check


def check_command(
    root: Path, command: str | Sequence[str]
) -> tuple[list[Match], clearance.Clearance | None]:
    """Scan one command; when it matches, ask for (single-use) clearance in the history."""
    from .verify import pinned_contract

    patterns = _patterns(root, pinned_contract)
    matches = scan_command(command, patterns, workspace=root)
    if not matches:
        return [], None
    subject = command if isinstance(command, str) else " ".join(command)
    return matches, clearance.request(History(root / STATE_DIR), subject, matches, kind="command")


def _patterns(root: Path, pinned: Callable[..., Any]) -> tuple[Any, ...]:
    """The pinned contract's patterns when a baseline exists, the defaults otherwise."""
    from .checkpoints import patterns_from_contract

    if baseline_path(root).exists():
        return contract_patterns(pinned(root, load_baseline(root)))
    return patterns_from_contract({})


# --------------------------------------------------------------------------- git pre-push


@dataclass(frozen=True)
class _PushMatch:
    """A checkpoint finding that is about the push itself, not its content."""

    pattern_id: str
    message: str
    evidence: str
    kind: str = "command"
    path: str = ""
    line: int | None = None
    always: bool = True


def _branch(ref: str) -> str:
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref


def _protected(ref: str, protected: Sequence[str]) -> bool:
    from .workspace import match_glob

    return any(match_glob(_branch(ref), p) for p in protected)


def _push_base(root: Path, local_sha: str, remote_sha: str) -> str | None:
    """What the pushed commits should be diffed against; None means the empty tree."""
    if remote_sha != ZERO_SHA:
        try:
            resolve_commit(root, remote_sha)
            return remote_sha
        except Exception:
            pass  # the remote tip is not here (force push over unknown history)
    new = git(root, "rev-list", "--reverse", local_sha, "--not", "--remotes").decode().split()
    if not new:
        return local_sha
    parents = git(root, "rev-list", "--parents", "-n", "1", new[0]).decode().split()
    return parents[1] if len(parents) > 1 else None


def pre_push(
    root: Path,
    updates: Iterable[tuple[str, str, str, str]],
    *,
    run_gates: bool = True,
    say: Callable[[str], None] = print,
) -> int:
    """Check each ``(local_ref, local_sha, remote_ref, remote_sha)``; 0 allows the push."""
    from .verify import pinned_contract, verify

    history = History(root / STATE_DIR)
    patterns = _patterns(root, pinned_contract)
    blocked = False
    for local_ref, local_sha, remote_ref, remote_sha in updates:
        matches: list[Any] = []
        if local_sha == ZERO_SHA:
            matches.append(
                _PushMatch("git-delete-branch", f"deletes remote {remote_ref}", remote_ref)
            )
        else:
            if remote_sha != ZERO_SHA and _not_ancestor(root, remote_sha, local_sha):
                matches.append(
                    _PushMatch(
                        "git-force-push", f"rewrites the history of {remote_ref}", remote_ref
                    )
                )
            if _protected(remote_ref, PROTECTED_BRANCHES):
                matches.append(
                    _PushMatch(
                        "git-push-protected",
                        f"pushes to protected branch {_branch(remote_ref)}",
                        remote_ref,
                    )
                )
            base = _push_base(root, local_sha, remote_sha)
            args = ["diff-tree", "-r", "-p", "-U0", "--no-renames", "--no-color", "--no-ext-diff"]
            patch = git(
                root, *args, *([base, local_sha] if base else ["--root", local_sha])
            ).decode("utf-8", "replace")
            matches.extend(scan_diff(patch, patterns))
        if matches:
            request = clearance.request(
                history, f"push:{remote_ref}:{local_sha}", matches, kind="push"
            )
            if request.status != "cleared":
                blocked = True
                say(f"loop-contract: push of {local_ref} to {remote_ref} blocked ({request.id}):")
                for match in matches:
                    say(f"  - {match.message}" + (f" [{match.path}]" if match.path else ""))
                if request.status == "denied":
                    say(f"  {request.message}")
                else:
                    say(
                        f"  a person clears it with: loop-contract checkpoint resolve "
                        f"{request.id} --by NAME   (then push again)"
                    )
                continue
        if run_gates and local_sha != ZERO_SHA and baseline_path(root).exists():
            outcome = verify(
                root,
                candidate_ref=local_sha,
                history=history,
                verdict_path=root / STATE_DIR / "pre-push-verdict.json",
            )
            if outcome.verdict["verdict"] != "pass":
                blocked = True
                say(
                    f"loop-contract: push of {local_ref} blocked: the contract is not met "
                    f"(verdict {outcome.verdict['verdict']}, exit {outcome.verdict['exit_code']})"
                )
                for reason in outcome.verdict["reasons"][:10]:
                    say(f"  - {reason['code']}: {reason['message']}")
    return 1 if blocked else 0


def _not_ancestor(root: Path, older: str, newer: str) -> bool:
    import subprocess

    proc = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return proc.returncode == 1


def read_push_updates(stdin_text: str, env: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
    """git gives the updates on stdin; pre-commit gives one in PRE_COMMIT_* variables."""
    updates = []
    for line in stdin_text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            updates.append((parts[0], parts[1], parts[2], parts[3]))
    if not updates and env.get("PRE_COMMIT_TO_REF"):
        remote_branch = env.get("PRE_COMMIT_REMOTE_BRANCH", "")
        updates.append(
            (
                env.get("PRE_COMMIT_LOCAL_BRANCH", "HEAD"),
                env["PRE_COMMIT_TO_REF"],
                remote_branch,
                env.get("PRE_COMMIT_FROM_REF") or ZERO_SHA,
            )
        )
    return updates


def install_pre_push(root: Path) -> Path:
    """Write ``.git/hooks/pre-push``; an existing foreign hook is kept and chained first."""
    hooks_dir = Path(git(root, "rev-parse", "--git-path", "hooks").decode().strip())
    if not hooks_dir.is_absolute():
        hooks_dir = root / hooks_dir
    hooks_dir.mkdir(parents=True, exist_ok=True)
    hook = hooks_dir / "pre-push"
    chained = hooks_dir / "pre-push.before-loop-contract"
    if hook.exists() and HOOK_MARKER not in hook.read_text("utf-8", "replace"):
        if chained.exists():
            raise FileExistsError(f"{chained} exists already; merge the hooks by hand")
        hook.rename(chained)
    python = sys.executable
    hook.write_text(
        "#!/bin/sh\n"
        f"{HOOK_MARKER}: checkpoints and contract gates before anything leaves this machine\n"
        "input=$(cat)\n"
        f'if [ -x "{chained}" ]; then\n'
        f'  printf "%s\\n" "$input" | "{chained}" "$@" || exit $?\n'
        "fi\n"
        f'printf "%s\\n" "$input" |\n'
        f'  exec "{python}" -m pytest_loopcontract hook run pre-push "$@"\n',
        "utf-8",
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return hook


# --------------------------------------------------------------------------- Claude Code


def _hook_entry(event: str) -> dict[str, Any]:
    return {"type": "command", "command": f"{HOOK_COMMAND} {event}"}


def install_claude_code(root: Path) -> Path:
    """Merge our PreToolUse (Bash) and Stop hooks into ``.claude/settings.json``."""
    path = root / ".claude" / "settings.json"
    settings: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text("utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); fix it first") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{path} does not hold a JSON object")
        settings = loaded
    hooks = settings.setdefault("hooks", {})
    _merge(hooks, "PreToolUse", "Bash", _hook_entry("claude-pre-tool-use"))
    _merge(hooks, "Stop", None, _hook_entry("claude-stop"))
    write_json_atomic(path, settings)
    return path


def _merge(hooks: dict[str, Any], event: str, matcher: str | None, entry: dict[str, Any]) -> None:
    groups = hooks.setdefault(event, [])
    for group in groups:
        if any(h.get("command") == entry["command"] for h in group.get("hooks", [])):
            return  # installed already
    group_spec: dict[str, Any] = {"hooks": [entry]}
    if matcher is not None:
        group_spec = {"matcher": matcher, **group_spec}
    groups.append(group_spec)


def claude_pre_tool_use(root: Path, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """Deny a Bash command that needs a person; None lets Claude Code's own rules decide."""
    if payload.get("tool_name") != "Bash":
        return None
    command = (payload.get("tool_input") or {}).get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    matches, request = check_command(root, command)
    if request is None or request.status == "cleared":
        return None
    what = "; ".join(dict.fromkeys(m.message for m in matches))
    if request.status == "denied":
        reason = f"loop-contract checkpoint {request.id}: {what}. {request.message}; do not retry."
    else:
        reason = (
            f"loop-contract checkpoint {request.id}: {what}. A person must clear it "
            f"('loop-contract checkpoint resolve {request.id} --by NAME'); "
            "continue with other work meanwhile."
        )
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def claude_stop(root: Path, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """Block the stop (with the verifier's reasons) until the contract is met or the loop is
    over; each stop attempt is one verified iteration, so the loop's caps still apply."""
    from .loop import verify_iteration
    from .verify import pinned_contract

    if not baseline_path(root).exists():
        return None  # no contract adopted here: nothing to enforce
    history = History(root / STATE_DIR)
    state = reduce(history.read().records)
    session = str(payload.get("session_id") or "")
    contract = pinned_contract(root, load_baseline(root))
    loop = state["loop"]
    same_session = loop.get("command") == ["claude-code", session]
    if loop.get("status") in ("stopped", "done", "awaiting_human") and same_session:
        return None
    if not same_session or loop.get("status") == "idle":
        history.append(
            "loop_started",
            {
                "contract_id": contract.id,
                "contract_sha256": contract.sha256,
                "budget": {
                    "iterations": contract.budget.iterations,
                    "minutes": contract.budget.minutes,
                    "tokens": contract.budget.tokens,
                    "usd": contract.budget.usd,
                },
                "command": ["claude-code", session],
            },
        )
        state = reduce(history.read().records)
    iteration = int(state["loop"].get("iteration") or 0) + 1
    verdict, stop = verify_iteration(
        root,
        history,
        contract,
        iteration=iteration,
        turn=None,
        say=_to_stderr,
    )
    if stop is not None:
        history.append(
            "stop",
            {
                "reason": stop.reason,
                "exit_code": stop.exit_code,
                "decision": stop.decision,
                "message": stop.message,
            },
        )
        return None
    reasons = "\n".join(f"- {r['code']}: {r['message']}" for r in verdict["reasons"][:12])
    return {
        "decision": "block",
        "reason": f"The contract {contract.id} is not met yet (verified externally):\n"
        f"{reasons}\nKeep working; do not edit tests or configuration.",
    }


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def run_hook(event: str, root: Path, stdin_text: str, args: Sequence[str]) -> int:
    """Entry point of ``loop-contract hook run EVENT``."""
    if event == "pre-push":
        return pre_push(
            root,
            read_push_updates(stdin_text, os.environ),
            say=_to_stderr,
        )
    try:
        payload = json.loads(stdin_text or "{}")
    except ValueError:
        sys.stderr.write("loop-contract: hook input is not JSON\n")
        return 1
    handlers = {"claude-pre-tool-use": claude_pre_tool_use, "claude-stop": claude_stop}
    handler = handlers.get(event)
    if handler is None:
        sys.stderr.write(f"loop-contract: unknown hook event {event!r}\n")
        return 2
    result = handler(root, payload)
    if result is not None:
        sys.stdout.write(json.dumps(result) + "\n")
    return 0
