"""errors.py: one root for every error of the package, each carrying its exit code."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import pytest_loopcontract
from pytest_loopcontract.contest.orchestrate import ContestError
from pytest_loopcontract.errors import CommandError, ContractError, LoopContractError
from pytest_loopcontract.verdict import EXIT_BASELINE, EXIT_CONTRACT_INVALID
from pytest_loopcontract.verifier.baseline.take import BaselineRefused
from pytest_loopcontract.workspace import WorkspaceError

PACKAGE = Path(pytest_loopcontract.__file__).parent


def package_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages([str(PACKAGE)], prefix="pytest_loopcontract.")
        if info.name != "pytest_loopcontract.__main__"
    )


def exception_classes() -> list[type[BaseException]]:
    """Every exception class defined (not merely imported) in a module of the package."""
    found = []
    for name in package_modules():
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found.append(obj)
    return found


def test_every_exception_class_of_the_package_derives_from_the_root() -> None:
    classes = exception_classes()
    assert len(classes) >= 20  # the walk really reached the modules that define them
    # A stop request (processes.Stopped: SIGINT or SIGTERM) is no error: it is a
    # KeyboardInterrupt, so no ``except Exception`` can swallow it on its way out.
    strays = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, (LoopContractError, KeyboardInterrupt))
    ]
    assert strays == []


def test_each_error_carries_the_exit_code_the_design_gives_it() -> None:
    assert ContractError("bad", file="c.yml").exit_code == EXIT_CONTRACT_INVALID == 26
    assert BaselineRefused("vacuous").exit_code == EXIT_BASELINE == 27
    assert WorkspaceError("no repo").exit_code == 2
    assert ContestError("no seats").exit_code == 2


def test_an_instance_may_carry_another_code_without_changing_its_class() -> None:
    damaged = WorkspaceError("baseline damaged", 27)
    assert damaged.exit_code == 27 and str(damaged) == "baseline damaged"
    assert WorkspaceError("other").exit_code == 2
    assert CommandError("refused", exit_code=1).exit_code == 1
    assert CommandError.exit_code == 2


def test_contract_error_keeps_its_located_message() -> None:
    exc = ContractError("must be a list", file="c.yml", line=3, column=5, field_path="dod")
    assert str(exc) == "c.yml:3:5: dod: must be a list"
    assert (exc.file, exc.line, exc.column, exc.field_path) == ("c.yml", 3, 5, "dod")
    assert exc.label == "contract invalid"
    with pytest.raises(LoopContractError):
        raise exc


def _imports(path: Path) -> set[str]:
    """Every package module ``path`` imports, at module level or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("pytest_loopcontract")}


def import_graph() -> dict[str, set[str]]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return {name: _imports(path) & set(files) - {name} for name, path in files.items()}


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return False


@pytest.mark.parametrize(
    "area",
    ["pytest_loopcontract.errors", "pytest_loopcontract.cli", "pytest_loopcontract.contract"],
)
def test_no_import_cycle_runs_through_the_errors_the_cli_or_the_contract(area: str) -> None:
    graph = import_graph()
    cyclic = [
        f"{name} -> {dep}"
        for name, deps in graph.items()
        if name.startswith(area)
        for dep in deps
        if reaches(graph, dep, name)
    ]
    assert cyclic == []


def test_the_contract_schema_no_longer_imports_the_model() -> None:
    graph = import_graph()
    # the model imports the schema (inside parse_contract), so the reverse would be a cycle
    assert "pytest_loopcontract.contract.schema" in graph["pytest_loopcontract.contract.model"]
    assert "pytest_loopcontract.contract.model" not in graph["pytest_loopcontract.contract.schema"]
