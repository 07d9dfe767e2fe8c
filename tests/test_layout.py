"""The package's layout keeps its promises: no import cycles, pure cores without I/O, the
launcher and the in-test-process code free of third-party imports.

Read from the source's syntax trees (module-level imports only; imports inside functions and
under ``TYPE_CHECKING`` are deliberate late binding and cannot form a start-up cycle), so the
test sees the graph a reader sees and fails with the cycle spelled out."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.repos import ROOT

PACKAGE = ROOT / "pytest_loopcontract"
NAME = "pytest_loopcontract"

# Pure cores: the rules that decide, readable and testable without files, processes or clocks.
PURE = [
    "pytest_loopcontract.verifier.gates",
    "pytest_loopcontract.verifier.baseline_messages",
    "pytest_loopcontract.contest.matrix",
    "pytest_loopcontract.contest.matrix_model",
    "pytest_loopcontract.contest.bracket",
    "pytest_loopcontract.loop.progress",
    "pytest_loopcontract.reason",
    "pytest_loopcontract.words",
]
IO_MODULES = {
    "os", "subprocess", "shutil", "socket", "sqlite3", "tempfile", "pathlib", "io", "time",
    "threading", "multiprocessing", "urllib", "http", "requests", "github", "signal", "fcntl",
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(path: Path, name: str) -> Iterator[str]:
    """Absolute names imported when the module is first executed."""
    tree = ast.parse(path.read_text("utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and not _is_type_checking(node):
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def package_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        if ".inner" in name:  # copied into the test process under another name; stdlib only
            continue
        targets = {t for t in top_level_imports(path, name) if t in known and t != name}
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as a path that ends where it starts, or [] when there is none."""
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        trail.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        trail.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_find_cycle_sees_a_cycle_and_a_clean_graph() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_package_has_no_import_cycles() -> None:
    cycle = find_cycle(package_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("core", PURE)
def test_pure_cores_import_nothing_with_io(core: str) -> None:
    path = modules()[core]
    imported = set(top_level_imports(path, core))
    io = sorted(m for m in imported if m.split(".")[0] in IO_MODULES)
    assert not io, f"{core} imports {io}"
    ours = sorted(m for m in imported if m.startswith(NAME) and m in modules())
    assert all(m in PURE or m in {"pytest_loopcontract.verdict"} for m in ours), ours


@pytest.mark.parametrize("name", ["pytest_loopcontract.launcher", "pytest_loopcontract"])
def test_the_launcher_imports_only_the_standard_library(name: str) -> None:
    """The launcher runs before the clean re-exec, with the candidate's tree possibly on the
    path: any third-party import there could load the candidate's copy of that package."""
    path = modules()[name]
    stdlib = {*sys.stdlib_module_names, "__future__"}
    third_party = sorted(m for m in top_level_imports(path, name) if m.split(".")[0] not in stdlib)
    assert not third_party, third_party


def test_the_inner_package_imports_only_the_standard_library_and_pytest() -> None:
    inner = PACKAGE / "verifier" / "inner"
    for path in sorted(inner.glob("*.py")):
        name = module_name(path)
        for imported in top_level_imports(path, name):
            top = imported.split(".")[0]
            allowed = top in sys.stdlib_module_names or top in {"__future__", "pytest", "_pytest"}
            own = imported.startswith(f"{NAME}.verifier.inner")
            assert allowed or own, f"{name} imports {imported}"
