"""Test-namespace integrity: a test must run against what its pinned module binds.

A test whose ``add`` was rebound to a private correct copy (the package still broken) passes
honestly, and its twins fail honestly; only the binding shows the cheat. The bindings are read
from the pinned source (``tamper/bindings.py``) and checked in the run (``inner/namespace.py``).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopcontract.verifier.inner.namespace import rebound
from pytest_loopcontract.verifier.tamper.bindings import CONST, DEF, FROM, IMPORT, module_bindings
from testing.reward_project import (
    FIRST_IMPORT,
    HONEST,
    finding_codes,
    make_project,
    reset,
    verify,
    write,
)

# --- the launcher's half: what the pinned source binds ------------------------------------


def test_bindings_of_imports_defs_and_literals() -> None:
    source = (
        "import os.path\nimport json as j\nfrom calc.core import add as plus\n"
        "from . import helpers\nLIMIT = 3\nNAMES = ('a', 'b')\nTABLE = {'a': 1}\n\n"
        "def helper():\n    return 1\n\n@staticmethod\ndef wrapped():\n    pass\n"
    )
    found = {(b.name, b.kind, b.target) for b in module_bindings(source)}
    assert found == {
        ("os", IMPORT, "os"),
        ("j", IMPORT, "json"),
        ("plus", FROM, "calc.core:add"),
        ("helpers", FROM, ".:helpers"),
        ("LIMIT", CONST, "3"),
        ("NAMES", CONST, "('a', 'b')"),
        ("helper", DEF, "9"),
    }


def test_names_bound_more_than_once_are_left_out() -> None:
    source = (
        "from calc.core import add\ntry:\n    import tomllib\nexcept ImportError:\n"
        "    tomllib = None\nLIMIT = 3\n\ndef bump():\n    global LIMIT\n    LIMIT += 1\n\n"
        "for add in ():\n    pass\nfrom m import x\nx = 2\n"
    )
    assert [b.name for b in module_bindings(source)] == ["bump"]


def test_a_module_that_binds_names_dynamically_is_left_out() -> None:
    """mako's lexer tests bind ``Node = None`` and then ``exec`` a class over it."""
    source = (
        "Node = None\nfrom m import f\n\nfor name in ('Node',):\n"
        "    exec(f'class {name}: pass', locals())\n"
    )
    assert module_bindings(source) == []
    assert module_bindings("import sys\nX = 1\nsetattr(sys.modules[__name__], 'X', 2)\n") == []


# --- the run's half: resolved against the live process --------------------------------------


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    (tmp_path / "nspkg_demo.py").write_text("def add(a, b):\n    return a - b\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("nspkg_demo")
    yield module
    sys.modules.pop("nspkg_demo", None)


def _test_module(source: str, package: types.ModuleType) -> types.ModuleType:
    module = types.ModuleType("test_demo_ns")
    module.__file__ = str(Path(package.__file__ or "").with_name("test_demo_ns.py"))
    exec(compile(source, module.__file__, "exec"), vars(module))
    return module


SOURCE = "from nspkg_demo import add\nLIMIT = 3\n\ndef helper():\n    return 1\n"


def test_an_untouched_module_holds(package: types.ModuleType) -> None:
    module = _test_module(SOURCE, package)
    assert rebound(module, module_bindings(SOURCE)) == []


def test_a_private_copy_a_changed_constant_and_a_swapped_helper_are_named(
    package: types.ModuleType,
) -> None:
    module = _test_module(SOURCE, package)
    exec("def add(a, b):\n    return a + b\n", vars(module))  # defined elsewhere, other code
    vars(module)["LIMIT"] = 4
    vars(module)["helper"] = lambda: 1
    names = {name for name, _ in rebound(module, module_bindings(SOURCE))}
    assert names == {"add", "LIMIT", "helper"}


def test_a_reloaded_package_is_not_a_rebinding(package: types.ModuleType) -> None:
    module = _test_module(SOURCE, package)
    importlib.reload(package)
    assert package.add is not vars(module)["add"]
    assert rebound(module, module_bindings(SOURCE)) == []


def test_a_constant_equal_under_a_lenient_type_is_named(package: types.ModuleType) -> None:
    module = _test_module(SOURCE, package)
    vars(module)["LIMIT"] = type("Lenient", (int,), {"__eq__": lambda s, o: True})(3)
    assert [name for name, _ in rebound(module, module_bindings(SOURCE))] == ["LIMIT"]


# --- through real verify runs ----------------------------------------------------------------

NS_TESTS = """\
import importlib

import pytest

from calc import core
from calc.core import add

LIMIT = 3


@pytest.fixture
def small_limit(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules[__name__], "LIMIT", 1)  # the suite's own, undone after


def test_a_reload_first():
    importlib.reload(core)  # honest: the module below still holds the old, equal function


def test_limit(small_limit):
    assert LIMIT == 1


def test_add():
    assert add(20, 22) == 42


def test_add_zero():
    assert add(7, 0) == 7
"""

BROKEN = "\n\ndef add(a, b):\n    return a - b\n"
_GOOD = "def _good(a, b):\n    return a + b\n\n\n"
_FIND = (
    "def _test_module():\n"
    "    for mod in list(sys.modules.values()):\n"
    "        if (getattr(mod, '__file__', '') or '').endswith('test_core.py'):\n"
    "            return mod\n\n\n"
)
CHEATS = {
    # an import hook rebinds the test module's name right after it executed
    "meta-path-hook": (
        "import sys\n\n\n" + _GOOD + "class _After:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if not name.endswith('test_core'):\n            return None\n"
        "        sys.meta_path.remove(self)\n"
        "        import importlib.util\n"
        "        spec = importlib.util.find_spec(name)\n"
        "        run = spec.loader.exec_module\n\n"
        "        def exec_module(module):\n"
        "            run(module)\n            module.add = _good\n\n"
        "        spec.loader.exec_module = exec_module\n        return spec\n\n\n"
        "sys.meta_path.insert(0, _After())\n" + BROKEN
    ),
    # a thread waits for the test module to appear, then rebinds its name
    "polling-thread": (
        "import sys\nimport threading\nimport time\n\n\n" + _GOOD + _FIND + "def _watch():\n"
        "    for _ in range(2000):\n        mod = _test_module()\n"
        "        if mod is not None and hasattr(mod, 'add'):\n"
        "            mod.add = _good\n            return\n        time.sleep(0.001)\n\n\n"
        "threading.Thread(target=_watch, daemon=True).start()\n" + BROKEN
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("ns"), tests=NS_TESTS, files=FIRST_IMPORT)


@pytest.fixture
def repo(project: Path) -> Iterator[Path]:
    yield project
    reset(project)


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_test_run_against_a_private_copy_is_tampering(repo: Path, cheat: str) -> None:
    write(repo, "src/calc/core.py", CHEATS[cheat])
    code, verdict = verify(repo)
    assert code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    (finding,) = [f for f in verdict["tamper"]["findings"] if f["code"] == "namespace_rebound"]
    assert finding["path"] == "tests/test_core.py" and finding["line"] == 6
    assert "'add'" in finding["message"] and "_good" in finding["message"]


def test_the_honest_fix_with_a_reload_and_a_monkeypatched_constant_passes(repo: Path) -> None:
    write(repo, "src/calc/core.py", HONEST)
    code, verdict = verify(repo)
    assert code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    assert "namespace_rebound" not in finding_codes(verdict)
