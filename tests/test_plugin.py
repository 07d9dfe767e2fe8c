"""The pytest plugin in-process (``pytest --loop-contract``), driven through pytester."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_loopcontract.verdict_outcomes import verdict_records

# Imported here, before any pytester run: pytester drops the modules a run imported when it
# ends, but the cached plugin manager keeps the sensors it registered, so a sensor imported
# inside one run would return another copy's ``Observation`` to the next run's registry.
from pytest_loopcontract.verifier.sensors import registry as _sensor_registry  # noqa: F401
from testing.repos import assert_valid_verdict

pytest_plugins = ["pytester"]

CONTRACT = """\
version: 1
id: demo
goal: add works
dod:
  - id: add
    text: add() adds
    tests: ["test_calc.py::test_add"]
{extra}
"""

CALC_OK = "def add(a, b):\n    return a + b\n"
CALC_BAD = "def add(a, b):\n    return a - b\n"
TESTS = """\
import pytest
from calc import add

def test_add():
    assert add(2, 3) == 5

def test_other():
    assert add(0, 0) == 0
"""


def make_project(
    pytester: pytest.Pytester, calc: str = CALC_OK, tests: str = TESTS, extra: str = ""
) -> None:
    pytester.makepyfile(calc=calc, test_calc=tests)
    pytester.makefile(".yml", loopcontract=CONTRACT.format(extra=extra))
    pytester.syspathinsert()


def read_verdict(pytester: pytest.Pytester, rel: str = ".loop-contract/verdict.json") -> dict:
    verdict = json.loads((pytester.path / rel).read_text())
    assert_valid_verdict(verdict)
    return verdict


def test_contract_met_exits_zero_and_prints_checklist(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest("--loop-contract")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*loop contract*",
            "loop-contract: demo (in-process) verdict: PASS (exit 0)",
            "  [[]x[]] add: add() adds (1/1 tests passed)",
            "*hard gate acceptance: PASS*",
        ]
    )
    verdict = read_verdict(pytester)
    assert verdict["verdict"] == "pass"
    assert verdict["trust"] == "in-process"
    assert verdict["summary"]["passed"] == 2
    assert verdict["baseline"]["recorded"] is False


def test_contract_not_met_exits_20(pytester: pytest.Pytester) -> None:
    make_project(pytester, calc=CALC_BAD)
    result = pytester.runpytest("--loop-contract")
    assert result.ret == 20
    verdict = read_verdict(pytester)
    assert verdict["verdict"] == "fail"
    assert verdict["dod"][0]["status"] == "failed"
    assert verdict["loop"]["decision"] == "continue"
    result.stdout.fnmatch_lines(["*[[] []] add*", "*failed: test_calc.py::test_add*"])


@pytest.mark.parametrize(
    "test_body, outcome",
    [
        (
            "@pytest.mark.skip(reason='later')\ndef test_add():\n    assert add(2, 3) == 5\n",
            "skipped",
        ),
        (
            "@pytest.mark.xfail(reason='known')\ndef test_add():\n    assert add(2, 3) == 6\n",
            "xfailed",
        ),
        (
            "@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n\n"
            "def test_add(broken):\n    assert add(2, 3) == 5\n",
            "error",
        ),
        ("def test_add_renamed():\n    assert add(2, 3) == 5\n", "missing"),
        (
            "@pytest.mark.xfail(reason='flaky', strict=False)\ndef test_add():\n"
            "    assert add(2, 3) == 5\n",
            "xpassed",
        ),
    ],
    ids=["skip", "xfail", "setup-error", "missing-node-id", "xpass"],
)
def test_acceptance_that_did_not_pass_is_a_failure(
    pytester: pytest.Pytester, test_body: str, outcome: str
) -> None:
    make_project(pytester, tests="import pytest\nfrom calc import add\n\n" + test_body)
    result = pytester.runpytest("--loop-contract")
    assert result.ret == 20
    verdict = read_verdict(pytester)
    assert verdict["verdict"] == "fail"
    assert [t["outcome"] for t in verdict["dod"][0]["tests"]] == [outcome]


def test_collection_error_fails_the_item(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="from calc import add\nimport does_not_exist\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n",
    )
    result = pytester.runpytest("--loop-contract")
    assert result.ret == 20
    verdict = read_verdict(pytester)
    assert verdict["dod"][0]["tests"][0]["outcome"] == "error"
    assert any(t["when"] == "collect" for t in verdict_records(verdict))


def test_teardown_error_turns_pass_into_error(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="import pytest\nfrom calc import add\n\n"
        "@pytest.fixture\ndef res():\n    yield\n    raise RuntimeError('teardown')\n\n"
        "def test_add(res):\n    assert add(2, 3) == 5\n",
    )
    assert pytester.runpytest("--loop-contract").ret == 20
    assert read_verdict(pytester)["dod"][0]["tests"][0]["outcome"] == "error"


def test_dod_marker_ties_tests_to_items(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        calc=CALC_OK,
        test_calc="""
import pytest
from calc import add

@pytest.mark.dod("add")
@pytest.mark.parametrize("a,b,c", [(1, 1, 2), (2, 2, 4)])
def test_marked(a, b, c):
    assert add(a, b) == c
""",
    )
    pytester.makefile(".yml", loopcontract="version: 1\nid: m\ndod:\n  - id: add\n    text: adds\n")
    pytester.syspathinsert()
    result = pytester.runpytest("--loop-contract", "--strict-markers")
    assert result.ret == 0
    verdict = read_verdict(pytester)
    assert sorted(t["nodeid"] for t in verdict["dod"][0]["tests"]) == [
        "test_calc.py::test_marked[1-1-2]",
        "test_calc.py::test_marked[2-2-4]",
    ]


def test_dod_markers_are_inherited_from_each_test_s_own_module_and_class(
    pytester: pytest.Pytester,
) -> None:
    """The marks above a test are read once per module or class: each test still gets its
    own chain's, and nothing of a neighbour's."""
    pytester.makepyfile(
        test_a="""
import pytest
pytestmark = pytest.mark.dod("mod")

@pytest.mark.dod("cls")
class TestC:
    @pytest.mark.dod("fn")
    def test_m(self):
        pass

    def test_n(self):
        pass

@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.dod("param"))])
def test_p(x):
    pass
""",
        test_b="class TestC:\n    def test_m(self):\n        pass\n\ndef test_p():\n    pass\n",
    )
    items = "".join(f"  - id: {i}\n    text: {i}\n" for i in ("mod", "cls", "fn", "param"))
    pytester.makefile(".yml", loopcontract=f"version: 1\nid: m\ndod:\n{items}")
    assert pytester.runpytest("--loop-contract", "--strict-markers").ret == 0
    tied = {d["id"]: sorted(t["nodeid"] for t in d["tests"]) for d in read_verdict(pytester)["dod"]}
    assert tied == {
        "mod": [
            "test_a.py::TestC::test_m",
            "test_a.py::TestC::test_n",
            "test_a.py::test_p[1]",
            "test_a.py::test_p[2]",
        ],
        "cls": ["test_a.py::TestC::test_m", "test_a.py::TestC::test_n"],
        "fn": ["test_a.py::TestC::test_m"],
        "param": ["test_a.py::test_p[2]"],
    }


def test_item_without_any_test_is_not_done(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    pytester.makefile(".yml", loopcontract="version: 1\nid: m\ndod:\n  - id: x\n    text: x\n")
    assert pytester.runpytest("--loop-contract").ret == 20
    assert read_verdict(pytester)["dod"][0]["status"] == "no_tests"


def test_loop_metric_feeds_a_measured_gate(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests=TESTS
        + (
            "\ndef test_speed(loop_metric):\n    loop_metric('latency_ms', 12.5)\n"
            "    loop_metric('latency_ms', 7.5)\n"
        ),
        extra="""gates:
  measured:
    - {id: latency, metric: metric.latency_ms, aggregate: max, op: "<=", threshold: 10, unit: ms}
    - {id: mean-latency, metric: metric.latency_ms, aggregate: mean, op: "<=", threshold: 10}
""",
    )
    result = pytester.runpytest("--loop-contract")
    verdict = read_verdict(pytester)
    gates = {g["id"]: g for g in verdict["gates"]["measured"]}
    assert gates["latency"]["status"] == "fail"
    assert gates["latency"]["observed"] == 12.5
    assert gates["mean-latency"]["status"] == "pass"
    assert gates["mean-latency"]["observed"] == 10.0
    assert result.ret == 20


def test_missing_metric_fails_its_gate(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        extra="""gates:
  measured:
    - {id: m, metric: metric.never_recorded, op: ">=", threshold: 0}
""",
    )
    assert pytester.runpytest("--loop-contract").ret == 20
    gate = read_verdict(pytester)["gates"]["measured"][0]
    assert gate["status"] == "missing"
    assert gate["observed"] is None


def test_command_gate(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        extra="""gates:
  hard:
    - {id: acceptance, kind: acceptance}
    - {id: lint, kind: command, run: ["python", "-c", "import sys; sys.exit(3)"], expect_exit: 3}
    - {id: absent, kind: command, run: ["no-such-binary-xyz"]}
""",
    )
    assert pytester.runpytest("--loop-contract").ret == 20
    hard = {g["id"]: g for g in read_verdict(pytester)["gates"]["hard"]}
    assert hard["lint"]["status"] == "pass"
    assert hard["absent"]["status"] == "error"
    assert "no-such-binary-xyz" in hard["absent"]["message"]


def test_verdict_path_option_and_ini_key(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    pytester.makeini(
        "[pytest]\nloop_contract = loopcontract.yml\nloop_contract_verdict = out/ini-verdict.json\n"
    )
    assert pytester.runpytest().ret == 0
    read_verdict(pytester, "out/ini-verdict.json")
    assert pytester.runpytest("--loop-contract-verdict=cli.json").ret == 0
    read_verdict(pytester, "cli.json")


def test_plugin_is_inert_without_contract(pytester: pytest.Pytester) -> None:
    make_project(pytester, calc=CALC_BAD)
    result = pytester.runpytest()
    assert result.ret == 1
    assert not (pytester.path / ".loop-contract").exists()


def test_invalid_contract_exits_26_with_location(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    (pytester.path / "loopcontract.yml").write_text("version: 1\nid: x\nmode: fixx\n")
    result = pytester.runpytest_subprocess("--loop-contract")
    assert result.ret == 26
    text = result.stdout.str() + result.stderr.str()
    assert "loopcontract.yml:3" in text
    assert "mode" in text
    assert "Traceback" not in text


def test_works_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(
        calc=CALC_OK,
        test_calc=TESTS
        + """
@pytest.mark.dod("add")
def test_marked_add(loop_metric):
    loop_metric("calls", 3)
    assert add(1, 1) == 2
""",
    )
    pytester.makefile(
        ".yml",
        loopcontract=CONTRACT.format(
            extra="""gates:
  measured:
    - {id: calls, metric: metric.calls, op: "==", threshold: 3}
"""
        ),
    )
    result = pytester.runpytest_subprocess(
        "--loop-contract", "-n", "2", "-p", "xdist", "--rootdir", str(pytester.path)
    )
    assert result.ret == 0, result.stdout.str()
    verdict = read_verdict(pytester)
    assert verdict["summary"]["passed"] == 3
    assert {t["nodeid"] for t in verdict["dod"][0]["tests"]} == {
        "test_calc.py::test_add",
        "test_calc.py::test_marked_add",
    }
    assert verdict["gates"]["measured"][0]["status"] == "pass"


def test_works_beside_pytest_cov(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_cov")
    make_project(
        pytester,
        extra="""gates:
  measured:
    - {id: cov, metric: coverage.percent, op: ">=", threshold: 50, unit: "%"}
""",
    )
    result = pytester.runpytest_subprocess("--loop-contract", "--cov=calc", "--cov-report=")
    assert result.ret == 0, result.stdout.str()
    gate = read_verdict(pytester)["gates"]["measured"][0]
    assert gate["status"] == "pass"
    assert gate["observed"] == 100.0


@pytest.mark.parametrize(
    "tests",
    [
        pytest.param(
            "import os\nfrom calc import add\n\ndef test_add():\n    os._exit(0)\n", id="test"
        ),
        # the earliest a test file's code runs: its import, at the start of collection
        pytest.param("import os\nos._exit(0)\n", id="collection"),
    ],
)
def test_run_that_dies_leaves_an_error_verdict(pytester: pytest.Pytester, tests: str) -> None:
    """A run that ends its process early leaves the ``error`` verdict it began with, never the
    ``pass`` of the run before it."""
    make_project(pytester)
    assert pytester.runpytest_subprocess("--loop-contract").ret == 0
    assert read_verdict(pytester)["verdict"] == "pass"
    pytester.makepyfile(test_calc=tests)
    result = pytester.runpytest_subprocess("--loop-contract")
    assert result.ret == 0  # the process lied with its exit code...
    verdict = read_verdict(pytester)
    assert verdict["verdict"] == "error"  # ...but the verdict on disk did not
    assert verdict["reasons"][0]["code"] == "run_incomplete"


def test_pinned_file_change_is_caught_in_process(pytester: pytest.Pytester) -> None:
    """With a baseline, in-process runs compare protected files with their pins."""
    _baseline_then_edit_tests(
        pytester, "def test_add():\n    assert True\n\ndef test_other():\n    assert True\n"
    )
    result = pytester.runpytest_subprocess("--loop-contract")
    assert result.ret == 25
    verdict = read_verdict(pytester)
    assert verdict["tamper"]["detected"]
    assert ("protected_path_modified", "test_calc.py") in {
        (f["code"], f.get("path")) for f in verdict["tamper"]["findings"]
    }


def _baseline_then_edit_tests(pytester: pytest.Pytester, edited_tests: str) -> None:
    """A committed project with a recorded baseline (add() broken), then the pinned test file
    replaced by ``edited_tests``."""
    import subprocess
    import sys

    make_project(pytester, calc=CALC_BAD)
    (pytester.path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.email=t@e.invalid", "-c", "user.name=t", "commit", "-qm", "b"],
    ):
        subprocess.run(["git", *args], cwd=pytester.path, check=True, capture_output=True)
    base = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", "baseline"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
    )
    assert base.returncode == 0, base.stdout + base.stderr
    (pytester.path / "test_calc.py").write_text(edited_tests)


def test_tests_that_break_git_do_not_blind_the_pin_check(pytester: pytest.Pytester) -> None:
    """The cheat: beside an edited pinned test, a test empties ``PATH`` and points ``GIT_DIR``
    nowhere for the rest of the session, so git found nothing when the evidence was read at
    the session's end. Git now runs with the environment kept before the first test, and the
    edit is still caught."""
    _baseline_then_edit_tests(
        pytester,
        "import os, time\n\ndef test_add():\n    assert True\n\ndef test_other():\n"
        "    os.environ['PATH'] = ''\n    os.environ['GIT_DIR'] = '/nowhere'\n"
        "    time.sleep(0.3)\n",
    )
    result = pytester.runpytest_subprocess("--loop-contract")
    verdict = read_verdict(pytester)
    assert result.ret == 25, result.stdout.str()
    assert ("protected_path_modified", "test_calc.py") in {
        (f["code"], f.get("path")) for f in verdict["tamper"]["findings"]
    }
    assert len(verdict["environment"]["commit"]) == 40  # git ran, with the real PATH


def test_a_test_that_rewrites_the_baseline_does_not_move_the_pins(
    pytester: pytest.Pytester,
) -> None:
    """The cheat: beside an edited pinned test, a test re-pins that file in ``baseline.json``
    to its edited bytes, so the pin check at the session's end found nothing changed. The
    baseline is read when the session's contract is loaded, before any test runs."""
    cheat = (
        "import hashlib, json, subprocess\n\n"
        "def test_add():\n    assert True\n\n"
        "def test_other():\n"
        "    path = '.loop-contract/baseline.json'\n"
        "    record = json.load(open(path))\n"
        "    data = open('test_calc.py', 'rb').read()\n"
        "    blob = subprocess.run(['git', 'hash-object', 'test_calc.py'], capture_output=True,\n"
        "                          text=True, check=True).stdout.strip()\n"
        "    record['pins']['test_calc.py'].update(\n"
        "        sha256=hashlib.sha256(data).hexdigest(), blob=blob)\n"
        "    json.dump(record, open(path, 'w'))\n"
    )
    _baseline_then_edit_tests(pytester, cheat)
    result = pytester.runpytest_subprocess("--loop-contract")
    verdict = read_verdict(pytester)
    assert result.ret == 25, result.stdout.str()
    assert ("protected_path_modified", "test_calc.py") in {
        (f["code"], f.get("path")) for f in verdict["tamper"]["findings"]
    }


def test_results_path(tmp_path: Path) -> None:
    """Sanity: the package exposes the verdict schema validator the tests rely on."""
    from pytest_loopcontract.verdict import validate_verdict

    assert validate_verdict({})  # an empty document is not a verdict


EGRESS_TESTS = """\
import socket
import urllib.request

def test_add():
    from calc import add
    assert add(2, 3) == 5

def test_blocked_host():
    # a monkeypatch cannot hide the attempt: the audit hook sits below socket.socket
    socket.socket.connect = lambda self, addr: None
    try:
        socket.getaddrinfo("example.com", 443)
    except PermissionError as exc:
        assert "example.com" in str(exc)
    else:
        raise AssertionError("egress was not blocked")

def test_loopback_allowed():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    client.close()
    server.close()
"""


def test_egress_blocks_and_records(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=EGRESS_TESTS, extra="egress:\n  allow: [pypi.org]\n")
    result = pytester.runpytest_subprocess("--loop-contract")
    assert result.ret == 0, result.stdout.str()
    verdict = read_verdict(pytester)
    egress = verdict["egress"]
    assert egress["allow"] == ["pypi.org"]
    blocked = [a for a in egress["attempts"] if not a["allowed"]]
    assert [(a["host"], a["test"]) for a in blocked] == [
        ("example.com", "test_calc.py::test_blocked_host")
    ]
    assert egress["blocked"] == 1
    assert any(a["host"] == "127.0.0.1" and a["allowed"] for a in egress["attempts"])


def test_egress_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, tests=EGRESS_TESTS, extra="egress:\n  allow: []\n")
    result = pytester.runpytest_subprocess("--loop-contract", "-p", "xdist", "-n", "2")
    assert result.ret == 0, result.stdout.str()
    assert read_verdict(pytester)["egress"]["blocked"] == 1


def test_failed_subtest_fails_its_test(pytester: pytest.Pytester) -> None:
    """unittest's subTest: the parent call report says passed; a failed subtest must win."""
    pytester.makepyfile(
        test_calc="""
import unittest

class Calc(unittest.TestCase):
    def test_add(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)
"""
    )
    pytester.makefile(
        ".yml",
        loopcontract=(
            "version: 1\nid: s\ndod:\n  - id: add\n    text: adds\n"
            "    tests: [test_calc.py::Calc::test_add]\n"
        ),
    )
    assert pytester.runpytest("--loop-contract").ret == 20
    [test] = read_verdict(pytester)["dod"][0]["tests"]
    assert test["outcome"] == "failed"


def test_doctest_items_are_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mod='def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    pytester.makefile(
        ".yml",
        loopcontract=(
            "version: 1\nid: d\ndod:\n  - id: f\n    text: f\n    tests: [mod.py::mod.f]\n"
        ),
    )
    assert pytester.runpytest("--loop-contract", "--doctest-modules").ret == 0
    assert read_verdict(pytester)["dod"][0]["status"] == "done"


def test_tests_that_break_the_repository_do_not_pass_unchecked(
    pytester: pytest.Pytester,
) -> None:
    """The cheat: beside an edited pinned test, a test writes garbage over git's config, so
    the snapshot at the session's end fails and the verdict would carry no pin findings at
    all. A baseline whose pins could not be checked is an error that names git's words."""
    cheat = (
        "def test_add():\n    assert True\n\n"
        "def test_other():\n"
        "    open('.git/config', 'w').write('not a config [')\n"
    )
    _baseline_then_edit_tests(pytester, cheat)
    result = pytester.runpytest_subprocess("--loop-contract")
    verdict = read_verdict(pytester)
    assert verdict["verdict"] == "error", result.stdout.str()
    assert result.ret != 0
    reasons = {r["code"]: r["message"] for r in verdict["reasons"]}
    assert "pins_unchecked" in reasons
    assert "config" in reasons["pins_unchecked"]


def test_garbage_over_the_index_leaves_the_pins_checked(pytester: pytest.Pytester) -> None:
    """The same cheat on git's index (which made the snapshot fail while it was copied at the
    session's end): the snapshot's index is copied while the tests are collected, before any
    test runs, so the pins are still compared and the edited test is found."""
    cheat = (
        "def test_add():\n    assert True\n\n"
        "def test_other():\n"
        "    open('.git/index', 'wb').write(b'not an index')\n"
    )
    _baseline_then_edit_tests(pytester, cheat)
    result = pytester.runpytest_subprocess("--loop-contract")
    verdict = read_verdict(pytester)
    codes = {f["code"] for f in verdict["tamper"]["findings"]}
    assert "protected_path_modified" in codes, result.stdout.str()
    assert verdict["verdict"] != "pass" and result.ret != 0


def test_a_test_that_commits_the_tree_does_not_make_it_clean(pytester: pytest.Pytester) -> None:
    """The cheat: a test commits the work tree (the edited pinned test with it), so that git,
    asked at the session's end, saw a clean tree at a new commit. The commit is the one the
    session started from, read while the tests were collected; against it the tree is dirty,
    and the pinned test still differs from its pin."""
    import subprocess

    cheat = (
        "import subprocess\n\n"
        "def test_add():\n    assert True\n\n"
        "def test_commit():\n"
        "    subprocess.run(['git', 'add', '-A'], check=True)\n"
        "    subprocess.run(['git', '-c', 'user.email=t@e.invalid', '-c', 'user.name=t',\n"
        "                    'commit', '-qm', 'all green'], check=True)\n"
    )
    _baseline_then_edit_tests(pytester, cheat)
    started = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=pytester.path, capture_output=True, text=True
    ).stdout.strip()
    result = pytester.runpytest_subprocess("--loop-contract")
    verdict = read_verdict(pytester)
    assert verdict["environment"]["commit"] == started, result.stdout.str()
    assert verdict["environment"]["dirty"] is True
    ended = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=pytester.path, capture_output=True, text=True
    ).stdout.strip()
    assert ended != started  # the test did commit
    codes = {f["code"] for f in verdict["tamper"]["findings"]}
    assert "protected_path_modified" in codes
    assert verdict["verdict"] != "pass"
