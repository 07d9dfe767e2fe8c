"""Which lines a change added: the new-side line numbers in ``git diff -U0`` output. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["added_lines_from_diff"]


_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def added_lines_from_diff(diff_text: str) -> dict[str, frozenset[int]]:
    """New-side numbers of added lines per file, from ``git diff -U0 --no-renames`` output.

    Only files with at least one added line appear: deleted files, binary files and pure
    deletions have no new line that tests could cover. Hunk bodies are consumed by their line
    counts, so an added line that itself starts with ``++ `` is never mistaken for a header.
    The diff must use git's default ``a/`` ``b/`` prefixes. Raises ``ValueError`` on a
    malformed hunk or quoted path.
    """
    added: dict[str, set[int]] = {}
    lines = iter(diff_text.split("\n"))
    path: str | None = None
    for line in lines:
        if line.startswith("diff "):
            path = None
        elif line.startswith("+++ "):
            path = _new_side_path(line[4:])
        elif line.startswith("@@ "):
            numbers = _hunk_added_lines(line, lines)
            if path is not None and numbers:
                added.setdefault(path, set()).update(numbers)
    return {name: frozenset(numbers) for name, numbers in added.items()}


def _new_side_path(spec: str) -> str | None:
    """The repo path on a ``+++`` line; ``None`` for ``/dev/null`` (a deleted file)."""
    spec = spec.rstrip("\r")
    if spec.endswith("\t"):  # git appends a tab to names that contain a space
        spec = spec[:-1]
    name = _unquote_c_style(spec) if spec.startswith('"') else spec
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith("b/") else name


def _unquote_c_style(quoted: str) -> str:
    """Undo git's quoting of unusual path names: ``"b/caf\\303\\251.py"`` -> ``b/café.py``."""
    if len(quoted) < 2 or not quoted.endswith('"'):
        raise ValueError(f"malformed quoted path: {quoted!r}")
    body = quoted[1:-1]
    out = bytearray()
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        escape = body[index + 1 : index + 4]
        if escape[:1] in _C_ESCAPES:
            out.append(_C_ESCAPES[escape[:1]])
            index += 2
        elif len(escape) == 3 and all(c in "01234567" for c in escape):
            out.append(int(escape, 8))
            index += 4
        else:
            raise ValueError(f"malformed escape in quoted path: {quoted!r}")
    return out.decode("utf-8", "surrogateescape")


def _hunk_added_lines(header: str, lines: Iterator[str]) -> list[int]:
    """Consume one hunk body from ``lines``; return the new-side numbers of its ``+`` lines."""
    match = _HUNK_HEADER.match(header)
    if match is None:
        raise ValueError(f"malformed hunk header: {header!r}")
    old_left = 1 if match[2] is None else int(match[2])
    new_line = int(match[3])
    new_left = 1 if match[4] is None else int(match[4])
    numbers: list[int] = []
    while old_left > 0 or new_left > 0:
        body = next(lines, None)
        if body is None:
            raise ValueError(f"diff ends inside the hunk {header!r}")
        tag = body[:1]
        if tag == "+":
            numbers.append(new_line)
            new_line += 1
            new_left -= 1
        elif tag == "-":
            old_left -= 1
        elif tag == " ":
            new_line += 1
            new_left -= 1
            old_left -= 1
        elif tag != "\\":  # "\ No newline at end of file" belongs to the line before it
            raise ValueError(f"unexpected line in the hunk {header!r}: {body!r}")
    return numbers
