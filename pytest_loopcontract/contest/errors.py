"""The error a contest raises when it cannot start or cannot go on.

The engine, the result reader and the human gate all raise it, and
the CLI maps it to its exit code in one place; keeping it apart means none of them imports the
others just to name the error.
"""

from __future__ import annotations

from pytest_loopcontract.errors import LoopContractError

__all__ = ["ContestError"]


class ContestError(LoopContractError):
    """A contest that cannot start or cannot go on; the message says why and what to do."""
