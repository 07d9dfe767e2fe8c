"""``loop-contract hook install|run``: git and agent-CLI hooks that ask the verifier first."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.errors import CommandError, LoopContractError
from pytest_loopcontract.loop import agent_hooks, cli_hooks

__all__ = ["EXIT_HOOK_BROKEN", "install", "run"]

# A git hook that cannot run exits 1: any non-zero refuses the push. An agent CLI's hooks never
# exit 1 (the CLI would go ahead): every failure there is exit 2, see cli_hooks.
EXIT_HOOK_BROKEN = 1


def install(target: str) -> int:
    """Install the ``pre-push`` git hook or an agent CLI's hooks (claude-code, codex, gemini)."""
    root = repo_root()
    notes: list[str] = []
    try:
        if target == "pre-push":
            path = agent_hooks.install_pre_push(root)
        else:
            path, notes = cli_hooks.install_agent_hooks(root, target)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    print(f"installed {target} hook: {path}")
    for note in notes:
        print(f"  {note}")
    print("  its digest is recorded; a later change to it waits for a person (checkpoint)")
    return 0


def run(target: str, rest: Sequence[str]) -> int:
    """Run one hook event (what the installed hooks call), reading the event from stdin."""
    stdin_text = "" if sys.stdin.isatty() else sys.stdin.read()
    if target in cli_hooks.EVENTS:
        try:
            root = repo_root()
        except LoopContractError as exc:
            answer = cli_hooks.HookAnswer(
                2, stderr=f"loop-contract: {exc}; blocked (the hook fails closed)\n"
            )
        else:
            answer = cli_hooks.run_cli_hook(target, root, stdin_text)
        cli_hooks.emit(answer)
        return answer.exit_code
    root = repo_root()
    try:
        return agent_hooks.run_hook(target, root, stdin_text, list(rest))
    except LoopContractError as exc:
        raise CommandError(f"hook {target}: {exc}", EXIT_HOOK_BROKEN) from exc
