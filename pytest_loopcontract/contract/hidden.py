"""What ``dod[].hidden`` says: hidden acceptance test files and where each goes in the tree.

A hidden test is named either by a file outside the repository (``/srv/hidden/test_x.py``,
``../hidden/test_x.py``, ``~/hidden/test_x.py``, ``$HIDDEN/test_x.py``) or by a git object the
agent's work tree does not hold (``refs/hidden/acceptance:tests/test_x.py``). Each is copied
into the scratch tree only for the verifier's own runs, at ``to``: by default the ref's path,
or for a file its name beside the item's first visible test file. This module is pure (text
in, shapes and problems out), so the contract loader and its schema checks can share it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, NamedTuple

__all__ = ["HiddenTest", "hidden_problems", "parse_hidden", "source_kind"]

_PATH_STARTS = ("/", ".", "~", "$")


class HiddenTest(NamedTuple):
    """One hidden test file: ``source`` as written, its ``kind`` (``path`` or ``ref``), and
    ``to``, the path it takes in the scratch tree."""

    source: str
    kind: str
    to: str


def source_kind(source: str) -> str:
    """``ref`` for ``REF:PATH`` (a colon, not starting like a path), else ``path``."""
    if ":" in source and not source.startswith(_PATH_STARTS):
        ref, _, inner = source.partition(":")
        if ref and inner:
            return "ref"
    return "path"


def _default_to(source: str, kind: str, visible: Sequence[str]) -> str:
    if kind == "ref":
        return source.partition(":")[2].strip("/")
    name = PurePosixPath(source.replace("\\", "/")).name
    for selector in visible:
        folder = PurePosixPath(selector.split("::", 1)[0]).parent
        if not any(ch in str(folder) for ch in "*?["):
            return str(folder / name) if str(folder) != "." else name
    return name


def parse_hidden(raw: Any, visible: Sequence[str]) -> tuple[HiddenTest, ...]:
    """The hidden tests of one DoD item (already schema-checked: strings or ``{from, to}``)."""
    out = []
    for entry in raw or ():
        if isinstance(entry, Mapping):
            source, to = str(entry["from"]), entry.get("to")
        else:
            source, to = str(entry), None
        kind = source_kind(source)
        out.append(HiddenTest(source, kind, str(to) if to else _default_to(source, kind, visible)))
    return tuple(out)


def _visible(item: Mapping[str, Any]) -> list[str]:
    tests = item.get("tests") or []
    return [str(t) for t in tests] if isinstance(tests, list) else []


def _destination_problem(to: str) -> str:
    path = PurePosixPath(to)
    if not to or to.startswith("/") or path.is_absolute():
        return "the destination must be a path relative to the repository root"
    if ".." in path.parts:
        return "the destination must stay inside the tree (no '..')"
    if path.parts[0] == ".loop-contract":
        return "the destination must not be in the verifier's .loop-contract folder"
    if path.suffix != ".py":
        return f"the destination {to!r} must be a Python test file (ending in .py)"
    return ""


def hidden_problems(doc: Mapping[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """(field path, message) for hidden entries a schema cannot judge: a destination outside
    the tree or not a Python file, and two entries sent to the same place."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    seen: dict[str, tuple[str | int, ...]] = {}
    for i, item in enumerate(doc.get("dod") or ()):
        if not isinstance(item, Mapping):
            continue
        for j, test in enumerate(parse_hidden(item.get("hidden"), _visible(item))):
            path: tuple[str | int, ...] = ("dod", i, "hidden", j)
            why = _destination_problem(test.to)
            if why:
                problems.append((path, why))
            elif test.to in seen:
                first = f"dod[{seen[test.to][1]}].hidden[{seen[test.to][3]}]"
                problems.append((path, f"two hidden tests go to {test.to!r} (also {first})"))
            else:
                seen[test.to] = path
    return problems
