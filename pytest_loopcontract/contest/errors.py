"""The error a contest raises when it cannot start or cannot go on.

Why a module of its own: the engine, the result reader and the human gate all raise it, and
the CLI maps it to its exit code in one place; keeping it apart means none of them imports the
others just to name the error.
"""

from __future__ import annotations

__all__ = ["ContestError"]


class ContestError(RuntimeError):
    """A contest that cannot start or cannot go on; the message says why and what to do."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
