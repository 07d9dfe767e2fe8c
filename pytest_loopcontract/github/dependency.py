"""The ``github`` extra: only ``loop-contract github ...`` needs PyGithub.

PyGithub brings requests, cryptography and PyNaCl, which no test environment that merely adds
the plugin should pay for, so it is installed with ``pytest-loopcontract[github]`` (the action
does). This module imports nothing from PyGithub itself; it turns a missing PyGithub (or a
missing piece of it) into an error that names the extra to install instead of a traceback.
"""

from __future__ import annotations

from pytest_loopcontract.errors import EXIT_USAGE, LoopContractError

__all__ = ["INSTALL_HINT", "GithubExtraMissing", "require_github_extra"]

INSTALL_HINT = "pip install 'pytest-loopcontract[github]'"


class GithubExtraMissing(LoopContractError):
    """``loop-contract github`` was run where the ``github`` extra is not installed."""

    exit_code = EXIT_USAGE
    label = "github extra missing"


def require_github_extra() -> None:
    """Import PyGithub now, so its absence is reported before any mode starts work."""
    try:
        import github  # noqa: F401  (PyGithub: the import is the check)
    except ModuleNotFoundError as exc:
        missing = exc.name or "github"
        raise GithubExtraMissing(
            f"`loop-contract github` needs PyGithub, and the module {missing!r} is not "
            f"installed in this environment; install the extra: {INSTALL_HINT}"
        ) from None
