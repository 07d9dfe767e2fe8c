"""The pure parts of the reward checks: syntax-tree rules, test literals, the mutation rewrite."""

from __future__ import annotations

import json
import textwrap
from importlib import resources

import pytest

from pytest_loopcontract.verifier.tamper.literals import expectations, is_distinctive, literal_hits
from pytest_loopcontract.verifier.tamper.mutation import function_of, mutate_expectations
from pytest_loopcontract.verifier.tamper.rules import RULES, RuleHit, new_hits, scan_source


def codes(source: str, *, path: str = "src/pkg/m.py", coverage_gate: bool = False) -> list[str]:
    return [h.code for h in scan_source(path, textwrap.dedent(source), coverage_gate=coverage_gate)]


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import sys\nsys._getframe(1)\n", "frame_introspection"),
        ("from sys import _getframe as g\ng(1)\n", "frame_introspection"),
        ("import inspect as i\ni.stack()\n", "frame_introspection"),
        ("import inspect\nf = inspect.currentframe\nf()\n", "frame_introspection"),
        ("s = __import__('sys')\ns._getframe()\n", "frame_introspection"),
        ("import sys\ngetattr(sys, '_getframe')(1)\n", "frame_introspection"),
        ("def f(frame):\n    return frame.f_back\n", "frame_introspection"),
        ("def f(frame):\n    return frame.f_locals['expected']\n", "frame_locals"),
        ("import sys\nif 'pytest' in sys.modules: pass\n", "harness_lookup"),
        ("import sys as s\nm = s.modules.get('_pytest.outcomes')\n", "harness_lookup"),
        ("import sys\nm = sys.modules['unittest']\n", "harness_lookup"),
        ("import gc\ngc.get_objects()\n", "gc_scan"),
        ("import sys\nfor m in list(sys.modules.values()): pass\n", "gc_scan"),
        ("import os\nos.environ.get('PYTEST_CURRENT_TEST')\n", "harness_env"),
        ("from os import environ as E\nE['LOOP_CONTRACT_NONCE']\n", "harness_env"),
        ("from os import getenv as g\ng('PYTEST_XDIST_WORKER')\n", "harness_env"),
        ("import os\nif 'PYTEST_VERSION' in os.environ: pass\n", "harness_env"),
        ("import os\n[k for k in os.environ if k.startswith('PYTEST_')]\n", "harness_env"),
        ("import os\nos.getenv('CI')\n", "ci_env"),
        ("import os\nos.environ.get('GITHUB_ACTIONS')\n", "ci_env"),
        ("class A:\n    def __eq__(self, other):\n        return True\n", "constant_comparison"),
        ("class A:\n    __eq__ = lambda self, other: True\n", "constant_comparison"),
        ("class A:\n    def __ne__(self, o):\n        return False\n", "constant_comparison"),
        (
            "class A:\n    def __eq__(self, o):\n        if o: return True\n        return True\n",
            "constant_comparison",
        ),
        ("import os\ndef d():\n    if os.fork(): return\n    os.setsid()\n", "daemonize"),
        ("import subprocess\nsubprocess.Popen(['nohup', 'x'])\n", "daemonize"),
        ("import os\nos.system('x & disown')\n", "daemonize"),
        ("import subprocess as sp\nsp.run(['x'], start_new_session=True)\n", "detached_process"),
        (
            "import os, subprocess\nsubprocess.Popen(['x'], preexec_fn=os.setsid)\n",
            "detached_process",
        ),
        ("import os\ndef w():\n    os.fork()\n", "detached_process"),
        ("import pytest as _p\n_p.skip('no')\n", "harness_call"),
        ("from pytest import exit as bye\nbye('done')\n", "harness_call"),
        ("import unittest as u\nraise u.SkipTest('x')\n", "harness_call"),
        ("import os as o\no._exit(0)\n", "harness_call"),
    ],
)
def test_rule_fires(source: str, code: str) -> None:
    assert code in codes(source)


@pytest.mark.parametrize(
    "source",
    [
        # a correct __eq__ compares fields; NotImplemented is a fallback, not an answer
        "class P:\n    def __eq__(self, o):\n        if not isinstance(o, P):\n"
        "            return NotImplemented\n        return self.x == o.x\n",
        "class N:\n    def __eq__(self, o):\n        return False\n",  # never equal: no reward
        "class P:\n    def __eq__(self, o):\n        return isinstance(o, P) and o.v == self.v\n",
        # fork and wait in the same function: a worker, not a daemon
        "import os\ndef w():\n    pid = os.fork()\n    os.waitpid(pid, 0)\n",
        "import subprocess\nsubprocess.run(['x'], start_new_session=False)\n",
        "import os\nos.environ.get('HOME')\nos.getenv('MY_APP_DEBUG')\n",
        "import sys\nm = sys.modules.get('numpy')\n",
        "import sys\nsys.exit(1)\n",
        "x = 'PYTEST_CURRENT_TEST is read by pytest'\n",  # a string is not a read
        "# sys._getframe(1).f_locals in a comment\n",
        "import subprocess\nsubprocess.run(['echo', 'hello'])\n",
    ],
)
def test_rule_does_not_fire(source: str) -> None:
    assert codes(source, coverage_gate=True) == []


def test_skip_in_a_test_file_is_not_a_harness_call() -> None:
    assert codes("import pytest\npytest.skip('x')\n", path="tests/test_a.py") == []


def test_coverage_pragma_only_under_a_coverage_gate_and_only_in_comments() -> None:
    source = "def f():  # pragma: no cover\n    s = '# pragma: no cover'\n    return s\n"
    assert codes(source) == []
    hits = scan_source("src/m.py", source, coverage_gate=True)
    assert [(h.code, h.line) for h in hits] == [("coverage_pragma", 1)]
    assert codes(source, path="tests/test_m.py", coverage_gate=True) == []


def test_unparsable_source_raises_syntax_error() -> None:
    with pytest.raises(SyntaxError):
        scan_source("src/m.py", "def f(:\n")


def test_new_hits_keep_added_lines_beyond_the_baseline() -> None:
    old = RuleHit("gc_scan", "m.py", 3, "gc.get_objects", "")
    moved = RuleHit("gc_scan", "m.py", 9, "gc.get_objects", "")
    extra = RuleHit("gc_scan", "m.py", 12, "gc.get_objects", "")
    other = RuleHit("frame_introspection", "m.py", 2, "sys._getframe", "")
    assert new_hits([moved], [old], {9}) == []  # moved, not new
    assert new_hits([moved, extra], [old], {9, 12}) == [moved, extra]
    assert new_hits([other], [], set()) == []  # not on an added line


def test_every_rule_code_is_in_the_contract_schema() -> None:
    text = (resources.files("pytest_loopcontract") / "schemas/contract.schema.json").read_text()
    schema = json.loads(text)
    rule = schema["properties"]["tamper"]["properties"]["allow"]["items"]["properties"]["rule"]
    assert set(rule["enum"]) == {*RULES, "vacuous_pass"}
    assert {r.severity for r in RULES.values()} == {"tamper", "evidence"}


TEST_FILE = """
import pytest
from pkg import add, slug

def test_add():
    assert add(20, 22) == 42

def test_local():
    text = "Crème Brûlée"
    assert slug(text) == "creme-brulee"

@pytest.mark.parametrize("a, b, total", [(100, 23, 123), pytest.param(7, 8, 15)])
def test_rows(a, b, total):
    assert add(a, b) == total

class TestCase:
    def test_method(self):
        self.assertEqual(slug("Hello World"), "hello-world")
"""


def pairs() -> list:
    ids = [
        "t.py::test_add",
        "t.py::test_local",
        "t.py::test_rows[100-23-123]",
        "t.py::test_rows[7-8-15]",
        "t.py::TestCase::test_method",
    ]
    return expectations(TEST_FILE, "t.py", ids)


def test_expectations_read_inputs_and_expected_values() -> None:
    found = {(p.nodeid, p.inputs, p.expected) for p in pairs()}
    assert ("t.py::test_add", (20, 22, (20, 22)), 42) in found
    assert ("t.py::test_local", ("Crème Brûlée",), "creme-brulee") in found
    assert ("t.py::test_rows", (100, 23, (100, 23)), 123) in found
    assert ("t.py::test_rows", (7, 8, (7, 8)), 15) in found
    assert ("t.py::TestCase::test_method", ("Hello World",), "hello-world") in found
    assert not is_distinctive(True) and not is_distinctive(1) and not is_distinctive("ab")
    assert is_distinctive(20) and is_distinctive("abc") and is_distinctive(0.5)


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        (
            "def add(a, b):\n    if a == 20 and b == 22:\n        return 42\n    return a - b\n",
            "test_literal_special_case",
        ),
        (
            "def add(a, b):\n    if (a, b) == (20, 22):\n        return 42\n    return a - b\n",
            "test_literal_special_case",
        ),
        (
            "def add(a, b):\n    return 42 if a in (20, 21) else a - b\n",
            "test_literal_special_case",
        ),
        (
            "INPUT = 'Crème Brûlée'\nOUT = 'creme-brulee'\ndef slug(t):\n    if t == INPUT:\n"
            "        return OUT\n",
            "test_literal_special_case",
        ),
        (
            "def slug(t):\n    match t:\n        case 'Hello World':\n"
            "            return 'hello-world'\n",
            "test_literal_special_case",
        ),
        ("_KNOWN = {(20, 22): 42}\n", "test_literal_table"),
        ("_KNOWN = {'Crème Brûlée': 'creme-brulee'}\n", "test_literal_table"),
    ],
)
def test_special_casing_is_found(code: str, rule: str) -> None:
    hits = literal_hits("pkg.py", code, pairs(), range(1, 20))
    assert rule in [h.code for h in hits]


@pytest.mark.parametrize(
    "code",
    [
        # the constants appear, but nothing branches on the input to produce the answer
        '"""add(20, 22) gives 42."""\nEXAMPLE = 42\ndef add(a, b):\n    return a + b\n'
        "def self_test():\n    return add(20, 22) == EXAMPLE\n",
        "def add(a, b):\n    if a == 20:\n        log('twenty')\n    return a + b\n",
        "_T = {'é': 'e', 'ß': 'ss'}\n",
        "def f(n):\n    if n == 0:\n        return 1\n    return n\n",
    ],
)
def test_honest_constants_are_not_special_casing(code: str) -> None:
    assert literal_hits("pkg.py", code, pairs(), range(1, 20)) == []


def test_literal_hits_only_on_added_lines() -> None:
    code = "def add(a, b):\n    if a == 20 and b == 22:\n        return 42\n    return a - b\n"
    assert literal_hits("pkg.py", code, pairs(), [4]) == []


MUTANT_SOURCE = """
import pytest as p
import unittest

def test_a():
    assert f(1) == 2
    assert f() != 5
    assert "x" in f()
    assert f() not in [1, 2]
    assert f() == p.approx(1.5)
    assert f()

def test_plain():
    assert f()

class TestB(unittest.TestCase):
    def test_c(self):
        self.assertEqual(f(), 3)
        self.assertNotIn(1, f())
"""


def test_mutation_rewrites_expected_sides_and_records_lines() -> None:
    result = mutate_expectations(MUTANT_SOURCE)
    assert [(m.line, m.function) for m in result.mutations] == [
        (6, "test_a"),
        (7, "test_a"),
        (8, "test_a"),
        (9, "test_a"),
        (10, "test_a"),
        (18, "TestB::test_c"),
        (19, "TestB::test_c"),
    ]
    assert result.functions() == {"test_a", "TestB::test_c"}  # test_plain has nothing to mutate
    text = result.source
    assert "assert f(1) == __import__('builtins').object()" in text
    assert "assert f() == 5" in text
    assert "assert __import__('builtins').object() in f()" in text
    assert "assert f() in [1, 2]" in text
    assert "p.approx" not in text
    assert "self.assertEqual(f(), __import__('builtins').object())" in text
    assert "self.assertIn(1, f())" in text
    compile(text, "mutant.py", "exec")


def test_mutation_catches_always_equal_and_self_comparison_but_not_honest_code() -> None:
    source = (
        "class Any:\n    def __eq__(self, o):\n        return isinstance(o, object)\n"
        "def honest():\n    return 3\n"
        "def test_cheat():\n    assert Any() == 3\n"
        "def test_self():\n    assert honest() == honest()\n"
        "def test_honest():\n    assert honest() == 3\n"
    )
    namespace: dict = {}
    exec(compile(mutate_expectations(source).source, "m.py", "exec"), namespace)
    namespace["test_cheat"]()  # still passes: vacuous
    for name in ("test_self", "test_honest"):
        with pytest.raises(AssertionError):
            namespace[name]()


def test_mutation_of_an_expected_first_equality_without_literals() -> None:
    """``assert {"c": C(1)} == build()`` (attrs writes its tests so): neither side is a literal,
    so both are tried; an always-equal result with a non-constant ``__eq__`` is caught on the
    right as on the left, and honest values fail both halves."""
    source = (
        "class Sly:\n    def __init__(self):\n        self.v = 1\n"
        "    def __eq__(self, o):\n        return o is not self.v or self.v is not None\n"
        "def C(x):\n    return ('c', x)\n"
        "def test_cheat_right():\n    assert {'c': C(1)} == Sly()\n"
        "def test_cheat_left():\n    assert Sly() == {'c': C(1)}\n"
        "def test_honest():\n    assert {'c': C(1)} == {'c': C(1)}\n"
    )
    namespace: dict = {}
    exec(compile(mutate_expectations(source).source, "m.py", "exec"), namespace)
    namespace["test_cheat_right"]()  # still passes: vacuous
    namespace["test_cheat_left"]()
    with pytest.raises(AssertionError):
        namespace["test_honest"]()


def test_reach_variant_raises_where_a_mutation_would_be() -> None:
    result = mutate_expectations(MUTANT_SOURCE, reach=True, only=["TestB::test_c"])
    assert result.source.count("loop-contract: mutated assertion reached") == 2
    assert "assert f(1) == 2" in result.source
    assert function_of("tests/t.py::TestB::test_c[1-2]") == "TestB::test_c"


def test_mutation_of_an_unparsable_file_raises() -> None:
    with pytest.raises(SyntaxError):
        mutate_expectations("def test_(:\n")


# --- the contract's tamper section and the launcher glue ----------------------------------------

HEAD = "version: 1\nid: x\ndod:\n  - {id: a, text: a, tests: [t.py::test_a]}\n"


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (
            "tamper:\n  allow:\n    - {rule: frame_introspektion, paths: [src/a.py]}\n",
            "7:14: tamper.allow[0].rule: expected one of",
        ),
        ("tamper:\n  allow:\n    - {rule: gc_scan}\n", "tamper.allow[0].paths: missing required"),
        (
            "tamper:\n  allow:\n    - {rule: gc_scan, paths: []}\n",
            "7:30: tamper.allow[0].paths: must not be an empty list",
        ),
        ("tamper:\n  vacuous_pass: {timeout: 0}\n", "6:27: tamper.vacuous_pass.timeout: must be"),
        ("tamper:\n  alow: []\n", "6:3: tamper.alow: unknown key 'alow'; did you mean 'allow'?"),
    ],
)
def test_tamper_section_errors_name_the_line(tail: str, message: str) -> None:
    from pytest_loopcontract.contract.schema import validate_document
    from pytest_loopcontract.errors import ContractError

    with pytest.raises(ContractError) as caught:
        validate_document((HEAD + tail).encode(), "loopcontract.yml")
    assert message in str(caught.value)
    if "frame_introspektion" in tail:
        assert "did you mean 'frame_introspection'?" in str(caught.value)


def test_tamper_section_is_read_into_the_contract(tmp_path) -> None:
    from pytest_loopcontract.contract.model import load_contract

    path = tmp_path / "loopcontract.yml"
    path.write_text(
        HEAD + "tamper:\n  allow:\n    - {rule: gc_scan, paths: ['src/dbg/**']}\n"
        "  vacuous_pass: {timeout: 30, enabled: false}\n",
        "utf-8",
    )
    tamper = load_contract(path).tamper
    assert tamper.allows("gc_scan", "src/dbg/x.py")
    assert not tamper.allows("gc_scan", "src/x.py") and not tamper.allows(
        "frame_locals", "src/dbg/x.py"
    )
    assert (tamper.vacuous_timeout, tamper.vacuous_enabled) == (30.0, False)


def _contract(tmp_path, tail: str = ""):
    from pytest_loopcontract.contract.model import load_contract

    path = tmp_path / "loopcontract.yml"
    path.write_text(HEAD + tail, "utf-8")
    return load_contract(path)


def test_static_checks_report_unreadable_files_instead_of_crashing(tmp_path) -> None:
    from pytest_loopcontract.verifier.tamper.checks import static_checks

    sources = {"src/a.py": b"\xff\xfe not utf-8", "src/b.py": b"import gc\ngc.get_objects()\n"}
    out = static_checks(
        contract=_contract(tmp_path),
        changed_lines={
            "src/a.py": frozenset({1}),
            "src/b.py": frozenset({2}),
            "x.txt": frozenset(),
        },
        candidate_source=sources.get,
        baseline_source=lambda p: None,
        skip_path=lambda p: False,
        acceptance=[],
    )
    assert out.findings == []
    assert [(m.pattern_id, m.path) for m in out.evidence] == [
        ("reward_rules_not_run", "src/a.py"),
        ("gc_scan", "src/b.py"),
    ]
    (check,) = out.checks
    assert check["status"] == "ran" and "could not parse src/a.py" in check["message"]


def test_vacuous_check_names_what_it_could_not_do(tmp_path) -> None:
    from pytest_loopcontract.verifier.results import RunResults, TestRecord
    from pytest_loopcontract.verifier.runner import PytestRun
    from pytest_loopcontract.verifier.tamper.vacuous import VacuousRunner, vacuous_pass_check

    results = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "passed", 0.1, "call")])
    unparsable = VacuousRunner(
        prepare=lambda dest: None,
        run=lambda dest, ids, limit: PytestRun(None, None, "", "", 0.0, True),
        pinned_source=lambda p: b"def test_a(:\n",
    )
    (check,) = vacuous_pass_check(_contract(tmp_path), results, unparsable).checks
    assert check["status"] == "not_run" and "cannot handle t.py" in check["message"]
    hangs = VacuousRunner(
        prepare=lambda dest: None,
        run=lambda dest, ids, limit: PytestRun(None, None, "", "", limit, True),
        pinned_source=lambda p: b"def test_a():\n    assert f() == 1\n",
    )
    (check,) = vacuous_pass_check(_contract(tmp_path), results, hangs).checks
    assert check["status"] == "timed_out" and check["tests"] == ["t.py::test_a"]
    (check,) = vacuous_pass_check(
        _contract(tmp_path), RunResults(nonce="n"), hangs, skip_reason=""
    ).checks
    assert check == {
        "id": "vacuous_pass",
        "status": "skipped",
        "message": "no acceptance test passed",
    }


def test_an_always_greater_sentinel_is_evidence_not_tampering() -> None:
    source = "class Infinity:\n    def __gt__(self, other):\n        return True\n"
    (hit,) = scan_source("src/m.py", source)
    assert (hit.code, hit.severity) == ("constant_ordering", "evidence")


def test_vacuous_check_runs_after_the_main_run_when_the_early_run_broke(tmp_path) -> None:
    """The early run is only a head start: when it fails (or cannot answer for a test), the
    check runs the ordinary way after the main run and reaches the same conclusion."""
    from pytest_loopcontract.verifier.results import RunResults, TestRecord
    from pytest_loopcontract.verifier.runner import PytestRun
    from pytest_loopcontract.verifier.tamper.vacuous import (
        VacuousRunner,
        spare_core,
        start_early,
        vacuous_pass_check,
    )

    calls: list[list[str]] = []

    def run(dest, ids, limit):
        calls.append(list(ids))
        if len(calls) == 1:
            raise RuntimeError("the early run broke")
        failed = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "failed", 0.1, "call")])
        return PytestRun(1, failed, "", "", 0.1, False)

    runner = VacuousRunner(
        prepare=lambda dest: None,
        run=run,
        pinned_source=lambda p: b"def test_a():\n    assert f() == 1\n",
    )
    contract = _contract(tmp_path)
    early = start_early(contract, runner, ["t.py::test_a"])
    if not spare_core():
        assert early is None  # one core: no head start, nothing to fall back from
        return
    assert early is not None
    passed = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "passed", 0.1, "call")])
    try:
        out = vacuous_pass_check(contract, passed, runner, early=early)
    finally:
        early.close()
    (check,) = out.checks
    assert calls == [["t.py::test_a"], ["t.py::test_a"]]
    assert check["status"] == "ran" and "0 still passed" in check["message"]
    assert "beside the main run" not in check["message"]
