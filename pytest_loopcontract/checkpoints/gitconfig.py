"""The git aliases a repository already defines, so ``git x`` is judged as what it runs.

An agent can write ``git config alias.ship push`` in one tool call and ``git ship`` in the
next: the second command alone says nothing, only git's configuration does. This module asks
git itself (``git config --get-regexp``: the repository's ``.git/config``, the user's and the
system's files, includes and worktrees, exactly as git resolves them) and remembers the answer
until one of those files changes, so a scan per tool call costs a ``stat``, not a process.
The one I/O edge of the checkpoint scan; a folder that is not a repository has no aliases.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["repo_git_aliases"]

_CACHE: dict[str, tuple[tuple[int, ...], dict[str, str]]] = {}


def _stamp(files: list[Path]) -> tuple[int, ...]:
    """Modification times of the files git reads (0 for a missing one)."""
    out = []
    for f in files:
        try:
            out.append(f.stat().st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


def _config_files(root: Path) -> list[Path]:
    """The configuration files whose change can change an alias."""
    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    dotgit = root / ".git"
    own = dotgit / "config" if dotgit.is_dir() else dotgit
    return [own, home / ".gitconfig", xdg / "git" / "config"]


def repo_git_aliases(workspace: str | os.PathLike[str] | None) -> dict[str, str]:
    """``{name: value}`` of every ``alias.*`` git sees in ``workspace`` (empty when it is not a
    repository, or git cannot be asked: the inline and same-text aliases still count)."""
    if workspace is None:
        return {}
    key = os.fspath(workspace)
    if not os.path.exists(key + "/.git"):  # one stat: this runs for every scanned command
        return {}
    root = Path(key)
    stamp = _stamp(_config_files(root))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    aliases = _ask_git(root)
    _CACHE[key] = (stamp, aliases)
    return aliases


def _ask_git(root: Path) -> dict[str, str]:
    """``git config -z --get-regexp ^alias\\.`` parsed (NUL-separated: values may hold newlines)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "config", "-z", "--get-regexp", r"^alias\."],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    aliases: dict[str, str] = {}
    for entry in proc.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = entry.partition("\n")
        if key.lower().startswith("alias.") and len(key) > 6:
            aliases[key[6:].lower()] = value
    return aliases
