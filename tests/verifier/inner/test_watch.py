"""The runtime-patch watch and the launcher's cheap paths, through real runs.

The watch (``inner/watch.py``) compares the objects it holds with what the run sees after every
test, with one pass of ``is``; these tests make sure that fast path still catches every kind of
replacement (a clock, a builtin, a classmethod of pytest's reports, a whole module in
``sys.modules``), that a classmethod looked up twice is not a "change", and that real
``loop-contract verify`` runs catch a patch the candidate's code leaves behind while an honest
patch-and-restore passes.
"""

from __future__ import annotations

import builtins
import datetime
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from _pytest.runner import CallInfo

from pytest_loopcontract.verifier import runner
from pytest_loopcontract.verifier.inner.watch import PatchWatch
from pytest_loopcontract.verifier.runner import CONFIG_ENV
from testing.reward_project import finding_codes, make_project, reset, verify, write

# --- the watch itself ------------------------------------------------------------------------


def _changed(watch: PatchWatch, when: str) -> list[str]:
    watch.check(when)
    return [p["object"] for p in watch.pending if p["during"] == when]


def test_nothing_changed_is_nothing_reported_however_often_checked() -> None:
    watch = PatchWatch()
    for n in range(2000):
        garbage = [object() for _ in range(n % 7)]  # new objects at freed addresses
        del garbage
        watch.check(f"t{n}")
    assert watch.pending == []


@pytest.mark.parametrize(
    ("owner", "name", "label"),
    [
        (time, "perf_counter", "time.perf_counter"),
        (builtins, "len", "builtins.len"),
        (datetime, "datetime", "datetime.datetime"),
        (pytest, "approx", "pytest.approx"),
    ],
)
def test_a_replaced_object_is_named_once_with_the_test(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, label: str
) -> None:
    watch = PatchWatch()
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: original(*a, **k))
    assert _changed(watch, "tests/t.py::test_x") == [label]
    assert _changed(watch, "tests/t.py::test_y") == []  # first change wins
    monkeypatch.undo()
    assert _changed(watch, "tests/t.py::test_z") == []


def test_classmethods_of_the_framework_are_watched() -> None:
    # patched and undone inside the test: this very run reports through these objects
    watch = PatchWatch()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CallInfo, "from_call", classmethod(lambda cls, *a, **k: None))
        assert _changed(watch, "a") == ["_pytest.runner.CallInfo.from_call"]
    with pytest.MonkeyPatch.context() as patch:
        # replaced by something that is no bound method: the fast path cannot even read it
        patch.setattr(TestReport, "from_item_and_call", staticmethod(lambda *a: None))
        assert _changed(watch, "b") == ["_pytest.reports.TestReport.from_item_and_call"]
    assert _changed(watch, "c") == []


def test_a_deleted_builtin_and_a_swapped_module_are_changes() -> None:
    watch = PatchWatch()
    with pytest.MonkeyPatch.context() as patch:
        patch.delattr(builtins, "sorted")
        assert _changed(watch, "a") == ["builtins.sorted"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "time", types.ModuleType("time"))
        assert "time.monotonic" in _changed(watch, "b")


# --- the launcher's side -----------------------------------------------------------------------


def test_launcher_and_injected_plugin_agree_on_the_settings_variable() -> None:
    assert runner.CONFIG_ENV == CONFIG_ENV


def test_the_launcher_imports_no_pytest() -> None:
    """The verifier's modules load without pytest (it is the test environment's business)."""
    code = (
        "import sys, pytest_loopcontract.cli.main, pytest_loopcontract.verifier.verify; "
        "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- real verify runs ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("watch"))


@pytest.fixture
def repo(project: Path) -> Iterator[Path]:
    yield project
    reset(project)


PATCHES_CLOCK = """\
import time

time.perf_counter = lambda: 0.0


def add(a, b):
    return a + b
"""

PATCHES_REPORTS = """\
from _pytest.reports import TestReport

_real = TestReport.__dict__["from_item_and_call"].__func__


def _quiet(cls, item, call):
    return _real(cls, item, call)


TestReport.from_item_and_call = classmethod(_quiet)


def add(a, b):
    return a + b
"""

PATCH_AND_RESTORE = """\
import time


def add(a, b):
    real = time.sleep
    time.sleep = lambda seconds: None
    try:
        return a + b
    finally:
        time.sleep = real
"""


@pytest.mark.parametrize(
    ("source", "patched"),
    [
        (PATCHES_CLOCK, "time.perf_counter"),
        (PATCHES_REPORTS, "_pytest.reports.TestReport.from_item_and_call"),
    ],
)
def test_a_patch_left_by_the_candidate_is_caught(repo: Path, source: str, patched: str) -> None:
    write(repo, "src/calc/core.py", source)
    code, verdict = verify(repo)
    assert code == 25, verdict["reasons"]
    assert "runtime_patched" in finding_codes(verdict)
    messages = [f["message"] for f in verdict["tamper"]["findings"]]
    assert any(m.startswith(patched + " was replaced") for m in messages), messages


def test_a_patch_undone_by_the_code_that_made_it_passes(repo: Path) -> None:
    write(repo, "src/calc/core.py", PATCH_AND_RESTORE)
    code, verdict = verify(repo)
    assert code == 0, (verdict["reasons"], verdict["tamper"])
    assert "runtime_patched" not in finding_codes(verdict)


def test_a_copy_that_shadows_the_module_is_caught(repo: Path) -> None:
    """The package's ``__path__`` made to look in another folder first: the tests import a
    fixed copy of ``calc.core`` while ``src/calc/core.py`` stays broken."""
    write(
        repo,
        "src/calc/__init__.py",
        "import os\n\n__path__.insert(0, os.path.join(__path__[0], 'v2'))\n",
    )
    write(repo, "src/calc/v2/core.py", "def add(a, b):\n    return a + b\n")
    code, verdict = verify(repo)
    assert code == 25, verdict["reasons"]
    shadowed = [f for f in verdict["tamper"]["findings"] if f["code"] == "module_shadowed"]
    assert [f["path"] for f in shadowed] == ["src/calc/v2/core.py"], verdict["tamper"]


def test_real_paths_of_module_files_match_realpath(tmp_path: Path) -> None:
    from pytest_loopcontract.verifier.inner.collector import _RealPaths

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text("", "utf-8")
    (tmp_path / "linked").symlink_to(tmp_path / "pkg")
    (tmp_path / "pkg/alias.py").symlink_to(tmp_path / "pkg/mod.py")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/far.py").write_text("", "utf-8")
    (tmp_path / "pkg/far.py").symlink_to(tmp_path / "elsewhere/far.py")
    real = _RealPaths()
    for rel in ("pkg/mod.py", "linked/mod.py", "linked/alias.py", "pkg/far.py", "linked/far.py"):
        file = str(tmp_path / rel)
        assert real(file) == os.path.realpath(file), rel
