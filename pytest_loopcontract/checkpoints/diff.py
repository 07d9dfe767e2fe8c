"""A unified diff (``git diff`` output) read into files and their added lines.

Only what the checkpoints need: each file's new path (git's C-style quoting undone, renames and
copies followed), whether it is deleted, and its added lines with their numbers in the new
file. Hunk headers are trusted for line counts, so a ``+++`` inside a hunk is content. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FileDiff", "parse_diff"]


@dataclass
class FileDiff:
    """One file of a diff: its new path, whether it is deleted, its added lines."""

    path: str
    deleted: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)


_HUNK_RE = re.compile(r"@@+ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_QUOTE_RE = re.compile(r"\\([0-7]{3}|.)")


def _unquote_git_path(path: str) -> str:
    """Git quotes unusual paths C-style ("a/caf\\303\\251"); undo that."""
    if not (len(path) >= 2 and path[0] == path[-1] == '"'):
        return path
    simple = {
        "n": b"\n",
        "t": b"\t",
        "\\": b"\\",
        '"': b'"',
        "a": b"\a",
        "b": b"\b",
        "f": b"\f",
        "r": b"\r",
        "v": b"\v",
    }
    out = bytearray()
    body = path[1:-1]
    i = 0
    for m in _GIT_QUOTE_RE.finditer(body):
        out += body[i : m.start()].encode()
        esc = m.group(1)
        out += bytes([int(esc, 8) & 0xFF]) if esc[0].isdigit() else simple.get(esc, esc.encode())
        i = m.end()
    out += body[i:].encode()
    return out.decode("utf-8", "replace")


def _strip_ab(path: str) -> str:
    """A path from a ---/+++ line without its a/ or b/ prefix, quoting undone."""
    path = _unquote_git_path(path.split("\t", 1)[0].rstrip())
    return path[2:] if path.startswith(("a/", "b/")) else path


def _header_path(line: str) -> str:
    """The path a ``diff --git a/X b/X`` header names (spaces in X allowed)."""
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        tail = rest[end + 2 :] if end > 0 else rest
        return _strip_ab(tail)
    if rest.startswith("a/") and (len(rest) - 5) % 2 == 0:
        half = (len(rest) - 5) // 2
        if rest[2 + half : 5 + half] == " b/":
            return rest[5 + half :]
    idx = rest.find(" b/")
    return rest[idx + 3 :] if idx >= 0 else _strip_ab(rest)


def parse_diff(text: str) -> list[FileDiff]:
    """The files of a unified diff with their added lines, in order (never raises on junk)."""
    files: list[FileDiff] = []
    cur: FileDiff | None = None
    old_left = new_left = 0
    new_line = 0
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if cur is not None and (old_left > 0 or new_left > 0):
            tag = line[:1]
            if tag == "+":
                cur.added.append((new_line, line[1:]))
                new_line += 1
                new_left -= 1
                continue
            if tag == "-":
                old_left -= 1
                continue
            if tag in (" ", ""):
                new_line += 1
                old_left -= 1
                new_left -= 1
                continue
            if tag == "\\":
                continue
            old_left = new_left = 0
        if line.startswith("diff --git "):
            cur = FileDiff(_header_path(line))
            files.append(cur)
        elif line.startswith("--- ") and (cur is None or cur.added):
            cur = FileDiff(_strip_ab(line[4:]))
            files.append(cur)
        elif cur is None:
            continue
        elif line.startswith("+++ "):
            target = line[4:].split("\t", 1)[0].rstrip()
            if target == "/dev/null":
                cur.deleted = True
            else:
                cur.path = _strip_ab(target)
        elif line.startswith("deleted file mode"):
            cur.deleted = True
        elif line.startswith(("rename to ", "copy to ")):
            cur.path = _unquote_git_path(line.split(" to ", 1)[1])
        elif line.startswith("@@"):
            m = _HUNK_RE.match(line)
            if m is not None:
                old_left = int(m.group(1)) if m.group(1) is not None else 1
                new_left = int(m.group(3)) if m.group(3) is not None else 1
                new_line = int(m.group(2))
    return files
