"""The isolated launcher (``loop-contract verify``) against bad input, plus its building blocks.

End-to-end tests run the real CLI in a subprocess on real git repositories: runs that crash,
hang, flood stdout or never write results must still end in a valid verdict that says why. The
pure pieces the launcher relies on (cross-checks, diff scanning, pins, boundaries, globs) are
tested directly with constructed input.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import py_compile
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.fsio import utc_now
from pytest_loopcontract.verdict_outcomes import verdict_records
from pytest_loopcontract.verifier.evaluate import Evidence, evaluate
from pytest_loopcontract.verifier.results import RunResults, TestRecord
from pytest_loopcontract.verifier.run_outcome import run_errors
from pytest_loopcontract.verifier.runner import run_pytest
from pytest_loopcontract.verifier.tamper.harness_patterns import harness_findings
from pytest_loopcontract.verifier.tamper.pins import (
    boundary_findings,
    crosscheck_findings,
    pin_findings,
)
from pytest_loopcontract.workspace import DEFAULT_PROTECT, Pin, TreeEntry, match_glob
from testing.repos import assert_valid_verdict, git, init_repo, run_cli
from testing.verifier_project import (
    BUGGY,
    FIXED,
    PY,
    TESTS,
    baseline_ok,
    cli,
    contract,
    finding_codes,
    make_repo,
    no_traceback,
    probed_repo,
    probes,
    processes_with,
    read_baseline,
    reason_codes,
    verify_json,
    with_pytest_settings,
)

HAS_XDIST = importlib.util.find_spec("xdist") is not None
HAS_HYPOTHESIS = importlib.util.find_spec("hypothesis") is not None


@pytest.fixture(autouse=True)
def outside_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside the repository that the sandbox leaves writable, so that the tests'
    probes can report what the confined run saw (``LOOP_CONTRACT_SANDBOX_WRITABLE``)."""
    folder = tmp_path / "out"
    folder.mkdir()
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", str(folder))
    return folder


# --- B. verify with bad input ----------------------------------------------------------------


def test_verify_without_baseline_says_to_run_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    result = cli(repo, "verify")
    assert result.returncode == 27
    assert "run 'loop-contract baseline'" in result.stderr
    no_traceback(result)
    assert not (repo / ".loop-contract/verdict.json").exists()


def test_verify_with_a_damaged_baseline_says_to_take_it_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    path = repo / ".loop-contract/baseline.json"
    data = json.loads(path.read_text("utf-8"))
    del data["pins"]
    path.write_text(json.dumps(data), "utf-8")
    result = cli(repo, "verify")
    assert result.returncode == 27
    assert "baseline record is damaged" in result.stderr
    no_traceback(result)

    path.write_text("{not json", "utf-8")
    result = cli(repo, "verify")
    assert result.returncode == 27
    assert "loop-contract baseline' again" in result.stderr
    no_traceback(result)


# Candidate code that breaks pytest's own reporting when it is imported. It reaches the
# internals in a way neither the diff scanner nor the reward rules can see (a computed module
# name), so the only evidence is the crash itself.
BREAKS_PYTEST = (
    """\
import importlib

_reports = importlib.import_module("_py" + "test.reports")
_cls = getattr(_reports, "Test" + "Report")


def _boom(*args, **kwargs):
    raise RuntimeError("the referee is broken")


_cls.from_item_and_call = classmethod(_boom)
"""
    + FIXED
)


def test_internal_error_caused_by_the_candidate_is_an_error_verdict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(BREAKS_PYTEST, "utf-8")
    code, verdict = verify_json(repo)
    assert code == 20
    assert verdict["verdict"] == "error"
    assert verdict["loop"]["decision"] == "continue"
    reasons = {r["code"]: r["message"] for r in verdict["reasons"]}
    assert "pytest_internal_error" in reasons
    assert "the referee is broken" in reasons["pytest_internal_error"]
    # the tests the crash prevented are not reported as hidden by the candidate
    assert "tests_missing" not in finding_codes(verdict)
    assert verdict["dod"][0]["status"] != "done"


@pytest.mark.parametrize("hook", ["pytest_sessionstart", "pytest_collection_modifyitems"])
def test_internal_error_maps_to_an_error_verdict(tmp_path: Path, hook: str) -> None:
    work = tmp_path / "scratch"
    work.mkdir()
    (work / "conftest.py").write_text(
        f"def {hook}(*args, **kwargs):\n    raise RuntimeError('hook exploded')\n", "utf-8"
    )
    (work / "test_one.py").write_text("def test_one():\n    assert True\n", "utf-8")
    nonce = secrets.token_hex(8)
    run = run_pytest(work, nonce=nonce, autoload=False, timeout=120)
    assert run.exit_code == 3
    assert not run.timed_out
    assert "INTERNALERROR" in run.output_tail
    errors = run_errors(
        run.exit_code, run.timed_out, run.results, run.results_error, run.output_tail, 120
    )
    assert [e.code for e in errors] == ["pytest_internal_error"]
    assert "hook exploded" in errors[0].message

    contract_doc = parse_contract(
        b"version: 1\nid: x\nmode: fix\n"
        b"dod:\n  - id: one\n    text: one\n    tests: [test_one.py::test_one]\n",
        Path("loopcontract.yml"),
    )
    evidence = Evidence(
        trust="isolated",
        nonce=nonce,
        workdir=work,
        contract_relpath="loopcontract.yml",
        started=utc_now(),
        started_monotonic=time.monotonic(),
        fail_to_pass=["test_one.py::test_one"],
        pass_to_pass=[],
        errors=errors,
    )
    verdict = evaluate(contract_doc, run.results or RunResults(nonce=nonce), evidence)
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "error"
    assert verdict["exit_code"] == 20
    assert "pytest_internal_error" in reason_codes(verdict)


@pytest.mark.parametrize(
    ("exit_code", "timed_out", "has_results", "code"),
    [
        (None, True, False, "timeout"),
        (3, False, True, "pytest_internal_error"),
        (2, False, True, "pytest_interrupted"),
        (4, False, False, "pytest_usage_error"),
        (-9, False, False, "pytest_killed"),
        (1, False, False, "no_results"),
        (5, False, True, "no_tests"),
        (7, False, True, "pytest_exit_code"),
    ],
)
def test_run_error_mapping(
    exit_code: int | None, timed_out: bool, has_results: bool, code: str
) -> None:
    results = RunResults(nonce="n", tests=[TestRecord("t.py::a", "passed")])
    errors = run_errors(
        exit_code,
        timed_out,
        results if has_results else None,
        "" if has_results else "the plugin wrote no results",
        "line one\nlast words\n",
        3,
    )
    assert [e.code for e in errors] == [code]


def test_a_run_under_coverage_without_coverage_says_how_to_install_it(tmp_path: Path) -> None:
    """coverage.py gone from the test interpreter since the baseline: the coverage gates' run
    never starts, and the reason ends with the command that puts it back."""
    from pytest_loopcontract.verifier.testenv import probe_test_env

    bare = tmp_path / "bare venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    testenv = probe_test_env(str(bare / "bin" / "python"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_one.py").write_text("def test_one():\n    assert True\n", "utf-8")
    run = run_pytest(
        work,
        nonce=secrets.token_hex(8),
        autoload=False,
        timeout=120,
        coverage_data=tmp_path / "coverage.data",
        testenv=testenv,
    )

    errors = run_errors(
        run.exit_code,
        run.timed_out,
        run.results,
        run.results_error,
        run.output_tail,
        120,
        coverage_python=testenv.python,
    )

    [error] = errors
    assert error.code == "no_results"
    assert error.message.endswith(
        f"install it there ('{testenv.python}' -m pip install coverage) and verify again"
    ), error.message


def test_run_error_mapping_for_normal_runs() -> None:
    results = RunResults(nonce="n", tests=[TestRecord("t.py::a", "failed")])
    assert run_errors(1, False, results, "", "", 3) == []
    assert run_errors(0, False, results, "", "", 3) == []
    assert [e.code for e in run_errors(0, False, RunResults(), "", "", 3)] == ["no_tests"]


HARD_EXIT_VISIBLE = "import os\n\n\n" + FIXED.replace(
    "    return x * 3\n", "    os._exit(1)\n    return x * 3\n"
)
HARD_EXIT_HIDDEN = "import os\n\n\n" + FIXED.replace(
    "    return x * 3\n", '    getattr(os, "_ex" + "it")(1)\n    return x * 3\n'
)


def test_hard_exit_in_candidate_code_is_caught(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(HARD_EXIT_VISIBLE, "utf-8")
    code, verdict = verify_json(repo)
    # the run left no results (no_results) and the diff shows why (a harness finding);
    # tampering outranks the error, so the verdict is a fail with the tamper exit code
    assert "no_results" in reason_codes(verdict)
    findings = [f for f in verdict["tamper"]["findings"] if f["code"] == "harness_manipulation"]
    assert [(f["path"], f["line"]) for f in findings] == [("src/mini/core.py", 9)]
    assert "os._exit" in findings[0]["message"]
    assert verdict["tamper"]["detected"] is True
    assert verdict["verdict"] == "fail"
    assert code == 25


def test_hidden_hard_exit_is_an_error_without_results(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(HARD_EXIT_HIDDEN, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "error"
    assert code == 20
    reasons = {r["code"]: r["message"] for r in verdict["reasons"]}
    assert "no_results" in reasons
    assert "exit 1" in reasons["no_results"]
    assert verdict_records(verdict) == []
    assert verdict["dod"][0]["status"] != "done"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_hanging_test_times_out_and_its_process_group_is_killed(tmp_path: Path) -> None:
    token = f"hang-{secrets.token_hex(6)}"
    started = tmp_path / "out" / "started"
    repo = make_repo(
        tmp_path / "mini",
        **{"loopcontract.yml": with_pytest_settings(contract(), "timeout: 12")},
    )
    baseline_ok(repo)
    hang = (
        "import subprocess\nimport sys\nimport time\n\n\n"
        "def double(x):\n    return x + x\n\n\n"
        "def triple(x):\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
        f"    open({str(started)!r}, 'w').close()\n"
        "    time.sleep(600)\n"
    )
    (repo / "src/mini/core.py").write_text(hang, "utf-8")
    try:
        code, verdict = verify_json(repo)
        assert verdict["verdict"] == "error"
        assert code == 20
        reasons = {r["code"]: r["message"] for r in verdict["reasons"]}
        assert "timeout" in reasons
        assert "12s timeout" in reasons["timeout"]
        assert started.exists()  # the child really started
        assert processes_with(token) == []  # and nothing of the run is left when verify returns
    finally:
        for pid in processes_with(token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def test_twenty_megabytes_on_stdout_still_give_a_verdict(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "mini",
        **{"loopcontract.yml": with_pytest_settings(contract(), 'args: ["-s"]')},
    )
    baseline_ok(repo)
    loud = "import sys\n\n\n" + FIXED.replace(
        "    return x * 3\n",
        "    sys.stdout.write('x' * 20_000_000 + '\\n')\n    sys.stdout.flush()\n"
        "    return x * 3\n",
    )
    (repo / "src/mini/core.py").write_text(loud, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert code == 0
    assert len(json.dumps(verdict)) < 200_000


def test_twenty_megabytes_of_captured_output_in_a_failure_stay_out_of_the_verdict(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    loud = "import sys\n\n\n" + BUGGY.replace(
        "    return x * 2\n", "    print('y' * 20_000_000)\n    return x * 2\n"
    )
    (repo / "src/mini/core.py").write_text(loud, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "fail"
    assert code == 20
    assert len(json.dumps(verdict)) < 200_000
    failed = [t for t in verdict_records(verdict) if t["outcome"] == "failed"]
    assert [t["nodeid"] for t in failed] == ["tests/test_core.py::test_triple"]


def test_hanging_sensor_command_is_a_gate_error(tmp_path: Path) -> None:
    text = contract() + (
        "gates:\n"
        "  hard:\n"
        "    - {id: acceptance, kind: acceptance}\n"
        "    - {id: no-regressions, kind: pass_to_pass}\n"
        "  measured:\n"
        "    - id: slow-sensor\n"
        "      metric: sensor.x\n"
        '      op: ">="\n'
        "      threshold: 1\n"
        "      source:\n"
        f"        command: [{json.dumps(PY)}, '-c', 'import time; time.sleep(60)']\n"
        "        timeout: 1\n"
    )
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    gate = {g["id"]: g for g in verdict["gates"]["measured"]}["slow-sensor"]
    assert gate["status"] == "error"
    assert "timed out after 1 s" in gate["message"]
    assert gate["observed"] is None
    assert verdict["verdict"] == "fail"
    assert "metric_missing" in reason_codes(verdict)
    assert code == 20
    # the hard gates were still measured
    assert all(g["status"] == "pass" for g in verdict["gates"]["hard"])


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (contract().replace("mode: fix", "mode: sideways"), 4),
        (contract() + "budget:\n  iterations: @5\n", 12),
        (contract().replace("id: mini\n", "id: mini\nid: again\n"), 3),
    ],
    ids=["bad-enum", "yaml-syntax", "duplicate-key"],
)
def test_malformed_contract_committed_at_base(tmp_path: Path, text: str, line: int) -> None:
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    result = cli(repo, "baseline")
    assert result.returncode == 26, result.stderr
    assert f"loopcontract.yml:{line}" in result.stderr, result.stderr
    no_traceback(result)
    assert not (repo / ".loop-contract/baseline.json").exists()


def test_malformed_contract_in_the_candidate_does_not_change_the_rules(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "loopcontract.yml").write_text("version: [\n", "utf-8")
    code, verdict = verify_json(repo)
    assert code == 25
    assert "contract_modified" in finding_codes(verdict)
    assert verdict["contract"]["id"] == "mini"


# --- C. cross-checks and diff scanning as units ------------------------------------------------


def results_with(**kwargs: Any) -> RunResults:
    base: dict[str, Any] = {
        "nonce": "n1",
        "tests": [
            TestRecord("tests/test_a.py::ok", "passed"),
            TestRecord("tests/test_a.py::bad", "failed"),
        ],
        "pytest_exitstatus": 1,
        "plugins": ["xdist"],
    }
    base.update(kwargs)
    return RunResults(**base)


def crosscheck(results: RunResults, *, exit_code: int = 1, expected: tuple[str, ...] = ()) -> Any:
    return crosscheck_findings(
        results,
        nonce="n1",
        exit_code=exit_code,
        expected=expected or ("tests/test_a.py::ok", "tests/test_a.py::bad"),
        allowed_plugins=["xdist"],
    )


def test_crosscheck_clean_run_has_no_findings() -> None:
    assert crosscheck(results_with()) == []


def test_crosscheck_nonce_mismatch() -> None:
    findings = crosscheck(results_with(nonce="stale"))
    assert [f.code for f in findings] == ["nonce_mismatch"]


def test_crosscheck_exit_zero_with_failures() -> None:
    findings = crosscheck(results_with(pytest_exitstatus=0), exit_code=0)
    assert [f.code for f in findings] == ["exit_code_mismatch"]
    assert "exited 0" in findings[0].message


def test_crosscheck_exit_zero_with_a_collection_error() -> None:
    results = results_with(
        tests=[TestRecord("tests/test_a.py::ok", "passed")],
        collect_errors=[{"nodeid": "tests/test_b.py", "message": "ImportError"}],
        pytest_exitstatus=0,
    )
    findings = crosscheck(results, exit_code=0, expected=("tests/test_a.py::ok",))
    assert [f.code for f in findings] == ["exit_code_mismatch"]


def test_crosscheck_exit_one_with_only_passes_means_rewritten_reports() -> None:
    results = results_with(
        tests=[
            TestRecord("tests/test_a.py::ok", "passed"),
            TestRecord("tests/test_a.py::bad", "passed"),
        ]
    )
    findings = crosscheck(results, exit_code=1)
    assert [f.code for f in findings] == ["exit_code_mismatch"]
    assert "rewritten" in findings[0].message


def test_crosscheck_session_status_differs_from_process_exit() -> None:
    results = results_with(
        tests=[
            TestRecord("tests/test_a.py::ok", "passed"),
            TestRecord("tests/test_a.py::bad", "passed"),
        ],
        pytest_exitstatus=1,
    )
    findings = crosscheck(results, exit_code=0)
    assert [f.code for f in findings] == ["exit_code_mismatch"]
    assert "status 1" in findings[0].message


def test_crosscheck_missing_deselected_and_collection_error_are_told_apart() -> None:
    results = results_with(
        deselected=["tests/test_a.py::hidden"],
        collect_errors=[
            {"nodeid": "tests/test_b.py", "message": "SyntaxError"},
            {"nodeid": "tests/sub", "message": "ImportError"},
        ],
    )
    expected = (
        "tests/test_a.py::ok",
        "tests/test_a.py::bad",
        "tests/test_a.py::gone",  # missing: nobody explains its absence
        "tests/test_a.py::hidden",  # deselected
        "tests/test_b.py::test_x",  # its file failed to import
        "tests/test_b.py::Cls::test_y",
        "tests/sub/test_c.py::test_z",  # its folder failed to collect
        "tests/test_b.pyx::test_w",  # a prefix of a broken file's name is not that file
        "tests/subway/test_d.py::t",  # nor is a folder whose name starts like a broken one
    )
    findings = {f.code: f.message for f in crosscheck(results, expected=expected)}
    assert set(findings) == {"tests_missing", "tests_deselected"}
    assert findings["tests_deselected"].startswith("1 expected tests were deselected")
    assert "tests/test_a.py::hidden" in findings["tests_deselected"]
    missing = findings["tests_missing"]
    assert missing.startswith("3 expected tests did not run")
    for nodeid in ("tests/test_a.py::gone", "tests/test_b.pyx::test_w", "tests/subway/"):
        assert nodeid in missing
    assert "tests/test_b.py::test_x" not in missing
    assert "tests/sub/test_c.py" not in missing


def test_crosscheck_session_level_collection_error_excuses_nothing() -> None:
    results = results_with(collect_errors=[{"nodeid": "", "message": "conftest broke"}])
    findings = crosscheck(results, expected=("tests/test_a.py::ok", "tests/test_x.py::t"))
    assert [f.code for f in findings] == ["tests_missing"]


def test_crosscheck_long_missing_list_is_truncated() -> None:
    expected = tuple(f"tests/test_a.py::t{i}" for i in range(8))
    findings = crosscheck(results_with(), expected=expected)
    assert [f.code for f in findings] == ["tests_missing"]
    assert findings[0].message.startswith("8 expected tests did not run")
    assert findings[0].message.endswith(" ...")


def test_crosscheck_unexpected_plugin() -> None:
    findings = crosscheck(results_with(plugins=["xdist", "sneaky"]))
    assert [f.code for f in findings] == ["unexpected_plugin"]
    assert "'sneaky'" in findings[0].message


BASE_FILES = {
    "src/pkg/a.py": "import os\n\n\ndef a():\n    return 1\n",
    "src/pkg/old.py": "import os\n\n\ndef stop():\n    os._exit(3)\n",
    "tests/test_x.py": "import pytest\n",
    "README.md": "# pkg\n",
}
CANDIDATE_FILES = {
    "src/pkg/a.py": BASE_FILES["src/pkg/a.py"] + "\nfrom _pytest.main import Session\n",
    "src/pkg/old.py": "def stop():\n    return None\n",
    "src/pkg/b.py": "import os\n\n\ndef f():\n    os._exit(0)\n\n\ndef g():\n    os._exit(1)\n",
    "src/pkg/c.py": "def g(report):\n    report.outcome = 'passed'\n    return report\n",
    "src/pkg/c2.py": "def seen(report):\n    return report.outcome == 'failed'\n",
    "src/pkg/d.py": "def pytest_runtest_makereport(item, call):\n    return None\n",
    "src/pkg/e.py": "pytest_plugins = ['evil']\n",
    "src/pkg/f.py": "import pytest\n\n\ndef h():\n    pytest.skip('later')\n",
    "scripts/run.sh": '#!/bin/sh\nexport PYTEST_ADDOPTS="-p no:loopcontract"\npytest\n',
    "tests/test_x.py": "import pytest\n\n\ndef test_net():\n    pytest.skip('needs network')\n",
    "README.md": "# pkg\n\nNever call os._exit from a test.\n",
}


@pytest.fixture
def candidate_patch(tmp_path: Path) -> str:
    repo = tmp_path / "diffs"
    repo.mkdir()
    for files, message in ((BASE_FILES, "base"), (CANDIDATE_FILES, "candidate")):
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text, "utf-8")
        if message == "base":
            git(repo, "init", "-q", "-b", "main")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", message)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "-U0", "--no-color", "--src-prefix=a/", "--dst-prefix=b/")


def test_harness_findings_on_a_real_patch(candidate_patch: str) -> None:
    findings = harness_findings(
        candidate_patch, [], test_globs=[*DEFAULT_PROTECT, "test_*.py", "*_test.py"]
    )
    assert all(f.code == "harness_manipulation" and not f.allowed for f in findings)
    got = {(f.path, f.line, f.message.split(":", 1)[0]) for f in findings}
    assert got == {
        ("src/pkg/a.py", 7, "imports pytest internals"),
        ("src/pkg/b.py", 5, "calls os._exit (ends the run before results are written)"),
        ("src/pkg/c.py", 2, "rewrites or forges test reports"),
        ("src/pkg/d.py", 1, "defines a pytest hook outside the protected configuration"),
        ("src/pkg/e.py", 1, "registers or blocks pytest plugins"),
        ("src/pkg/f.py", 5, "skips or xfails tests from code"),
        ("scripts/run.sh", 2, "changes how pytest is invoked"),
    }
    # one finding per pattern and file; the second os._exit in b.py adds nothing
    assert len(findings) == len(got)
    messages = {f.path: f.message for f in findings}
    assert "os._exit(0)" in messages["src/pkg/b.py"]


def test_harness_findings_ignore_tests_docs_removed_lines_and_comparisons(
    candidate_patch: str,
) -> None:
    findings = harness_findings(
        candidate_patch, [], test_globs=[*DEFAULT_PROTECT, "test_*.py", "*_test.py"]
    )
    paths = {f.path for f in findings}
    assert "tests/test_x.py" not in paths  # pytest.skip in a test file is a test's business
    assert "README.md" not in paths  # prose is not code
    assert "src/pkg/old.py" not in paths  # the os._exit was removed, not added
    assert "src/pkg/c2.py" not in paths  # reading report.outcome is not rewriting it


def test_harness_findings_skip_in_tests_counts_without_test_globs(candidate_patch: str) -> None:
    findings = harness_findings(candidate_patch, [])
    assert ("tests/test_x.py", "skip") in {
        (f.path, "skip" if "skips" in f.message else "") for f in findings
    }


def test_harness_findings_respect_allow(candidate_patch: str) -> None:
    findings = harness_findings(candidate_patch, ["src/pkg/d.py", "scripts/**"])
    allowed = {f.path for f in findings if f.allowed}
    assert allowed == {"src/pkg/d.py", "scripts/run.sh"}


def test_harness_findings_quoted_paths() -> None:
    patch = (
        'diff --git "a/src/caf\\303\\251.py" "b/src/caf\\303\\251.py"\n'
        "new file mode 100644\n"
        "--- /dev/null\n"
        '+++ "b/src/caf\\303\\251.py"\n'
        "@@ -0,0 +1 @@\n"
        "+import _pytest\n"
    )
    findings = harness_findings(patch, [])
    assert [(f.path, f.line) for f in findings] == [("src/café.py", 1)]


def pin(blob: str, mode: str = "100644") -> Pin:
    return Pin(sha256="0" * 64, blob=blob, mode=mode)


PINS = {
    "loopcontract.yml": pin("c1"),
    "pyproject.toml": pin("p1"),
    "tests/test_a.py": pin("t1"),
    "tests/conftest.py": pin("k1"),
}
GLOBS = list(DEFAULT_PROTECT)


def test_pin_findings_modified_deleted_mode_and_added() -> None:
    candidate = {
        "loopcontract.yml": TreeEntry("100644", "c2"),
        "pyproject.toml": TreeEntry("100755", "p1"),  # same bytes, new mode
        "tests/conftest.py": TreeEntry("100644", "k1"),  # untouched
        "src/conftest.py": TreeEntry("100644", "n1"),  # new conftest at another depth
        "lib/evil.pth": TreeEntry("100644", "n2"),
        ".github/workflows/ci.yml": TreeEntry("100644", "n3"),
        "src/mini/core.py": TreeEntry("100644", "n4"),  # ordinary code
        # tests/test_a.py deleted
    }
    findings = pin_findings(PINS, candidate, GLOBS, [], "loopcontract.yml")
    got = {(f.code, f.path) for f in findings}
    assert got == {
        ("contract_modified", "loopcontract.yml"),
        ("protected_path_modified", "pyproject.toml"),
        ("protected_path_deleted", "tests/test_a.py"),
        ("protected_path_added", "src/conftest.py"),
        ("protected_path_added", "lib/evil.pth"),
        ("protected_path_added", ".github/workflows/ci.yml"),
    }
    assert not any(f.allowed for f in findings)


def test_pin_findings_deleted_contract_and_allow() -> None:
    candidate = {
        "pyproject.toml": TreeEntry("100644", "p2"),
        "tests/test_a.py": TreeEntry("100644", "t1"),
        "tests/conftest.py": TreeEntry("100644", "k1"),
    }
    findings = pin_findings(PINS, candidate, GLOBS, ["pyproject.toml"], "loopcontract.yml")
    by_path = {f.path: f for f in findings}
    assert by_path["loopcontract.yml"].code == "contract_modified"
    assert "deleted" in by_path["loopcontract.yml"].message
    assert by_path["pyproject.toml"].allowed is True
    assert by_path["loopcontract.yml"].allowed is False


def test_pin_findings_unchanged_tree_is_clean() -> None:
    candidate = {p: TreeEntry(v.mode, v.blob) for p, v in PINS.items()}
    assert pin_findings(PINS, candidate, GLOBS, [], "loopcontract.yml") == []


def test_boundary_findings() -> None:
    changed = [
        ("M", "src/mini/core.py"),
        ("A", "docs/notes.md"),
        ("D", "src/secret/key.py"),
        ("A", "src/mini/new.py"),
    ]
    findings = boundary_findings(changed, ["src/**"], ["src/secret/**"])
    got = {(f.path, f.message) for f in findings}
    assert got == {
        ("docs/notes.md", "changed a path outside the allowed boundaries (A)"),
        ("src/secret/key.py", "changed a denied path (D)"),
    }
    assert all(f.code == "boundary_crossed" for f in findings)
    assert boundary_findings(changed, [], []) == []
    # a folder pattern with a trailing slash denies what is under it
    assert [f.path for f in boundary_findings(changed, [], ["secret/"])] == ["src/secret/key.py"]


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("conftest.py", "conftest.py", True),
        ("tests/conftest.py", "conftest.py", True),
        ("a/b/c/conftest.py", "conftest.py", True),
        ("conftest.pyc", "conftest.py", False),
        ("my_conftest.py", "conftest.py", False),
        ("conftest.py/x", "conftest.py", True),  # a pattern also names a folder's contents
        (".github/workflows/ci.yml", ".github/**", True),
        (".github/CODEOWNERS", ".github/**", True),
        ("sub/.github/ci.yml", ".github/**", False),  # a slash anchors the pattern
        ("src/a.py", "src/**", True),
        ("src/x/y/z.py", "src/**", True),
        ("lib/src/a.py", "src/**", False),
        ("srcx/a.py", "src/**", False),
        ("site.pth", "*.pth", True),
        ("lib/site-packages/evil.pth", "*.pth", True),
        ("evil.pth.txt", "*.pth", False),
        ("a/b.py", "a/b.py", True),
        ("x/a/b.py", "a/b.py", False),
        ("a/b.py", "/a/b.py", True),
        ("tests/test_a.py", "test_*.py", True),
        ("tests/sub/test_a.py", "tests/*.py", False),
        ("tests/sub/test_a.py", "tests/**/*.py", True),
        ("tests/test_a.py", "tests/**/test_*.py", True),
        ("conftest.py", "**/conftest.py", True),
        ("deep/er/conftest.py", "**/conftest.py", True),
        ("test_a.py", "test_?.py", True),
        ("test_ab.py", "test_?.py", False),
        ("docs/a.md", "docs", True),
        ("docs/a.md", "docs/", True),
        ("x/docs/a.md", "docs/", True),
        ("docs/a.md", "/docs/", True),
        ("x/docs/a.md", "/docs/", False),
        ("a+b/c.py", "a+b/*.py", True),
    ],
)
def test_match_glob(path: str, pattern: str, expected: bool) -> None:
    assert match_glob(path, pattern) is expected


# --- D. the plugin allow-list ---------------------------------------------------------------


@pytest.mark.skipif(not HAS_XDIST, reason="pytest-xdist is not installed")
def test_baseline_records_the_plugins_it_loaded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    plugins = read_baseline(repo)["plugins"]
    assert "xdist" in plugins


def test_contract_plugins_join_the_allow_list(tmp_path: Path) -> None:
    text = with_pytest_settings(contract(), "plugins: [some_extra_plugin]")
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    baseline_ok(repo)
    assert "some_extra_plugin" in read_baseline(repo)["plugins"]


@pytest.mark.skipif(not HAS_HYPOTHESIS, reason="hypothesis is not installed")
def test_verify_runs_with_autoload_off_and_only_allow_listed_plugins(tmp_path: Path) -> None:
    repo, probe = probed_repo(tmp_path)
    baseline_ok(repo)
    at_baseline = probes(probe)[-1]
    assert at_baseline["autoload"] is None
    assert "hypothesispytest" in at_baseline["plugins"]

    # a plugin installed after the baseline (simulated: dropped from the recorded allow-list)
    # is not loaded by the verifier, even though autoload would find it
    path = repo / ".loop-contract/baseline.json"
    record = json.loads(path.read_text("utf-8"))
    record["plugins"] = [p for p in record["plugins"] if p != "hypothesispytest"]
    path.write_text(json.dumps(record), "utf-8")

    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert code == 0
    in_verify = probes(probe)[-1]
    assert in_verify["autoload"] == "1"
    assert "hypothesispytest" not in in_verify["plugins"]
    assert "_loopcontract_inner" in in_verify["plugins"]
    for name in record["plugins"]:
        assert name in in_verify["plugins"], name
    assert "unexpected_plugin" not in finding_codes(verdict)


@pytest.mark.skipif(not HAS_XDIST, reason="pytest-xdist is not installed")
def test_xdist_from_the_contract_runs_under_the_verifier(tmp_path: Path) -> None:
    text = with_pytest_settings(contract(), 'args: ["-p", "xdist", "-n", "2"]')
    marked = TESTS + (
        "\n\nimport pytest\n\n\n@pytest.mark.dod('triple')\n"
        "def test_triple_more():\n    assert triple(1) == 3\n"
    )
    repo, probe = probed_repo(tmp_path, **{"loopcontract.yml": text, "tests/test_core.py": marked})
    baseline_ok(repo)
    record = read_baseline(repo)
    assert "xdist" in record["plugins"]
    assert sorted(record["fail_to_pass"]) == [
        "tests/test_core.py::test_triple",
        "tests/test_core.py::test_triple_more",
    ]

    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert code == 0
    # the marker-tied test reached the DoD item through the xdist report stream
    assert {t["nodeid"] for t in verdict["dod"][0]["tests"]} == set(record["fail_to_pass"])
    in_verify = probes(probe)[-1]
    assert in_verify["autoload"] == "1"
    assert in_verify["worker"] in ("gw0", "gw1")


# --- E. what the scratch copy contains --------------------------------------------------------


def test_untracked_new_module_is_verified(tmp_path: Path) -> None:
    repo, probe = probed_repo(tmp_path)
    baseline_ok(repo)
    (repo / "src/mini/_factor.py").write_text("FACTOR = 3\n", "utf-8")
    (repo / "src/mini/core.py").write_text(
        "from mini._factor import FACTOR\n\n\n"
        + BUGGY.replace("return x * 2", "return x * FACTOR"),
        "utf-8",
    )
    assert "?? src/mini/_factor.py" in git(repo, "status", "--porcelain")
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert code == 0
    assert verdict["environment"]["dirty"] is True
    assert "src/mini/_factor.py" in probes(probe)[-1]["files"]


def test_ignored_files_are_not_copied(tmp_path: Path) -> None:
    repo, probe = probed_repo(
        tmp_path, **{".gitignore": ".loop-contract/\n__pycache__/\nlocal_*.py\n*.secret\n"}
    )
    baseline_ok(repo)
    # the "fix" lives in an ignored file: it works on the agent's machine only
    (repo / "src/mini/local_factor.py").write_text("FACTOR = 3\n", "utf-8")
    (repo / "token.secret").write_text("hunter2\n", "utf-8")
    (repo / "src/mini/core.py").write_text(
        "try:\n    from mini.local_factor import FACTOR\nexcept ImportError:\n    FACTOR = 2\n\n\n"
        + BUGGY.replace("return x * 2", "return x * FACTOR"),
        "utf-8",
    )
    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "fail"
    assert code == 20
    assert verdict["dod"][0]["status"] != "done"
    files = probes(probe)[-1]["files"]
    assert "src/mini/core.py" in files
    assert "src/mini/local_factor.py" not in files
    assert "token.secret" not in files
    assert not any(f.startswith(".loop-contract/") for f in files)


def test_planted_bytecode_is_purged(tmp_path: Path) -> None:
    # no __pycache__ in .gitignore: the planted files reach the snapshot
    repo, probe = probed_repo(tmp_path, **{".gitignore": ".loop-contract/\n"})
    baseline_ok(repo)
    source = tmp_path / "fixed_core.py"
    source.write_text(FIXED, "utf-8")
    cache = repo / "src/mini/__pycache__"
    cache.mkdir()
    planted = cache / f"core.{sys.implementation.cache_tag}.pyc"
    # an unchecked-hash pyc is used whatever the source says
    py_compile.compile(
        str(source),
        cfile=str(planted),
        dfile="src/mini/core.py",
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    py_compile.compile(str(source), cfile=str(repo / "src/mini/legacy.pyc"))
    # control: the planted bytecode really does replace the unfixed source
    probe_run = subprocess.run(
        [PY, "-c", "import mini.core; print(mini.core.triple(2))"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo / "src"), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe_run.stdout.strip() == "6"
    assert "src/mini/__pycache__/" in git(repo, "status", "--porcelain", "-uall")

    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "fail"
    assert code == 20
    failing = [t["nodeid"] for t in verdict_records(verdict) if t["outcome"] == "failed"]
    assert failing == ["tests/test_core.py::test_triple"]
    files = probes(probe)[-1]["files"]
    # the only bytecode in the run's tree is the launcher's: pytest's rewritten pinned tests
    # from the baseline run, beside the files they match (verifier/bytecode.py)
    bytecode = [f for f in files if "__pycache__" in f or f.endswith((".pyc", ".pyo"))]
    assert bytecode, files
    assert all(f.startswith("tests/__pycache__/") and "-pytest-" in f for f in bytecode), bytecode


def test_symlinks_to_outside_do_not_break_the_scratch_copy(tmp_path: Path) -> None:
    repo, probe = probed_repo(tmp_path)
    baseline_ok(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("outside data\n", "utf-8")
    (repo / "src/mini/data").symlink_to(outside, target_is_directory=True)
    (repo / "notes.txt").symlink_to(outside / "data.txt")
    (repo / "dangling").symlink_to(tmp_path / "does-not-exist")
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")

    code, verdict = verify_json(repo)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert code == 0
    files = probes(probe)[-1]["files"]
    assert {"src/mini/data", "notes.txt", "dangling"} <= set(files)
    assert "src/mini/data/data.txt" not in files  # a link, not a copy of what it points to
    assert sorted(p.name for p in outside.iterdir()) == ["data.txt"]
    assert (outside / "data.txt").read_text("utf-8") == "outside data\n"


def test_restoring_pins_never_writes_through_a_symlinked_folder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    # the candidate moves the tests outside and links the folder back, with weaker asserts
    elsewhere = tmp_path / "elsewhere"
    (repo / "tests").rename(elsewhere)
    weak = (elsewhere / "test_core.py").read_text("utf-8").replace("== 6", "== 4")
    (elsewhere / "test_core.py").write_text(weak, "utf-8")
    (repo / "tests").symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}

    code, verdict = verify_json(repo)
    assert code == 25
    assert verdict["verdict"] == "fail"
    found = {(f["code"], f.get("path", "")) for f in verdict["tamper"]["findings"]}
    assert ("protected_path_deleted", "tests/test_core.py") in found
    # the pinned test ran (and failed on the unfixed code) ...
    failing = [t["nodeid"] for t in verdict_records(verdict) if t["outcome"] == "failed"]
    assert failing == ["tests/test_core.py::test_triple"]
    # ... and nothing outside the scratch copy was touched
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


def test_isolated_run_enforces_egress(tmp_path: Path) -> None:
    """The launcher passes the pinned contract's egress allow-list into the test run."""
    import json as _json

    repo = tmp_path / "egress"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text(
        "import socket\nfrom calc import add\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n"
        "def test_net():\n    try:\n        socket.getaddrinfo('example.org', 80)\n"
        "    except PermissionError:\n        pass\n"
    )
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (repo / "loopcontract.yml").write_text(
        "version: 1\nid: eg\ndod:\n  - id: add\n    text: adds\n"
        "    tests: [test_calc.py::test_add]\n"
        "egress:\n  allow: [pypi.org]\n"
    )
    init_repo(repo)
    assert run_cli(repo, "baseline").returncode == 0
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    result = run_cli(repo, "verify", "--json")
    verdict = _json.loads(result.stdout)
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert verdict["egress"]["blocked"] == 1
    assert verdict["egress"]["attempts"][0]["host"] == "example.org"


def test_doctest_module_is_not_pinned_so_its_fix_counts(tmp_path: Path) -> None:
    """A doctest lives in the code under test: pinning its module would revert the fix."""
    import json as _json

    repo = tmp_path / "doc"
    repo.mkdir()
    (repo / "mod.py").write_text('def f():\n    """\n    >>> f()\n    2\n    """\n    return 1\n')
    (repo / "test_other.py").write_text("def test_ok():\n    pass\n")
    (repo / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    (repo / "loopcontract.yml").write_text(
        "version: 1\nid: doc\ndod:\n  - id: f\n    text: f returns 2\n    tests: [mod.py::mod.f]\n"
    )
    init_repo(repo)
    assert run_cli(repo, "baseline").returncode == 0
    pins = _json.loads((repo / ".loop-contract/baseline.json").read_text())["pins"]
    assert "mod.py" not in pins
    assert "test_other.py" in pins
    (repo / "mod.py").write_text('def f():\n    """\n    >>> f()\n    2\n    """\n    return 2\n')
    verdict = _json.loads(run_cli(repo, "verify", "--json").stdout)
    assert verdict["verdict"] == "pass", verdict["reasons"]


def test_harness_patch_through_an_alias_is_found() -> None:
    diff = (
        "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"
        "@@ -1,0 +1,2 @@\n+from unittest import TestCase as _TC\n"
        '+setattr(_TC, "assertEqual", print)\n'
    )
    [finding] = harness_findings(diff, [])
    assert (finding.path, finding.line) == ("src/a.py", 2)
    assert "imported name" in finding.message


def _venv_seeing(tmp_path: Path, *folders: Path) -> Path:
    """A virtual environment (no pip) whose site-packages sees this interpreter's packages and
    ``folders``, through a ``.pth`` file: the project's own test environment."""
    import site

    venv = tmp_path / "testenv"
    subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True)
    [packages] = venv.glob("lib/python*/site-packages")
    # addsitedir, so the .pth files of this environment (editable installs) work there too
    lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
    lines += map(str, folders)
    (packages / "seen.pth").write_text("\n".join(lines) + "\n", "utf-8")
    return venv / "bin" / "python"


def test_launchers_pythonpath_never_reaches_the_tests(tmp_path: Path) -> None:
    """The launcher's own PYTHONPATH pointing at another copy does not reach the test process:
    the tests' path comes from the contract only."""
    repo = _shadow_repo(tmp_path)
    elsewhere = _other_copy(tmp_path)
    shadowed = {**os.environ, "PYTHONPATH": str(elsewhere)}
    done = _cli_env(repo, "baseline", env=shadowed)
    assert done.returncode == 0, done.stderr


def test_installed_copy_shadowing_the_tree_is_an_error(tmp_path: Path) -> None:
    """A test environment that imports an installed copy measures the wrong code: the baseline
    refuses, naming the module; a copy planted into the environment after the baseline is
    refused as another environment."""
    repo = _shadow_repo(tmp_path / "bare", settings="")
    python = _venv_seeing(tmp_path)
    [installed] = python.parent.parent.glob("lib/python*/site-packages")
    shutil.copytree(_other_copy(tmp_path) / "mypkg", installed / "mypkg")  # a pip-installed copy
    refused = _cli_env(repo, "baseline", "--python", str(python))
    assert refused.returncode == 27
    assert "mypkg" in refused.stderr and "src/mypkg" in refused.stderr
    assert "pytest.pythonpath" in refused.stderr
    assert "Traceback" not in refused.stderr

    repo = _shadow_repo(tmp_path)
    clean = _venv_seeing(tmp_path / "clean")
    assert _cli_env(repo, "baseline", "--python", str(clean)).returncode == 0
    (repo / "src" / "mypkg" / "__init__.py").write_text("def f():\n    return 2\n")
    [packages] = (clean.parent.parent).glob("lib/python*/site-packages")
    with (packages / "seen.pth").open("a", encoding="utf-8") as fh:
        fh.write(str(tmp_path / "site") + "\n")
    planted = _cli_env(repo, "verify", "--python", str(clean))
    assert planted.returncode == 27
    assert "start-up files" in planted.stderr
    other = _cli_env(repo, "verify", "--python", PY)
    assert other.returncode == 27
    assert "different test environment" in other.stderr and "home:" in other.stderr


def _shadow_repo(tmp_path: Path, settings: str = "pytest: {pythonpath: [src]}\n") -> Path:
    repo = tmp_path / "shadow"
    (repo / "src" / "mypkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "mypkg" / "__init__.py").write_text("def f():\n    return 1\n")
    (repo / "tests" / "test_f.py").write_text(
        "def test_f():\n    from mypkg import f\n\n    assert f() == 2\n"
    )
    (repo / "loopcontract.yml").write_text(
        "version: 1\nid: sh\ndod:\n  - id: f\n    text: f is 2\n"
        "    tests: [tests/test_f.py::test_f]\n" + settings
    )
    return init_repo(repo)


def _other_copy(tmp_path: Path) -> Path:
    elsewhere = tmp_path / "site" / "mypkg"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("def f():\n    return 1\n")
    return elsewhere.parent


def _cli_env(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "pytest_loopcontract", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_editing_a_doctests_expected_output_is_tampering(tmp_path: Path) -> None:
    import json as _json

    repo = tmp_path / "doc2"
    repo.mkdir()
    (repo / "mod.py").write_text('def f():\n    """\n    >>> f()\n    2\n    """\n    return 1\n')
    (repo / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    (repo / "loopcontract.yml").write_text(
        "version: 1\nid: doc\ndod:\n  - id: f\n    text: f returns 2\n    tests: [mod.py::mod.f]\n"
    )
    init_repo(repo)
    assert run_cli(repo, "baseline").returncode == 0
    # the "fix": make the doctest expect what the code returns
    (repo / "mod.py").write_text('def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    result = run_cli(repo, "verify", "--json")
    verdict = _json.loads(result.stdout)
    assert_valid_verdict(verdict)
    assert result.returncode == 25
    assert ("doctest_modified", "mod.py") in {
        (f["code"], f.get("path")) for f in verdict["tamper"]["findings"]
    }
