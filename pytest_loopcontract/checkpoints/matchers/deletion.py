"""The deletion matcher: recursive ``rm`` (and ``find -delete``/``-exec rm``) outside the workspace.

``rm`` needs ``-r``/``-R``/``--recursive`` to count (``-f`` is not required). Inside the
workspace is fine, including ``rm -rf build/``; the workspace itself (``rm -rf .``, ``rm -rf *``
at its root) matches but not ``always``; the filesystem root, the home directory, another user's
home and any parent of them or of the workspace match ``always``. A named child of a temp root
(``/tmp/build-1``, ``$TMPDIR/x``) is fine. ``$VAR/...`` with an unknown variable matches (empty
or unset, it becomes ``/...``); ``"$VAR"`` alone and ``${VAR:?}/x`` do not. After ``cd`` to an
unknown place (``cd "$X"``) relative targets are not judged. ``find PATH … -delete`` and ``find
PATH -exec rm -r {} +`` count as deleting inside PATH.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext
from pytest_loopcontract.checkpoints.shell.vocabulary import GLOB_RE, word_set

__all__ = ["rm_outside"]

_NO_WORKSPACE = "/\x00workspace"
_TEMP_ROOTS = ("/tmp", "/var/tmp", "/private/tmp", "/dev/shm")


_ALL_GLOB_RE = re.compile(r"[*?.\[\]!]*")
_LEADING_VAR_RE = re.compile(r"\$(?:\{(?P<b>[A-Za-z_]\w*)(?P<mod>[^}]*)\}|(?P<n>[A-Za-z_]\w*))")


def _rm_targets(argv: Sequence[str]) -> list[str] | None:
    """Operands of a recursive ``rm`` (or the start paths of ``find … -delete``); None if the
    command does not delete recursively."""
    if argv[0] == "find":
        if "-delete" not in argv:
            return None
        starts = []
        for a in argv[1:]:
            if a.startswith(("-", "(", "!")):
                break
            starts.append(a)
        # find deletes what matches under its start paths, not the start paths themselves
        return [posixpath.join(start, "{}") for start in starts or ["."]]
    recursive = False
    operands: list[str] = []
    options_done = False
    for a in argv[1:]:
        if not options_done and a == "--":
            options_done = True
        elif not options_done and len(a) > 1 and a[0] == "-":
            recursive = recursive or a == "--recursive" or (a[1] != "-" and ("r" in a or "R" in a))
        else:
            operands.append(a)
    return operands if recursive else None


def _deletion_reason(path: str, ctx: ScanContext) -> tuple[str, bool] | None:
    """Why recursively deleting the absolute, normalised ``path`` needs a person."""
    parts = path.split("/")
    for idx, part in enumerate(parts):
        if GLOB_RE.search(part):
            keep = idx if _ALL_GLOB_RE.fullmatch(part) else idx + 1
            path = "/".join(parts[:keep]) or "/"
            break
    ws = posixpath.normpath(ctx.workspace) if ctx.workspace else _NO_WORKSPACE
    home = posixpath.normpath(ctx.home) if ctx.home else ""
    if path == "/":
        return "the filesystem root", True
    if path == ws:
        return "the whole workspace", False
    if path.startswith(ws + "/"):
        return None
    if home and path == home:
        return "the home directory", True
    if home and home.startswith(path + "/"):
        return "a directory that contains the home directory", True
    if ws.startswith(path + "/"):
        return "a directory that contains the workspace", True
    if any(path.startswith(t + "/") for t in _TEMP_ROOTS):
        return None
    return "outside the workspace", False


def _expand_home(path: str, home: str) -> str | None:
    """``~``, ``~/x``, ``$HOME/x`` -> absolute; ``~user`` -> None (someone else's home)."""
    for prefix in ("${HOME}", "$HOME"):
        if path == prefix or path.startswith(prefix + "/"):
            return home + path[len(prefix) :]
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    if path.startswith("~"):
        return None
    return path


_TEMP_VARS = word_set("TMPDIR TMP TEMP RUNNER_TEMP")


def _rm_reason(operand: str, cwd: str | None, ctx: ScanContext) -> tuple[str, bool] | None:
    """Why ``rm -r operand`` needs a person and whether always; None when it stays inside."""
    if operand.startswith("$(pwd)"):
        operand = "." + operand[len("$(pwd)") :]
    m = _LEADING_VAR_RE.match(operand)
    if m is not None and not operand.startswith(("$HOME", "${HOME}")):
        var, rest = m.group("b") or m.group("n"), operand[m.end() :]
        guarded = (m.group("mod") or "").lstrip(":").startswith("?")  # ${X:?} stops if unset
        if var == "PWD":
            operand = "." + rest
        elif var in _TEMP_VARS or guarded or not rest.startswith("/"):
            return None
        else:
            return f"starts with ${var}: empty or unset, it deletes {rest}", False
    if operand.startswith(("$(", "`", "<(")) or "$(" in operand.split("/", 1)[0]:
        return None
    expanded = _expand_home(operand, ctx.home)
    if expanded is None:
        return "another user's home directory", True
    if not expanded.startswith("/"):
        if cwd is None:
            return None
        where = _expand_home(cwd, ctx.home)
        if where is None:
            return None
        expanded = posixpath.join(ctx.workspace or _NO_WORKSPACE, where, expanded)
    return _deletion_reason(posixpath.normpath(expanded), ctx)


def rm_outside(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """``rm -rf`` of a place outside the workspace, or of home, root or their parents."""
    targets = _rm_targets(cmd.argv)
    if not targets:
        return ()
    hits: list[Hit] = []
    for operand in targets:
        reason = _rm_reason(operand, cmd.cwd, ctx)
        if reason is not None:
            hits.append(Hit(cmd.text, f"{operand}: {reason[0]}", reason[1]))
    if not hits:
        return ()
    return (Hit(cmd.text, "; ".join(h.detail for h in hits), any(h.always for h in hits)),)
