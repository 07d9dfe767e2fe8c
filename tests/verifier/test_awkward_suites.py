"""Suites the way real projects write them, judged right: undecodable bytes in node ids and
messages, ids computed at collection time. Real baselines and real ``verify`` runs.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_loopcontract.idsets import unpack_ids
from pytest_loopcontract.verdict_outcomes import verdict_outcomes, verdict_records
from testing.verifier_project import (
    FIXED,
    PYPROJECT,
    baseline_ok,
    cli,
    finding_codes,
    make_repo,
    read_baseline,
    verify_json,
)

SURROGATE_TESTS = """\
import os

import pytest

NAME = os.fsdecode(b"caf\\xff.txt")  # an undecodable file name, as os.listdir returns it


@pytest.mark.parametrize("name", [NAME])
def test_undecodable_name(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(b"x")
    assert os.fsdecode(os.listdir(tmp_path)[0]) == name


def test_message_with_surrogates():
    assert NAME == NAME
"""

FAILING_WITH_SURROGATES = """\
import os

NAME = os.fsdecode(b"caf\\xff.txt")


def test_reports_an_undecodable_name():
    assert NAME == "cafe.txt"
"""

ESCAPING_OFF = PYPROJECT + (
    "disable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n"
)


def test_lone_surrogates_in_ids_and_messages_survive(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "mini",
        **{
            "pyproject.toml": ESCAPING_OFF,
            "tests/test_names.py": SURROGATE_TESTS,
            "tests/test_failing_names.py": FAILING_WITH_SURROGATES,
        },
    )
    baseline_ok(repo)
    raw = (repo / ".loop-contract/baseline.json").read_bytes()
    raw.decode("utf-8")  # valid UTF-8: the surrogate travels as a JSON escape
    recorded = read_baseline(repo)
    surrogate_ids = [n for n in unpack_ids(recorded["pass_to_pass"]) if "\udcff" in n]
    assert surrogate_ids, recorded["pass_to_pass"]
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 0, verdict["reasons"]
    assert "tests_missing" not in finding_codes(verdict)
    ran = verdict_outcomes(verdict)
    assert all(ran[n] == "passed" for n in surrogate_ids)
    failing = [t for t in verdict_records(verdict) if t["outcome"] == "failed"]
    assert any("\udcff" in t.get("message", "") for t in failing)
    printed = cli(repo, "verify")
    assert printed.returncode == 0
    assert "Traceback" not in printed.stderr


def test_in_process_verdict_with_surrogates_is_written(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = make_repo(
        tmp_path / "mini",
        **{"pyproject.toml": ESCAPING_OFF, "tests/test_names.py": SURROGATE_TESTS},
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--loop-contract"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "UnicodeEncodeError" not in done.stdout + done.stderr
    verdict = json.loads((repo / ".loop-contract/verdict.json").read_text("utf-8"))
    assert any("\udcff" in nodeid for nodeid in verdict_outcomes(verdict))


TIME_PARAMETRIZED = """\
import time

import pytest


@pytest.mark.parametrize("stamp", [time.time_ns()])
def test_stamped(stamp):
    assert stamp > 0


def test_stable():
    assert True
"""


def test_ids_computed_at_collection_are_unstable_not_tampering(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini", **{"tests/test_stamps.py": TIME_PARAMETRIZED})
    baseline_ok(repo)
    recorded = read_baseline(repo)
    unstable = [u["nodeid"] for u in recorded["extra"]["unstable"]]
    assert len(unstable) == 1 and unstable[0].startswith("tests/test_stamps.py::test_stamped[")
    assert unstable[0] not in unpack_ids(recorded["pass_to_pass"])
    assert "tests/test_stamps.py::test_stable" in unpack_ids(recorded["pass_to_pass"])
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 0, (verdict["reasons"], verdict["tamper"])
    assert "tests_missing" not in finding_codes(verdict)
    assert [u["nodeid"] for u in verdict["baseline"]["unstable"]] == unstable


FLAKY = """\
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sometimes_slow():
    # fails on the first run of a session that finds the trigger, passes when run again
    seen = ROOT / ".flaky-seen"
    if (ROOT / "flaky-trigger").exists() and not seen.exists():
        seen.write_text("x")
        raise AssertionError("timed out waiting for the worker")
"""


def _flaky_repo(tmp_path: Path, reruns: int) -> Path:
    from testing.verifier_project import contract

    text = contract() + f"pytest: {{reruns: {reruns}}}\n"
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text, "tests/test_flaky.py": FLAKY})
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "flaky-trigger").write_text("on")
    return repo


def test_a_flaky_pass_to_pass_test_is_rerun_and_recorded(tmp_path: Path) -> None:
    code, verdict = verify_json(_flaky_repo(tmp_path, reruns=2))
    assert code == 0, verdict["reasons"]
    assert verdict["reruns"] == [
        {
            "nodeid": "tests/test_flaky.py::test_sometimes_slow",
            "outcomes": ["passed"],
            "final": "passed",
        }
    ]


def test_without_reruns_the_flaky_failure_fails_the_gate(tmp_path: Path) -> None:
    code, verdict = verify_json(_flaky_repo(tmp_path, reruns=0))
    assert code == 20
    assert "reruns" not in verdict
    [gate] = [g for g in verdict["gates"]["hard"] if g["id"] == "no-regressions"]
    assert gate["status"] == "fail"


ACCEPTANCE_FLAKY = """\
from pathlib import Path

from mini.core import double, triple

ROOT = Path(__file__).resolve().parent.parent


def test_double(two):
    assert double(two) == 4


def test_triple():
    seen = ROOT / ".flaky-seen"
    if not seen.exists():
        seen.write_text("x")
        raise AssertionError("first try")
    assert triple(2) == 6
"""


def test_acceptance_tests_are_never_rerun_into_a_pass(tmp_path: Path) -> None:
    from testing.verifier_project import contract

    text = contract() + "pytest: {reruns: 3}\n"
    repo = make_repo(
        tmp_path / "mini", **{"loopcontract.yml": text, "tests/test_core.py": ACCEPTANCE_FLAKY}
    )
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 20
    assert "reruns" not in verdict


# Each test notes its name in a file outside the tree (a folder the sandbox leaves writable),
# once per run of it: what every pytest run of one verify ran, counted.
NOTING = """\
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ran(name):
    with open({log!r}, "a", encoding="utf-8") as fh:
        fh.write(name + "\\n")
"""

ACCEPTANCE_AMONG_OTHERS = """\
from mini.core import double, triple
from noting import ran


def test_double(two):
    ran("test_double")
    assert double(two) == 4


def test_triple():
    ran("test_triple")
    assert triple(2) == 6


def test_neighbour():
    ran("test_neighbour")
    assert double(1) == 2


class TestMore:
    def test_in_a_class(self):
        ran("test_in_a_class")
        assert triple(0) == 0
"""

FLAKY_AMONG_OTHERS = """\
from noting import ROOT, ran


def test_sometimes_slow():
    ran("test_sometimes_slow")
    seen = ROOT / ".flaky-seen"
    if (ROOT / "flaky-trigger").exists() and not seen.exists():
        seen.write_text("x")
        raise AssertionError("timed out waiting for the worker")


def test_beside_it():
    ran("test_beside_it")
"""


def test_a_second_run_runs_its_node_ids_only_when_pytest_args_name_whole_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract's ``pytest.args`` names the suite's files, as a project that runs part
    of its tests does. Verify's runs after the main one (a flaky test's rerun) get those
    args too, but run only their node ids: no test of those files runs a second time, and
    the referee's twins stand in for the acceptance test alone."""
    from testing.verifier_project import contract

    window = tmp_path / "window"
    window.mkdir()
    log = window / "ran.log"
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", str(window))
    text = contract() + "pytest: {args: [tests/test_core.py, tests/test_flaky.py], reruns: 1}\n"
    repo = make_repo(
        tmp_path / "mini",
        **{
            "loopcontract.yml": text,
            "tests/noting.py": NOTING.format(log=str(log)),
            "tests/test_core.py": ACCEPTANCE_AMONG_OTHERS,
            "tests/test_flaky.py": FLAKY_AMONG_OTHERS,
        },
    )
    baseline_ok(repo)
    log.unlink()
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "flaky-trigger").write_text("on")
    code, verdict = verify_json(repo)
    assert code == 0, verdict["reasons"]
    assert [r["nodeid"] for r in verdict["reruns"]] == ["tests/test_flaky.py::test_sometimes_slow"]
    twins = next(c for c in verdict["tamper"]["checks"] if c["id"] == "twins")
    assert twins["tests"] == ["tests/test_core.py::test_triple"], twins
    runs = Counter(log.read_text("utf-8").split())
    assert runs["test_sometimes_slow"] == 2  # the main run, then its rerun alone
    assert runs["test_triple"] > 1  # the referee's copy, then its twins
    others = ("test_double", "test_neighbour", "test_in_a_class", "test_beside_it")
    assert {name: runs[name] for name in others} == dict.fromkeys(others, 1), runs


def test_in_process_run_applies_the_contracts_pytest_args(tmp_path: Path) -> None:
    """``pytest --loop-contract`` selects what the isolated run selects (``pytest.args``)."""
    import subprocess
    import sys

    from testing.verifier_project import contract

    tests = "def test_triple():\n    assert True\n\n\ndef test_slow():\n    assert False\n"
    text = contract() + 'pytest: {args: ["-k", "not slow"]}\n'
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text, "tests/test_core.py": tests})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--loop-contract"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    verdict = json.loads((repo / ".loop-contract/verdict.json").read_text("utf-8"))
    outcomes = verdict_outcomes(verdict)
    assert outcomes.get("tests/test_core.py::test_slow") in (None, "deselected"), done.stdout
    assert outcomes["tests/test_core.py::test_triple"] == "passed"


def test_a_generated_ignored_file_the_suite_needs_is_copied_and_pinned(tmp_path: Path) -> None:
    from testing.verifier_project import contract

    uses_version = (
        "from mini._version import VERSION\n\n\ndef test_version():\n    assert VERSION == '1.0'\n"
    )
    text = contract() + "pytest: {include_untracked: ['src/mini/_version.py']}\n"
    repo = make_repo(
        tmp_path / "mini",
        **{
            "loopcontract.yml": text,
            ".gitignore": ".loop-contract/\n__pycache__/\nsrc/mini/_version.py\n",
            "tests/test_version.py": uses_version,
        },
    )
    (repo / "src/mini/_version.py").write_text("VERSION = '1.0'\n")  # generated, ignored
    baseline_ok(repo)
    recorded = read_baseline(repo)
    assert "tests/test_version.py::test_version" in unpack_ids(recorded["pass_to_pass"])
    assert "src/mini/_version.py" in recorded["extra"]["included"]
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "src/mini/_version.py").write_text("VERSION = 'cheat'\n")  # the pin wins
    code, verdict = verify_json(repo)
    assert code == 0, verdict["reasons"]


HELPER = "def assert_equal(expected, result):\n    assert expected == result\n"
USES_HELPER = (
    "from common import assert_equal\nfrom mini.core import double, triple\n\n\n"
    "def test_double(two):\n    assert_equal(4, double(two))\n\n\n"
    "def test_triple():\n    assert_equal(6, triple(2))\n"
)


def test_a_test_helper_is_part_of_the_referee(tmp_path: Path) -> None:
    """tabulate's tests assert through ``test/common.py``; a candidate that guts the helper
    (the library still broken) is tampering, and the honest fix still passes."""
    repo = make_repo(
        tmp_path / "mini",
        **{
            "tests/common.py": HELPER,
            "tests/test_core.py": USES_HELPER,
            "tests/data/golden.txt": "6\n",
        },
    )
    baseline_ok(repo)
    pins = read_baseline(repo)["pins"]
    assert {"tests/common.py", "tests/data/golden.txt"} <= set(pins)
    (repo / "tests/common.py").write_text(
        "def assert_equal(expected, result):\n    assert expected == result or True\n"
    )
    code, verdict = verify_json(repo)
    assert code == 25
    assert "protected_path_modified" in finding_codes(verdict)
    (repo / "tests/common.py").write_text(HELPER)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 0, verdict["reasons"]


def test_a_test_beside_the_code_does_not_pin_the_code(tmp_path: Path) -> None:
    from testing.verifier_project import contract

    beside = "from mini.core import triple\n\n\ndef test_triple():\n    assert triple(2) == 6\n"
    text = contract(tests=("src/mini/test_core.py::test_triple",))
    settings = PYPROJECT.replace('testpaths = ["tests"]', 'testpaths = ["tests", "src"]')
    repo = make_repo(
        tmp_path / "mini",
        **{"src/mini/test_core.py": beside, "loopcontract.yml": text, "pyproject.toml": settings},
    )
    baseline_ok(repo)
    assert "src/mini/core.py" not in read_baseline(repo)["pins"]
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 0, verdict["reasons"]
