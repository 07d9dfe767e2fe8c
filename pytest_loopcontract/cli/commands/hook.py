"""``loop-contract hook install|run``: git and agent-CLI hooks that ask the verifier first."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.errors import CommandError, LoopContractError
from pytest_loopcontract.loop import agent_hooks

__all__ = ["EXIT_HOOK_BROKEN", "install", "run"]

# Exit 1, never 2, when a hook cannot run: for Claude Code, 2 means "block", and a broken setup
# must not trap the agent; for git, any non-zero still refuses the push.
EXIT_HOOK_BROKEN = 1


def install(target: str) -> int:
    """Install the ``pre-push`` git hook or the ``claude-code`` settings entries."""
    root = repo_root()
    try:
        if target == "pre-push":
            path = agent_hooks.install_pre_push(root)
        else:
            path = agent_hooks.install_claude_code(root)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    print(f"installed {target} hook: {path}")
    return 0


def run(target: str, rest: Sequence[str]) -> int:
    """Run one hook event (what the installed hooks call), reading the event from stdin."""
    root = repo_root()
    stdin_text = "" if sys.stdin.isatty() else sys.stdin.read()
    try:
        return agent_hooks.run_hook(target, root, stdin_text, list(rest))
    except LoopContractError as exc:
        raise CommandError(f"hook {target}: {exc}", EXIT_HOOK_BROKEN) from exc
