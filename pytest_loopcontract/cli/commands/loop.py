"""``loop-contract loop -- AGENT ...``: the governed loop (turn, verify, decide, repeat)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.loop.run import DEFAULT_POLL, run_loop

__all__ = ["loop", "strip_separator"]


def strip_separator(words: Sequence[str]) -> list[str]:
    """``words`` without the leading ``--`` that separates a wrapped command from our options."""
    command = list(words)
    return command[1:] if command and command[0] == "--" else command


def loop(
    agent: Sequence[str],
    *,
    resume: bool = False,
    turn_timeout: float | None = None,
    poll: float | None = None,
) -> int:
    """Run the loop; with no agent command, the contract's (or the resumed loop's) is used."""
    command = strip_separator(agent)
    return run_loop(
        repo_root(),
        command or None,
        resume=resume,
        turn_timeout=turn_timeout,
        poll=DEFAULT_POLL if poll is None else poll,
        say=_say,
    )


def _say(line: str) -> None:
    """One progress line, flushed: a loop is watched live (``| tee``, a log file, a test)."""
    print(line, flush=True)
