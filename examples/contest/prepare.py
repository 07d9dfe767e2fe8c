"""Copy the contest demo project into a fresh git repository, ready for ``loop-contract``.

Usage: ``python examples/contest/prepare.py [DEST]`` prints the repository's path (default: a
new temporary directory). As a module: ``make_repo(dest) -> Path``.

The project's contract names its seat and judge programs through two tokens, because a seat's
command runs with its worktree as the working directory and a judge's in an empty temporary
directory, so no path relative to the project would work for both:

* ``@CONTEST@`` becomes the absolute path of this folder (``examples/contest``), where
  ``seats/seat.py`` and ``judges/judge.py`` live, outside the repository the seats change;
* ``@PYTHON@`` becomes the interpreter running this script (``sys.executable``).

The substitution is textual, on single-quoted YAML scalars, and then committed: the contract
the baseline pins is the one with absolute paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["CONTEST_DIR", "PROJECT", "TOKENS", "make_repo", "substitute"]

CONTEST_DIR = Path(__file__).resolve().parent
PROJECT = CONTEST_DIR / "project"
TOKENS = ("@CONTEST@", "@PYTHON@")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "contest demo",
    "GIT_AUTHOR_EMAIL": "demo@example.invalid",
    "GIT_COMMITTER_NAME": "contest demo",
    "GIT_COMMITTER_EMAIL": "demo@example.invalid",
}


def _single_quoted(value: str) -> str:
    """``value`` as it must appear inside a single-quoted YAML scalar."""
    if "\n" in value:
        raise ValueError(f"a path with a newline cannot go into the contract: {value!r}")
    return value.replace("'", "''")


def substitute(text: str, *, contest_dir: Path = CONTEST_DIR, python: str = sys.executable) -> str:
    """The contract text with ``@CONTEST@`` and ``@PYTHON@`` replaced by absolute paths."""
    text = text.replace("@CONTEST@", _single_quoted(contest_dir.resolve().as_posix()))
    return text.replace("@PYTHON@", _single_quoted(python))


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV}
    )


def make_repo(dest: Path, *, python: str = sys.executable) -> Path:
    """Copy the project to ``dest`` (which must not exist or be empty), fill in the tokens,
    and commit it on ``main`` as the base commit. Returns ``dest``."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    shutil.copytree(
        PROJECT,
        dest,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".loop-contract"),
    )
    contract = dest / "loopcontract.yml"
    contract.write_text(substitute(contract.read_text("utf-8"), python=python), "utf-8")
    (dest / ".gitignore").write_text(".loop-contract/\n__pycache__/\n.pytest_cache/\n", "utf-8")
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "rolling: RollingMean with failing acceptance tests")
    return dest


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: prepare.py [DEST]", file=sys.stderr)
        return 2
    dest = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="loopcontract-contest-"))
    print(make_repo(dest / "rolling-mean" if not argv else dest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
