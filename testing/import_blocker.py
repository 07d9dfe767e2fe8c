"""Run a Python entry point in a process where some top-level modules cannot be imported.

The prelude installs a meta-path finder first on ``sys.meta_path``: every attempt to import a
blocked name (or a submodule of it) is appended to a record file, then fails as a missing module
would. The record catches an attempt even where the caller swallowed the ImportError, so "never
imported" is checked, not merely "did not crash".

``loop-contract`` re-executes a clean interpreter (``-I -S``), which would drop the finder, so
:func:`launcher_command` starts the clean process directly, with the path the launcher itself
computes (:func:`pytest_loopcontract.launcher.clean_path`), and calls its ``run_clean``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["blocked_attempts", "launcher_command", "python_command"]

_PRELUDE = """\
import sys as _sys


class _Blocker:
    def __init__(self, names, record):
        self.names, self.record = frozenset(names), record

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            with open(self.record, "a", encoding="utf-8") as fh:
                fh.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


_sys.meta_path.insert(0, _Blocker({names!r}, {record!r}))
"""


def _prelude(blocked: Sequence[str], record: Path) -> str:
    return _PRELUDE.format(names=sorted(blocked), record=str(record))


def python_command(blocked: Sequence[str], record: Path, body: str) -> list[str]:
    """``python -c`` running ``body`` after the blocker is in place (site processing kept)."""
    return [sys.executable, "-c", _prelude(blocked, record) + body]


def launcher_command(
    blocked: Sequence[str], record: Path, repo: Path, args: Sequence[str]
) -> list[str]:
    """``loop-contract ARGS`` as the launcher's clean process runs it, with the blocker."""
    from pytest_loopcontract.launcher import clean_path

    body = (
        f"_sys.path[:] = {clean_path(str(repo.resolve()))!r}\n"
        "from pytest_loopcontract.launcher import run_clean\n"
        f"_sys.argv = ['loop-contract', *{list(args)!r}]\n"
        "_sys.exit(run_clean({'path': [], 'contaminated': []}))\n"
    )
    return [sys.executable, "-I", "-S", "-c", _prelude(blocked, record) + body]


def blocked_attempts(record: Path) -> list[str]:
    """The blocked imports that were attempted, in order."""
    if not record.exists():
        return []
    return [line for line in record.read_text("utf-8").splitlines() if line]
