"""The privilege matcher: ``sudo``, ``doas``, ``su``, ``pkexec`` and ``run0``.

The normaliser records the elevation as a command of its own (and checks the command it runs
too), so this matcher only has to name it.
"""

from __future__ import annotations

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit

__all__ = ["sudo"]


def sudo(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """Every elevation the normaliser recorded (the pattern runs only for elevators)."""
    return single_hit(cmd.text, cmd.program)
