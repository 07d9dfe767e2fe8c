"""Is a valid contract ready to be adopted? What ``loop-contract check`` asks beyond the schema.

A draft from ``loop-contract init`` loads (an empty goal, ``dod: []``, items with ``tests: []``
are valid YAML a person fills in), so loading cannot refuse them. ``check`` is the question
"is this contract done?", and a contract is not done when:

- its goal is empty (the goal is what the agent's prompt and every judge read first);
- it is in ``fix`` mode with no DoD item (nothing has to change from failing to passing);
- a DoD item has no tests, no hidden tests, and no test file marks a test with
  ``@pytest.mark.dod("<id>")`` (the item can never be met, or is met by nothing).

Each problem is a :class:`ContractError` at the field's line, worded like the schema's errors.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.contract.schema import error_at
from pytest_loopcontract.contract.yaml_reader import Places, decode, parse
from pytest_loopcontract.errors import ContractError

__all__ = ["marked_ids", "readiness_error"]

_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox"})


def readiness_error(contract: Contract, data: bytes, tree: Path) -> ContractError | None:
    """The first problem (in file order) that keeps ``contract`` from being adopted, or None.

    ``data`` are the contract's bytes (for the lines), ``tree`` the folder whose Python files
    are searched for ``dod`` markers (the repository, or the contract's folder)."""
    filename = str(contract.path)
    problems = list(_problems(contract.raw, contract.mode, tree))
    if not problems:
        return None
    located = [_locate(data, filename, path, field, message) for path, field, message in problems]
    return min(located, key=lambda e: (e.line or 0, e.column or 0))


def _problems(
    doc: Mapping[str, Any], mode: str, tree: Path
) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """(where the line is, the field named, message) for each problem."""
    if not str(doc.get("goal") or "").strip():
        where: tuple[str | int, ...] = ("goal",) if "goal" in doc else ("id",)
        yield where, "goal", "empty: one sentence saying the outcome (not the method)"
    items = list(doc.get("dod") or ())
    if mode == "fix" and not items:
        where = ("dod",) if "dod" in doc else ("mode",) if "mode" in doc else ("id",)
        yield (
            where,
            "dod",
            "fix mode needs at least one DoD item: tests that fail before the change and "
            "pass after it",
        )
    bare = [(i, str(item["id"])) for i, item in enumerate(items) if not _has_tests(item)]
    if not bare:
        return
    marked = marked_ids(_python_files(tree))
    for index, item_id in bare:
        if item_id in marked:
            continue
        key = "tests" if "tests" in items[index] else "id"
        yield (
            ("dod", index, key),
            f"dod[{index}].tests",
            f"DoD item '{item_id}' has no tests: list node ids or globs under tests, or mark "
            f'a test with @pytest.mark.dod("{item_id}")',
        )


def _has_tests(item: Mapping[str, Any]) -> bool:
    return bool(item.get("tests")) or bool(item.get("hidden"))


def _locate(
    data: bytes, filename: str, path: tuple[str | int, ...], field: str, message: str
) -> ContractError:
    """The error at ``path``'s line, naming ``field`` (which may not exist in the file)."""
    try:
        _, nodes = parse(decode(data, filename), filename)
        mark = Places(nodes).value_mark(path)
    except (ContractError, KeyError):
        return error_at(data, filename, path, message)
    return ContractError(
        message, file=filename, line=mark.line + 1, column=mark.column + 1, field_path=field
    )


def marked_ids(files: Iterable[Path]) -> set[str]:
    """The DoD ids that ``dod(...)`` calls in ``files`` name (``@pytest.mark.dod("a", "b")``,
    ``mark.dod("a")``): read from the syntax tree, so a comment or a string that only mentions
    the marker does not count. A marker built from a variable is not seen."""
    ids: set[str] = set()
    for path in files:
        try:
            text = path.read_text("utf-8", errors="replace")
            tree = ast.parse(text, str(path)) if "dod(" in text else None
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and _called_name(node.func) == "dod":
                ids.update(
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                )
    return ids


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _python_files(tree: Path) -> list[Path]:
    """The Python files of ``tree``: git's list (tracked and untracked, not ignored) inside a
    repository, else a walk that skips virtual environments and caches."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            cwd=tree,
            capture_output=True,
            check=False,
        )
    except OSError:
        proc = None
    if proc is not None and proc.returncode == 0:
        names = proc.stdout.decode("utf-8", "replace").split("\0")
        return [tree / name for name in names if name]
    return [p for p in tree.rglob("*.py") if not _SKIP_DIRS.intersection(p.relative_to(tree).parts)]
