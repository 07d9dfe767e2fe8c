"""The one place where an error becomes what the user sees: a message and an exit code.

Commands raise :class:`~pytest_loopcontract.errors.LoopContractError` (or let one through from
the modules they call) instead of printing and returning; this turns it into one stderr line,
prefixed by the error's ``label`` when it has one, and the exit code the error carries.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

from pytest_loopcontract.cli.output import err
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.processes import Stopped

__all__ = ["EXIT_INTERRUPTED", "message_of", "run_command"]

EXIT_INTERRUPTED = 130  # what a shell reports for a process ended by SIGINT


def message_of(exc: LoopContractError) -> str:
    """The line shown for ``exc``: ``label: message``, or the message alone."""
    return f"{exc.label}: {exc}" if exc.label else str(exc)


def run_command(call: Callable[[], int]) -> int:
    """Run one command; its exit code, or the code of the error (or interrupt) that ended it."""
    try:
        return call()
    except LoopContractError as exc:
        err(message_of(exc))
        return exc.exit_code
    except Stopped as exc:
        err("interrupted" if exc.signum == signal.SIGINT else f"stopped by {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
