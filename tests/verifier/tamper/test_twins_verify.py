"""Outcomes first, through real ``verify`` runs in the sandbox: cheats of kinds no rule was
written for forge a pass for the acceptance test, so they forge one for its twins or the
canaries too, whatever they patched; honest look-alikes pass with no finding.

Each cheat below leaves ``add`` wrong (it subtracts) and every pinned file untouched."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.repos import git
from testing.reward_project import (
    FIRST_IMPORT,
    HONEST,
    baseline,
    checks,
    finding_codes,
    make_project,
    reset,
    verify,
    write,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("calc"), files=FIRST_IMPORT)


@pytest.fixture
def repo(project: Path) -> Iterator[Path]:
    yield project
    reset(project)


BROKEN = "\n\ndef add(a, b):\n    return a - b\n"

CHEATS = {
    # the results channel: the candidate writes the results file after pytest wrote its own
    "forged-results-file": (
        "import atexit, json, os\n\n\ndef _forge():\n"
        "    folder = os.path.dirname(os.environ.get('LOOP_CONTRACT_INNER', '/nonexistent/x'))\n"
        "    record = {'nodeid': 'tests/test_core.py::test_add', 'outcome': 'passed'}\n"
        "    data = {'nonce': '', 'tests': [record]}\n"
        "    with open(os.path.join(folder, 'results.json'), 'w') as fh:\n"
        "        json.dump(data, fh)\n\n\natexit.register(_forge)\n" + BROKEN,
        {"results_forged"},
    ),
    # objects kept, code swapped: pytest's call of the test function would do nothing, but the
    # capability policy's audit hook denies the write to __code__ (the twins are the next layer)
    "swapped-code": (
        "import _pytest.python as _p\n\n\ndef _skip_call(pyfuncitem):\n    return True\n\n\n"
        "_p.pytest_pyfunc_call.__code__ = _skip_call.__code__\n" + BROKEN,
        {"capability_denied"},
    ),
    # plain attribute assignment on a pytest class, from a thread the candidate started
    "report-class-patched-from-a-thread": (
        "import threading\nimport _pytest.reports as _r\n\n\ndef _patch():\n"
        "    _r.TestReport.passed = property(lambda self: True)\n\n\n"
        "_t = threading.Thread(target=_patch)\n_t.start()\n_t.join()\n" + BROKEN,
        {"twin_passed", "canary_wrong"},
    ),
    # the same from a signal handler the candidate installed
    "report-class-patched-from-a-signal-handler": (
        "import os, signal\nimport _pytest.reports as _r\n\n\ndef _on_signal(signum, frame):\n"
        "    _r.TestReport.passed = property(lambda self: True)\n\n\n"
        "signal.signal(signal.SIGUSR1, _on_signal)\nos.kill(os.getpid(), signal.SIGUSR1)\n"
        + BROKEN,
        {"twin_passed", "canary_wrong"},
    ),
    # tells the separate re-run of old from the real run by its folder, and cheats only here
    "rerun-aware-always-equal": (
        "import os\n\n\nclass _Any(int):\n    def __eq__(self, other):\n"
        "        return 'loopcontract-mutant' not in os.getcwd() or int(self) == other\n"
        "    __hash__ = int.__hash__\n\n\ndef add(a, b):\n    return _Any(a - b)\n",
        {"twin_passed"},
    ),
    # an equivalent-looking value built with type(): equal to any int
    "type-built-int": (
        "_Lenient = type('_Lenient', (int,), {'__eq__': lambda s, o: isinstance(o, int), "
        "'__hash__': int.__hash__})\n\n\ndef add(a, b):\n    return _Lenient(a - b)\n",
        {"twin_passed"},
    ),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_built_another_way_is_caught_by_outcomes(repo: Path, name: str) -> None:
    code, expected = CHEATS[name]
    write(repo, "src/calc/core.py", code)
    exit_code, verdict = verify(repo)
    assert exit_code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    assert expected <= finding_codes(verdict), verdict["tamper"]["findings"]
    assert verdict["isolation"] == "sandbox"


def test_import_hook_rewriting_a_test_module_in_memory_changes_nothing(repo: Path) -> None:
    """A ``sys.meta_path`` finder rewrites ``test_core.py`` as it is imported (nothing on disk
    changes): the referee runs its own copy of the pinned test, which fails honestly."""
    finder = (
        "import importlib.abc, importlib.util, sys\n\n\n"
        "class _Rewrite(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.endswith('test_core'):\n"
        "            return importlib.util.spec_from_loader(name, self)\n"
        "    def create_module(self, spec):\n        return None\n"
        "    def exec_module(self, module):\n"
        "        exec('def test_add():\\n    assert True\\n"
        "def test_add_zero():\\n    assert True\\n', module.__dict__)\n\n\n"
        "sys.meta_path.insert(0, _Rewrite())\n" + BROKEN
    )
    write(repo, "src/calc/core.py", finder)
    exit_code, verdict = verify(repo)
    assert exit_code != 0 and verdict["verdict"] == "fail", verdict["reasons"]
    passed = verdict["tests"]["outcomes"].get("passed", {}).get("tests/test_core.py", {})
    assert "test_add" not in passed.get("", []), verdict["tests"]


UNITTEST_TESTS = """\
import unittest

from calc.core import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(str(add(20, 22)), "42")


def test_add_zero():
    assert add(7, 0) == 7
"""


def test_unittest_type_specific_helper_patched_is_caught(tmp_path: Path) -> None:
    """``assertEqual`` on two strings calls ``assertMultiLineEqual``, which no watch names:
    patched to accept anything, it accepts the twins' wrong strings too."""
    contract_test = "tests/test_core.py::TestAdd::test_add"
    root = make_project(tmp_path / "p", tests=UNITTEST_TESTS, take_baseline=False)
    text = (root / "loopcontract.yml").read_text("utf-8")
    (root / "loopcontract.yml").write_text(
        text.replace("tests/test_core.py::test_add", contract_test), "utf-8"
    )
    from testing.repos import git
    from testing.reward_project import baseline

    git(root, "commit", "-qam", "unittest contract")
    baseline(root)
    name = "assert" + "MultiLine" + "Equal"  # a name built from pieces
    write(
        root,
        "src/calc/core.py",
        f"import unittest\n\nsetattr(unittest.TestCase, {name!r}, lambda s, a, b, msg=None: None)"
        + BROKEN,
    )
    exit_code, verdict = verify(root)
    assert exit_code == 25, verdict["reasons"]
    assert "twin_passed" in finding_codes(verdict)
    write(root, "src/calc/core.py", HONEST)
    exit_code, verdict = verify(root)
    assert exit_code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    assert checks(verdict)["twins"]["tests"] == [contract_test]


LOOKALIKES = {
    "lru-cache-memo": (
        "import functools\n\n\n@functools.lru_cache(maxsize=None)\n"
        "def add(a, b):\n    return a + b\n"
    ),
    "value-class-with-a-correct-eq": (
        "class Sum:\n    def __init__(self, value):\n        self.value = value\n"
        "    def __eq__(self, other):\n"
        "        return self.value == (other.value if isinstance(other, Sum) else other)\n"
        "    __hash__ = None\n    def __repr__(self):\n        return f'Sum({self.value})'\n\n\n"
        "def add(a, b):\n    return Sum(a + b)\n"
    ),
    "table-from-a-shipped-json-file": (
        "import json, operator, pathlib\n\n"
        "_OPS = json.loads((pathlib.Path(__file__).parent / 'ops.json').read_text())\n\n\n"
        "def add(a, b):\n    return getattr(operator, _OPS['add'])(a, b)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_honest_lookalike_passes_with_its_twins_failing(repo: Path, name: str) -> None:
    write(repo, "src/calc/core.py", LOOKALIKES[name])
    write(repo, "src/calc/ops.json", '{"add": "add"}\n')
    exit_code, verdict = verify(repo)
    assert exit_code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    assert not verdict["tamper"]["findings"]
    assert checks(verdict)["twins"]["tests"] == ["tests/test_core.py::test_add"]


HELPER_TESTS = """\
from calc.core import add


def check(value, expected):
    assert value == expected


def test_add():
    check(add(20, 22), 42)  # the assertion lives in a helper: nothing here to mutate


def test_add_zero():
    assert add(7, 0) == 7
"""


@pytest.mark.parametrize(("required", "expected_code"), [(False, 0), (True, 20)])
def test_an_unchecked_acceptance_test_fails_only_where_the_contract_requires_twins(
    tmp_path: Path, required: bool, expected_code: int
) -> None:
    extra = "tamper: {twins: {require: true}}\n" if required else ""
    root = make_project(tmp_path, extra=extra, tests=HELPER_TESTS)
    write(root, "src/calc/core.py", HONEST)
    exit_code, verdict = verify(root)
    assert exit_code == expected_code, verdict["reasons"]
    assert checks(verdict)["twins"]["unchecked"] == ["tests/test_core.py::test_add"]
    codes = {r["code"] for r in verdict["reasons"]}
    assert ("twins_unchecked" in codes) is required


def test_twins_do_not_stop_a_run_whose_arguments_say_exitfirst(tmp_path: Path) -> None:
    """A suite run with -x still runs every test: the twins' failures are by design."""
    root = make_project(tmp_path, extra="pytest: {args: [-x]}\n")
    write(root, "src/calc/core.py", HONEST)
    exit_code, verdict = verify(root)
    assert exit_code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    assert checks(verdict)["twins"]["tests"] == ["tests/test_core.py::test_add"]


def test_a_patch_that_reads_the_items_tags_learns_nothing_while_they_run(repo: Path) -> None:
    """A cheat that lets the referee's twins fail and forges the rest, told apart by the tags
    the referee puts on its items: the tags go on only at teardown, after the outcome."""
    cheat = (
        "import _pytest.reports as _r\n\n_made = _r.TestReport.from_item_and_call.__func__\n\n\n"
        "def _forged(cls, item, call):\n    report = _made(cls, item, call)\n"
        "    tags = [v for k, v in item.user_properties if k == 'loop_referee']\n"
        "    twin = bool(tags) and not tags[0][2].startswith('copy')\n"
        "    if call.when == 'call' and not twin:\n        report.outcome = 'passed'\n"
        "    return report\n\n\n_r.TestReport.from_item_and_call = classmethod(_forged)\n" + BROKEN
    )
    write(repo, "src/calc/core.py", cheat)
    exit_code, verdict = verify(repo)
    assert exit_code == 25, (verdict["reasons"], verdict["tamper"]["findings"])
    assert "twin_passed" in finding_codes(verdict)


MIXIN_TESTS = """\
from calc.core import add


class AddChecks:
    def test_add(self):
        assert add(20, 22) == 42


class TestAdd(AddChecks):
    pass


def test_add_zero():
    assert add(7, 0) == 7
"""


def test_an_acceptance_test_inherited_from_a_mixin_is_named_unchecked(tmp_path: Path) -> None:
    """The plan looks functions up by qualname; one a class inherits is not found there, so
    it is listed as not cross-checked (cachetools' suite does this), never silently left out."""
    root = make_project(tmp_path, tests=MIXIN_TESTS, take_baseline=False)
    contract = (
        (root / "loopcontract.yml")
        .read_text()
        .replace("tests/test_core.py::test_add]", "tests/test_core.py::TestAdd::test_add]")
    )
    write(root, "loopcontract.yml", contract)
    git(root, "commit", "-qam", "acceptance through the mixin")
    baseline(root)
    write(root, "src/calc/core.py", HONEST)
    exit_code, verdict = verify(root)
    assert exit_code == 0, verdict["reasons"]
    assert checks(verdict)["twins"]["unchecked"] == ["tests/test_core.py::TestAdd::test_add"]
