"""The one root of every error the package raises, and the exit code each one ends the CLI with.

A caller that only wants "did loop-contract refuse?" catches :class:`LoopContractError`; the
command line maps it to a message and an exit code in one place
(:mod:`pytest_loopcontract.cli.error_handler`), so a new error needs no new ``except`` there.
``exit_code`` is a class default that an instance may override (a damaged baseline is a
:class:`~pytest_loopcontract.workspace.WorkspaceError` that exits 27, not 2); the
codes themselves are the verdict's (:mod:`pytest_loopcontract.verdict`) plus 2, the usage code
pytest also uses.

:class:`ContractError` lives here rather than beside the contract model because both the model
and the schema raise it: with it in either one, each imported the other.
"""

from __future__ import annotations

from typing import ClassVar

from pytest_loopcontract.verdict import EXIT_CONTRACT_INVALID

__all__ = ["EXIT_USAGE", "CommandError", "ContractError", "LoopContractError"]

EXIT_USAGE = 2


class LoopContractError(Exception):
    """Something loop-contract refuses to do; the message says why and what to do about it.

    ``label`` (empty by default) is what the command line prints before the message, for the
    families whose messages alone would not say what failed ("contract invalid: ...").
    """

    exit_code: int = EXIT_USAGE
    label: ClassVar[str] = ""

    def __init__(self, message: str = "", exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class CommandError(LoopContractError):
    """A sub-command cannot do what its arguments ask (a file missing, a value malformed).

    Commands raise it instead of printing, so every refusal reaches the user through the one
    handler; ``exit_code`` says what the command exits with (2 unless given).
    """


class ContractError(LoopContractError):
    """A contract that cannot be used; the message names where (file:line:column) and what."""

    exit_code = EXIT_CONTRACT_INVALID
    label = "contract invalid"

    def __init__(
        self,
        message: str,
        *,
        file: str,
        line: int | None = None,
        column: int | None = None,
        field_path: str = "",
    ) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.field_path = field_path
        self.message = message
        where = file
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        prefix = f"{field_path}: " if field_path else ""
        super().__init__(f"{where}: {prefix}{message}")
