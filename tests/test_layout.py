"""The package's layout keeps its promises: no import cycles, pure cores without I/O, the
launcher and the in-test-process code free of third-party imports, and ``tests/`` mirroring the
package so each module's tests are found by its name.

Read from the source's syntax trees (module-level imports only; imports inside functions and
under ``TYPE_CHECKING`` are deliberate late binding and cannot form a start-up cycle), so the
test sees the graph a reader sees and fails with the cycle spelled out."""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from testing.repos import ROOT

PACKAGE = ROOT / "pytest_loopcontract"
NAME = "pytest_loopcontract"
TESTS = ROOT / "tests"
TESTING = ROOT / "testing"

# Suites whose subject is the whole product, not one module: they keep their names and are
# listed here, once, with the reason. Every other test file is named after its module.
CROSS_CUTTING: tuple[tuple[str, str], ...] = (
    ("test_act_e2e.py", "the real workflow files run end to end by act against the fake GitHub"),
    ("test_docs.py", "the documentation site (docs/, mkdocs.yml: no module docs) and the README"),
    ("test_layout.py", "the package's shape: import graph, pure cores, and this naming rule"),
    ("test_public_api.py", "the package's public face (__init__, __all__, version metadata)"),
    ("test_wheel.py", "the built wheel installed in a fresh venv, as a user installs it"),
    ("test_workflows.py", "the .github workflows and the composite action, read as data"),
    ("verifier/test_awkward_suites.py", "real-world suite shapes through baseline and verify"),
    ("verifier/tamper/test_tampering.py", "examples/candidates.py's cheats via the launcher"),
)
LISTED = frozenset(name for name, _reason in CROSS_CUTTING)

# Pure cores: the rules that decide, readable and testable without files, processes or clocks.
PURE = [
    "pytest_loopcontract.verifier.gates",
    "pytest_loopcontract.verifier.baseline.messages",
    "pytest_loopcontract.contest.matrix",
    "pytest_loopcontract.contest.matrix_model",
    "pytest_loopcontract.contest.bracket",
    "pytest_loopcontract.loop.no_progress",
    "pytest_loopcontract.reason",
    "pytest_loopcontract.plural",
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


# The package's layers, lowest first: a module imports only from its own layer or below, at
# run time, wherever the import sits (module level or inside a function; only imports under
# TYPE_CHECKING, which never run, may name a type from above). README's development section
# draws the same picture.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundations", frozenset({
        "errors", "fsio", "locks", "chain", "statedir", "processes", "reason", "idsets",
        "idtext", "plural", "verdict_outcomes", "verdict", "workspace", "history", "hooks",
        "hookspecs",
    })),
    ("contract", frozenset({"contract"})),
    ("checkpoints", frozenset({"checkpoints"})),
    ("verifier", frozenset({"verifier"})),
    ("loop", frozenset({"loop"})),
    ("contest", frozenset({"contest"})),
    ("github", frozenset({"github"})),
    ("cli", frozenset({"cli"})),
    ("entry points", frozenset({"", "__main__", "launcher", "plugin"})),
)  # fmt: skip
# Imports that point up, each with why; the test fails on an entry no import needs any more.
UPWARD: dict[tuple[str, str], str] = {
    ("pytest_loopcontract.verifier.review", "contest"): (
        "the contract's judged review runs one of the contest's seats as its reviewer, "
        "imported when a contract asks for a review"
    ),
}


def layer_part(module: str) -> str:
    """The top-level part a module belongs to: its package, or its own name at the top."""
    return module.split(".")[1] if "." in module else ""


def layer_of(module: str) -> int:
    part = layer_part(module)
    for rank, (_name, parts) in enumerate(LAYERS):
        if part in parts:
            return rank
    raise AssertionError(f"{module}: its part {part!r} has no layer in LAYERS (test_layout.py)")


def runtime_imports(path: Path, name: str) -> Iterator[str]:
    """Every package module ``name`` imports when its code runs, however deep the import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    known = modules()
    pending: list[ast.AST] = [ast.parse(path.read_text("utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (n for n in names if n in known and n != NAME)


def upward_imports() -> dict[tuple[str, str], str]:
    """(importer, imported part) for every import from a higher layer, with one example."""
    found: dict[tuple[str, str], str] = {}
    for name, path in modules().items():
        for target in runtime_imports(path, name):
            if layer_of(target) > layer_of(name):
                found.setdefault((name, layer_part(target)), target)
    return found


def test_layer_rule_sees_an_upward_import_and_allows_a_downward_one() -> None:
    assert layer_of("pytest_loopcontract.verdict") < layer_of("pytest_loopcontract.contract.model")
    assert layer_of("pytest_loopcontract.loop.run") > layer_of("pytest_loopcontract.verifier.x")
    assert layer_of("pytest_loopcontract.plugin") == len(LAYERS) - 1
    with pytest.raises(AssertionError, match="no layer"):
        layer_of("pytest_loopcontract.unplaced")


def test_every_import_points_down_the_layers() -> None:
    found = upward_imports()
    unexplained = sorted(f"{a} imports {b} from above" for (a, p), b in found.items()
                         if (a, p) not in UPWARD)  # fmt: skip
    assert not unexplained, "\n".join(unexplained)
    stale = sorted(f"{a} -> {p}" for a, p in UPWARD if (a, p) not in found)
    assert not stale, f"UPWARD lists imports that no longer exist: {stale}"


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


def mirrored_folder(test_file: Path) -> Path:
    """The folder whose modules ``test_file`` tests: ``tests/x/y/`` mirrors
    ``pytest_loopcontract/x/y/``, and ``tests/testing/...`` mirrors the ``testing/`` package."""
    folders = test_file.relative_to(TESTS).parent.parts
    if folders[:1] == ("testing",):
        return TESTING.joinpath(*folders[1:])
    return PACKAGE.joinpath(*folders)


def _names_a_module(folder: Path, module: str) -> bool:
    """``module`` is a module or package in ``folder``, or the package ``folder`` itself."""
    if (folder / f"{module}.py").is_file() or (folder / module / "__init__.py").is_file():
        return True
    return module == folder.name and (folder / "__init__.py").is_file()


def naming_problem(test_file: Path, listed: Collection[str] = LISTED) -> str | None:
    """Why ``test_file`` breaks the naming rule, or None when it keeps it.

    The rule: ``test_<module>.py`` or ``test_<module>_<topic>.py`` for a module (``<module>.py``)
    or package (``<module>/__init__.py``) in the mirrored folder; a package's tests as a whole sit
    in its own folder under its name (``tests/loop/test_loop.py``); or a listed cross-cutting suite.
    """
    relative = test_file.relative_to(TESTS).as_posix()
    if relative in listed:
        return None
    folder = mirrored_folder(test_file)
    words = test_file.stem.removeprefix("test_").split("_")
    if all(words) and any(
        _names_a_module(folder, "_".join(words[:end])) for end in range(1, len(words) + 1)
    ):
        return None
    shown = folder.relative_to(ROOT).as_posix()
    return (
        f"tests/{relative}: a test file is named test_<module>.py or test_<module>_<topic>.py "
        f"after a module or package in {shown}/ (the folder it mirrors) or after that package "
        "itself, or is listed with its reason in CROSS_CUTTING in tests/test_layout.py"
    )


def all_test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_naming_rule_refuses_a_misnamed_file_and_accepts_the_look_alikes() -> None:
    assert naming_problem(TESTS / "verifier" / "test_compact_sets.py")
    assert naming_problem(TESTS / "test_view.py")  # no module view.py at the top
    assert naming_problem(TESTS / "contest" / "test_loop.py")  # loop/ is not in contest/
    assert naming_problem(TESTS / "cli" / "test_ledger.py")  # ledger is in cli/commands/
    assert naming_problem(TESTS / "testing" / "test_verdict.py")  # testing/ has no verdict
    assert naming_problem(TESTS / "loop" / "test_.py")  # no name at all
    assert naming_problem(TESTS / "loop" / "test_budget_.py")  # an empty topic
    assert naming_problem(TESTS / "test_verdict.py") is None
    assert naming_problem(TESTS / "test_plugin_startup.py") is None  # plugin + a topic
    assert naming_problem(TESTS / "verifier" / "inner" / "test_watch.py") is None
    assert naming_problem(TESTS / "contest" / "test_presets.py") is None  # a package
    assert naming_problem(TESTS / "loop" / "test_loop.py") is None  # the package itself
    assert naming_problem(TESTS / "testing" / "test_fake_github.py") is None
    assert naming_problem(TESTS / "verifier" / "test_awkward_suites.py") is None  # listed


def test_every_test_file_is_named_after_what_it_tests() -> None:
    problems = [p for p in map(naming_problem, all_test_files()) if p]
    assert not problems, "\n".join(problems)


def test_the_cross_cutting_list_names_only_files_that_exist_and_need_it() -> None:
    """A stale entry (file gone) or a needless one (the name already mirrors a module) would let
    the list grow into a second, unchecked naming scheme."""
    for relative, _reason in CROSS_CUTTING:
        path = TESTS / relative
        assert path.is_file(), f"CROSS_CUTTING lists tests/{relative}, which does not exist"
        needless = naming_problem(path, listed=()) is None
        assert not needless, (
            f"tests/{relative} already mirrors a module: drop it from CROSS_CUTTING"
        )
