"""Sensors against real tools: coverage.py runs, git diffs, subprocesses, pytest-benchmark."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from coverage.results import display_covered
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.results import RecordedMetric, TestRecord
from pytest_loopcontract.verifier.sensors import common
from pytest_loopcontract.verifier.sensors.coverage import coverage_percent_display
from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff
from pytest_loopcontract.verifier.sensors.protocol import Observation, SensorContext
from pytest_loopcontract.verifier.sensors.registry import BUILTIN_SOURCES, observe

PY = sys.executable

# Line numbers matter: coverage.py's statements are 4, 5, 6, 9, 10, 11 and 12 (the docstring is
# not one); run.py executes 4, 5, 6 and 9.
MODULE = '''\
"""Module docstring."""

# a comment
def covered(x):
    y = x + 1
    return y


def uncovered(x):
    if x:
        return 1
    return 2
'''
SCRIPT = "import mod\n\nmod.covered(1)\n"


def gate(metric: str, aggregate: str = "last", **source: Any) -> MeasuredGate:
    return MeasuredGate(
        id="g", metric=metric, op=">=", threshold=0.0, aggregate=aggregate, source=source
    )


def context(workdir: Path, **kwargs: Any) -> SensorContext:
    kwargs.setdefault("tests", ())
    kwargs.setdefault("recorded", ())
    return SensorContext(workdir=workdir, **kwargs)


def clean_env() -> dict[str, str]:
    """The environment without coverage's own variables, so inner runs are not measured."""
    return {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}


def run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=clean_env(), capture_output=True, text=True, check=True
    )
    return done.stdout


def coverage_run(project: Path, *extra: str) -> Path:
    run([PY, "-m", "coverage", "run", "--data-file=.coverage", *extra, "run.py"], project)
    return project / ".coverage"


def reported_total(project: Path, *extra: str) -> str:
    """The TOTAL percentage exactly as ``coverage report`` prints it in ``project``."""
    out = run([PY, "-m", "coverage", "report", "--data-file=.coverage", *extra], project)
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    return total.split()[-1].rstrip("%")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "mod.py").write_text(MODULE)
    (root / "run.py").write_text(SCRIPT)
    return root


@pytest.fixture
def measured(project: Path) -> Path:
    coverage_run(project)
    return project


# --- coverage.percent ----------------------------------------------------------------------


def test_coverage_percent_from_data_file_matches_coverage_report(measured: Path) -> None:
    obs = observe(gate("coverage.percent"), context(measured))
    assert obs.status == "ok", obs.detail
    assert f"{obs.value:.2f}" == reported_total(measured, "--precision=2")
    assert obs.extra["statements"] == 9
    assert obs.extra["precision"] == 2
    assert ".coverage" in obs.detail


@pytest.mark.parametrize("precision", [0, 1, 3])
def test_coverage_percent_honours_source_precision(measured: Path, precision: int) -> None:
    obs = observe(gate("coverage.percent", precision=precision), context(measured))
    assert obs.status == "ok", obs.detail
    expected = reported_total(measured, f"--precision={precision}")
    assert f"{obs.value:.{precision}f}" == expected


@pytest.mark.parametrize("precision", [-1, 11, 1.5, True, "2"])
def test_coverage_percent_rejects_bad_precision(measured: Path, precision: Any) -> None:
    obs = observe(gate("coverage.percent", precision=precision), context(measured))
    assert (obs.status, obs.value) == ("error", None)
    assert "source.precision" in obs.detail


def test_coverage_percent_uses_the_pinned_rc_from_workdir(project: Path) -> None:
    # A relative omit and the precision only mean the right thing with workdir as cwd; this
    # test runs from elsewhere, so it also proves the analysis is not done in our own cwd.
    (project / ".coveragerc").write_text("[report]\nomit = run.py\nprecision = 3\n")
    coverage_run(project)
    assert Path.cwd() != project
    obs = observe(gate("coverage.percent"), context(project))
    assert obs.status == "ok", obs.detail
    assert obs.extra["statements"] == 7
    assert obs.extra["precision"] == 3
    assert f"{obs.value:.3f}" == reported_total(project) == "57.143"


def test_coverage_percent_ignores_coverage_env_vars(measured: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.rc"
    hostile.write_text("[report]\nprecision = 5\nomit = *\n")
    env = {**clean_env(), "COVERAGE_RCFILE": str(hostile)}
    obs = observe(gate("coverage.percent"), context(measured, env=env))
    assert obs.status == "ok", obs.detail
    assert obs.extra["precision"] == 2
    assert obs.extra["statements"] == 9


def test_coverage_percent_with_relative_files(project: Path) -> None:
    (project / ".coveragerc").write_text("[run]\nrelative_files = True\n")
    coverage_run(project)
    obs = observe(gate("coverage.percent"), context(project))
    assert obs.status == "ok", obs.detail
    assert f"{obs.value:.2f}" == reported_total(project, "--precision=2")


def test_coverage_percent_from_json_report(measured: Path) -> None:
    run([PY, "-m", "coverage", "json", "--data-file=.coverage", "-o", "cov.json"], measured)
    obs = observe(gate("coverage.percent", file="cov.json"), context(measured))
    assert obs.status == "ok", obs.detail
    assert f"{obs.value:.2f}" == reported_total(measured, "--precision=2")
    assert "coverage report cov.json" in obs.detail


def test_coverage_percent_finds_default_names(measured: Path) -> None:
    by_data = observe(gate("coverage.percent"), context(measured))
    run([PY, "-m", "coverage", "json", "--data-file=.coverage", "-o", "coverage.json"], measured)
    by_json = observe(gate("coverage.percent"), context(measured))
    assert "coverage.json" in by_json.detail
    assert by_json.value == by_data.value


def test_coverage_percent_uses_context_data_file(measured: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere.cov"
    (measured / ".coverage").rename(moved)
    obs = observe(gate("coverage.percent"), context(measured, coverage_data=moved))
    assert obs.status == "ok", obs.detail
    assert str(moved) in obs.detail


def test_coverage_missing_files_are_named(project: Path) -> None:
    obs = observe(gate("coverage.percent"), context(project))
    assert (obs.status, obs.value) == ("missing", None)
    assert "coverage.json" in obs.detail and ".coverage" in obs.detail
    named = observe(gate("coverage.percent", file="out/cov.json"), context(project))
    assert named.status == "missing" and "out/cov.json" in named.detail
    from_ctx = observe(gate("coverage.percent"), context(project, coverage_data=Path("x.cov")))
    assert from_ctx.status == "missing" and "x.cov" in from_ctx.detail


def test_coverage_with_nothing_measured_is_not_measurable(project: Path) -> None:
    coverage_run(project, "--include=nothing/*")
    obs = observe(gate("coverage.percent"), context(project))
    assert (obs.status, obs.value) == ("not_measurable", None)


def test_coverage_with_no_statements_is_not_measurable(project: Path) -> None:
    (project / "run.py").write_text("# nothing here\n")
    coverage_run(project)
    obs = observe(gate("coverage.percent"), context(project))
    assert (obs.status, obs.value) == ("not_measurable", None)


def test_coverage_data_that_coverage_rejects_is_an_error(project: Path) -> None:
    (project / ".coverage").write_bytes(b"SQLite format 3\x00" + b"garbage" * 200)
    obs = observe(gate("coverage.percent"), context(project))
    assert (obs.status, obs.value) == ("error", None)
    assert "coverage.py could not report" in obs.detail
    assert "not a database" in obs.detail


def test_coverage_data_file_is_never_modified(project: Path) -> None:
    # coverage.py adds its schema to a database that lacks it; the sensor must not let it.
    with sqlite3.connect(project / ".coverage") as db:
        db.execute("create table unrelated (x)")
    before = (project / ".coverage").read_bytes()
    obs = observe(gate("coverage.percent"), context(project))
    assert (obs.status, obs.value) == ("not_measurable", None)
    assert (project / ".coverage").read_bytes() == before
    assert sorted(p.name for p in project.iterdir()) == [".coverage", "mod.py", "run.py"]


def test_coverage_json_that_is_not_a_report_is_an_error(project: Path) -> None:
    (project / "coverage.json").write_text('{"hello": 1}')
    obs = observe(gate("coverage.percent"), context(project))
    assert obs.status == "error" and "not a coverage.py JSON report" in obs.detail
    (project / "coverage.json").write_text("{not json")
    assert observe(gate("coverage.percent"), context(project)).status == "error"


MINIMAL_REPORT = {
    "totals": {"percent_covered": 75.0, "num_statements": 4},
    "files": {"a.py": {"executed_lines": [1, 2, 3], "missing_lines": [4]}},
}


def test_coverage_report_without_display_uses_default_precision(tmp_path: Path) -> None:
    (tmp_path / "coverage.json").write_text(json.dumps(MINIMAL_REPORT))
    ctx = context(tmp_path, changed_lines=changed({"a.py": {3, 4}}))
    obs = observe(gate("coverage.percent"), ctx)
    assert (obs.status, obs.value, obs.extra["precision"]) == ("ok", 75.0, 2)
    diff = observe(gate("coverage.diff_percent"), ctx)
    assert (diff.status, diff.value) == ("ok", 50.0)


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("totals", "num_statements"), "4", "num_statements"),
        (("totals", "percent_covered"), None, "percent_covered"),
        (("files", "a.py"), [1, 2], "is not an object"),
        (("files", "a.py", "missing_lines"), [True], "not a list of line numbers"),
        (("files", "a.py", "executed_lines"), None, "not a list of line numbers"),
    ],
)
def test_malformed_coverage_report_is_an_error(
    tmp_path: Path, path: tuple[str, ...], value: Any, reason: str
) -> None:
    document = json.loads(json.dumps(MINIMAL_REPORT))
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (tmp_path / "coverage.json").write_text(json.dumps(document))
    ctx = context(tmp_path, changed_lines=changed({"a.py": {3, 4}}))
    obs = observe(gate("coverage.diff_percent"), ctx)
    assert (obs.status, obs.value) == ("error", None)
    assert reason in obs.detail


def test_oversized_report_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "_MAX_FILE_BYTES", 64)
    (tmp_path / "coverage.json").write_text(json.dumps(MINIMAL_REPORT))
    obs = observe(gate("coverage.percent"), context(tmp_path))
    assert obs.status == "error" and "larger than 64 bytes" in obs.detail


@pytest.mark.parametrize(
    "metric", ["coverage.branches", "coverage", "duration.min", "tests.skipped", "nope.x"]
)
def test_unknown_metrics_are_errors(tmp_path: Path, metric: str) -> None:
    obs = observe(gate(metric), context(tmp_path))
    assert (obs.status, obs.value) == ("error", None)
    assert "unknown metric" in obs.detail


# --- diff coverage -------------------------------------------------------------------------


def changed(mapping: Mapping[str, set[int]]) -> dict[str, frozenset[int]]:
    return {path: frozenset(lines) for path, lines in mapping.items()}


def test_diff_coverage_counts_only_executable_changed_lines(measured: Path) -> None:
    # 1 (docstring), 2 (blank) and 3 (comment) are not statements; 5 ran; 10 did not.
    ctx = context(measured, changed_lines=changed({"mod.py": {1, 2, 3, 5, 10}}))
    percent = observe(gate("coverage.diff_percent"), ctx)
    assert (percent.status, percent.value) == ("ok", 50.0), percent.detail
    assert percent.extra["measurable_lines"] == 2
    assert percent.extra["covered_lines"] == 1
    assert percent.extra["uncovered"] == {"mod.py": [10]}
    uncovered = observe(gate("coverage.uncovered_changed_lines"), ctx)
    assert (uncovered.status, uncovered.value) == ("ok", 1.0)
    assert uncovered.extra["uncovered"] == {"mod.py": [10]}


def test_diff_coverage_agrees_with_coverage_analysis(measured: Path) -> None:
    import coverage

    cov = coverage.Coverage(data_file=str(measured / ".coverage"), config_file=False)
    cov.load()
    _, statements, _, missing, _ = cov.analysis2(str(measured / "mod.py"))
    lines = set(range(1, 13))
    ctx = context(measured, changed_lines=changed({"mod.py": lines}))
    obs = observe(gate("coverage.diff_percent", precision=4), ctx)
    ran = len(statements) - len(missing)
    assert obs.value == coverage_percent_display(ran / len(statements) * 100, 4)
    assert obs.extra["uncovered"] == {"mod.py": sorted(missing)}


def test_diff_coverage_never_rounds_up_to_100(measured: Path) -> None:
    obs = observe(
        gate("coverage.diff_percent", precision=0),
        context(measured, changed_lines=changed({"mod.py": {4, 5, 6, 9, 10}})),
    )
    assert obs.value == 80.0
    full = observe(
        gate("coverage.diff_percent"),
        context(measured, changed_lines=changed({"mod.py": {4, 5, 6}})),
    )
    assert full.value == 100.0


@pytest.mark.parametrize(
    "lines",
    [{"mod.py": {1, 2, 3, 7}}, {}, {"new.py": {1, 2}}, {"README.md": {1}}],
    ids=["docstring-blank-comment", "nothing-changed", "unmeasured-file", "not-python"],
)
def test_diff_coverage_without_measurable_lines_is_not_measurable(
    measured: Path, lines: dict[str, set[int]]
) -> None:
    ctx = context(measured, changed_lines=changed(lines))
    for metric in ("coverage.diff_percent", "coverage.uncovered_changed_lines"):
        obs = observe(gate(metric), ctx)
        assert (obs.status, obs.value) == ("not_measurable", None), obs.detail


def test_diff_coverage_lists_changed_files_without_data(measured: Path) -> None:
    ctx = context(measured, changed_lines=changed({"new.py": {1}, "mod.py": {5}}))
    obs = observe(gate("coverage.diff_percent"), ctx)
    assert obs.value == 100.0
    assert obs.extra["unmeasured_changed_files"] == ["new.py"]


def test_diff_coverage_without_baseline_is_missing(measured: Path) -> None:
    for metric in ("coverage.diff_percent", "coverage.uncovered_changed_lines"):
        obs = observe(gate(metric), context(measured))
        assert (obs.status, obs.value) == ("missing", None)
        assert "loop-contract baseline" in obs.detail


def test_diff_coverage_maps_absolute_paths_to_workdir(measured: Path, tmp_path: Path) -> None:
    # A report written from another directory names files by absolute path, and the workdir
    # may be reached through a symlink.
    other = tmp_path / "other"
    other.mkdir()
    data = measured / ".coverage"
    run([PY, "-m", "coverage", "json", f"--data-file={data}", "-o", "abs.json"], other)
    keys = json.loads((other / "abs.json").read_text())["files"]
    assert all(Path(key).is_absolute() for key in keys)
    (measured / "abs.json").write_bytes((other / "abs.json").read_bytes())
    link = tmp_path / "link"
    link.symlink_to(measured)
    ctx = context(link, changed_lines=changed({"mod.py": {5, 10}}))
    obs = observe(gate("coverage.diff_percent", file="abs.json"), ctx)
    assert (obs.status, obs.value) == ("ok", 50.0), obs.detail


# --- coverage_percent_display --------------------------------------------------------------


@given(
    pc=st.one_of(
        st.floats(min_value=0, max_value=100),
        st.sampled_from([0.0, 100.0, 0.004, 0.005, 99.994, 99.995, 99.9999, 50.125, 66.665]),
    ),
    precision=st.integers(min_value=0, max_value=8),
)
def test_display_matches_coverage(pc: float, precision: int) -> None:
    shown = coverage_percent_display(pc, precision)
    assert shown == float(display_covered(pc, precision))
    assert (shown == 0) == (pc == 0)
    assert (shown == 100) == (pc == 100)


def test_display_rejects_negative_precision() -> None:
    with pytest.raises(ValueError):
        coverage_percent_display(50.0, -1)


# --- added_lines_from_diff on real git output ----------------------------------------------

UNICODE_NAME = "my filé x.py"
QUOTED_NAME = 'say "hi"\tback\\slash.py'


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "surrogateescape")


@pytest.fixture(scope="module")
def diffed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("repo")
    git(repo, "init", "-q")
    (repo / "keep.py").write_text("1\n2\n3\n4\n5\n")
    (repo / "gone.py").write_text("x\n")
    (repo / "shrink.py").write_text("a\nb\n")
    (repo / "noeol.txt").write_bytes(b"a\nb\nc")
    (repo / "many.py").write_text("".join(f"{n}\n" for n in range(1, 21)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "keep.py").write_text("1\nTWO\n3\n5\n6\n")
    (repo / "gone.py").unlink()
    (repo / "shrink.py").write_text("a\n")
    (repo / "noeol.txt").write_bytes(b"a\nb\ncc")
    many = [f"{n}\n" for n in range(1, 21)]
    many[2] = "three\n"
    many[14:16] = ["x\n", "y\n", "z\n"]
    (repo / "many.py").write_text("".join(many))
    (repo / UNICODE_NAME).write_text("p\n++ q\n")
    (repo / "sp ace.py").write_text("sp\n")
    (repo / QUOTED_NAME).write_text("q\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "candidate")
    return repo


EXPECTED_ADDED = {
    "keep.py": frozenset({2, 5}),
    "noeol.txt": frozenset({3}),
    "many.py": frozenset({3, 15, 16, 17}),
    UNICODE_NAME: frozenset({1, 2}),
    "sp ace.py": frozenset({1}),
    QUOTED_NAME: frozenset({1}),
}


@pytest.mark.parametrize("quotepath", ["true", "false"])
def test_added_lines_from_real_git_diff(diffed_repo: Path, quotepath: str) -> None:
    diff = git(
        diffed_repo,
        "-c",
        f"core.quotepath={quotepath}",
        "diff",
        "-U0",
        "--no-renames",
        "HEAD~1",
        "HEAD",
    )
    assert '"b/say \\"hi\\"\\tback\\\\slash.py"' in diff
    if quotepath == "true":
        assert '"b/my fil\\303\\251 x.py"' in diff
    assert "\\ No newline at end of file" in diff
    assert "Binary files" in diff
    assert added_lines_from_diff(diff) == EXPECTED_ADDED


def test_added_lines_with_context_lines(diffed_repo: Path) -> None:
    diff = git(diffed_repo, "diff", "-U3", "--no-renames", "HEAD~1", "HEAD")
    assert added_lines_from_diff(diff) == EXPECTED_ADDED


def test_added_lines_of_an_empty_diff() -> None:
    assert added_lines_from_diff("") == {}


@pytest.mark.parametrize(
    "diff",
    [
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ nonsense @@\n",
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n+b\n",
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n+b",
        'diff --git a/x b/x\n--- a/x\n+++ "b/x\\q"\n@@ -0,0 +1 @@\n+a\n',
        'diff --git a/x b/x\n--- a/x\n+++ "b/x\n@@ -0,0 +1 @@\n+a\n',
    ],
    ids=["bad-header", "stray-line", "truncated-hunk", "bad-escape", "unclosed-quote"],
)
def test_added_lines_rejects_malformed_diffs(diff: str) -> None:
    with pytest.raises(ValueError):
        added_lines_from_diff(diff)


# --- durations and counts -------------------------------------------------------------------

RECORDS = (
    TestRecord("t.py::a", "passed", 0.25),
    TestRecord("t.py::b", "failed", 1.5),
    TestRecord("t.py::c", "error", 0.125, when="setup"),
    TestRecord("t.py::d", "xfailed", 0.5),
    TestRecord("t.py::e", "skipped", 9.0, when="setup"),
    TestRecord("t.py::f", "deselected"),
    TestRecord("t.py::g", "missing"),
    TestRecord("t.py::h", "xpassed", 0.125),
)


def test_duration_total_sums_tests_that_ran(tmp_path: Path) -> None:
    obs = observe(gate("duration.total"), context(tmp_path, tests=RECORDS))
    assert (obs.status, obs.value) == ("ok", 2.5)
    assert obs.extra["tests"] == 5


def test_duration_max_test_names_the_slowest(tmp_path: Path) -> None:
    obs = observe(gate("duration.max_test"), context(tmp_path, tests=RECORDS))
    assert (obs.status, obs.value) == ("ok", 1.5)
    assert obs.extra["test"] == "t.py::b"
    assert "t.py::b" in obs.detail


def test_tests_count_counts_tests_that_ran(tmp_path: Path) -> None:
    obs = observe(gate("tests.count"), context(tmp_path, tests=RECORDS))
    assert (obs.status, obs.value) == ("ok", 5.0)
    assert obs.extra["outcomes"]["skipped"] == 1
    empty = observe(gate("tests.count"), context(tmp_path))
    assert (empty.status, empty.value) == ("ok", 0.0)


@pytest.mark.parametrize("metric", ["duration.total", "duration.max_test"])
def test_durations_without_tests_that_ran_are_missing(tmp_path: Path, metric: str) -> None:
    skipped_only = (TestRecord("t.py::e", "skipped", 1.0),)
    obs = observe(gate(metric), context(tmp_path, tests=skipped_only))
    assert (obs.status, obs.value) == ("missing", None)


def test_non_finite_duration_is_an_error(tmp_path: Path) -> None:
    tests = (TestRecord("t.py::a", "passed", math.nan),)
    assert observe(gate("duration.total"), context(tmp_path, tests=tests)).status == "error"


# --- recorded metrics -----------------------------------------------------------------------

RECORDED = (
    RecordedMetric("t.py::a", "latency", 3.0),
    RecordedMetric("t.py::a", "other", 100.0),
    RecordedMetric("t.py::b", "latency", 1.0),
    RecordedMetric("t.py::c", "latency", 8.0),
)


@pytest.mark.parametrize(
    ("aggregate", "expected"), [("last", 8.0), ("min", 1.0), ("max", 8.0), ("mean", 4.0)]
)
def test_recorded_metric_aggregates(tmp_path: Path, aggregate: str, expected: float) -> None:
    obs = observe(gate("metric.latency", aggregate), context(tmp_path, recorded=RECORDED))
    assert (obs.status, obs.value) == ("ok", expected)
    assert obs.extra["count"] == 3
    assert obs.extra["tests"] == ["t.py::a", "t.py::b", "t.py::c"]


def test_recorded_metric_not_recorded_is_missing(tmp_path: Path) -> None:
    obs = observe(gate("metric.throughput"), context(tmp_path, recorded=RECORDED))
    assert (obs.status, obs.value) == ("missing", None)
    assert "throughput" in obs.detail


@pytest.mark.parametrize(
    ("metric", "aggregate", "recorded"),
    [
        ("metric.latency", "median", RECORDED),
        ("metric.", "last", RECORDED),
        ("metric.bad", "last", (RecordedMetric("t.py::a", "bad", math.inf),)),
    ],
    ids=["unknown-aggregate", "no-name", "infinite-value"],
)
def test_recorded_metric_errors(
    tmp_path: Path, metric: str, aggregate: str, recorded: tuple[RecordedMetric, ...]
) -> None:
    obs = observe(gate(metric, aggregate), context(tmp_path, recorded=recorded))
    assert (obs.status, obs.value) == ("error", None)


# --- sensor commands ------------------------------------------------------------------------


def python_sensor(code: str, **source: Any) -> MeasuredGate:
    name = source.pop("name", "value")
    return gate(f"sensor.{name}", command=[PY, "-c", textwrap.dedent(code)], **source)


def test_sensor_reads_default_key(tmp_path: Path) -> None:
    obs = observe(python_sensor("print('{\"value\": 12.5}')"), context(tmp_path))
    assert (obs.status, obs.value) == ("ok", 12.5), obs.detail
    assert obs.extra["key"] == "value"


def test_sensor_reads_dotted_key_through_lists(tmp_path: Path) -> None:
    code = "import json; print(json.dumps({'a': {'b': [1, {'c': 7}]}}))"
    obs = observe(python_sensor(code, key="a.b.1.c"), context(tmp_path))
    assert (obs.status, obs.value) == ("ok", 7.0), obs.detail


def test_sensor_runs_in_workdir_with_given_env(tmp_path: Path) -> None:
    (tmp_path / "value.txt").write_text("3")
    code = """
        import json, os
        base = int(open("value.txt").read())
        print(json.dumps({"value": base + int(os.environ["LOOP_EXTRA"])}))
    """
    env = {**os.environ, "LOOP_EXTRA": "4"}
    obs = observe(python_sensor(code), context(tmp_path, env=env))
    assert (obs.status, obs.value) == ("ok", 7.0), obs.detail


def test_sensor_timeout_is_an_error(tmp_path: Path) -> None:
    started = time.monotonic()
    obs = observe(python_sensor("import time; time.sleep(30)", timeout=0.5), context(tmp_path))
    assert time.monotonic() - started < 10
    assert (obs.status, obs.value) == ("error", None)
    assert "timed out after 0.5 s" in obs.detail


def process_alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for a reaper does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sensor_timeout_kills_the_process_group(tmp_path: Path) -> None:
    # The child exits at once; a grandchild keeps stdout open and sleeps. That must time
    # out (not hang) and the grandchild must be killed with its group.
    code = f"""
        import subprocess, sys
        child = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(60)"])
        open("grandchild.pid", "w").write(str(child.pid))
        print('{{"value": 1}}')
    """
    started = time.monotonic()
    obs = observe(python_sensor(code, timeout=1), context(tmp_path))
    assert time.monotonic() - started < 10
    assert obs.status == "error" and "timed out" in obs.detail
    pid = int((tmp_path / "grandchild.pid").read_text())
    deadline = time.monotonic() + 5
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(pid)


def test_sensor_nonzero_exit_reports_code_and_stderr_tail(tmp_path: Path) -> None:
    code = """
        import sys
        sys.stderr.write("noise\\n" * 2000 + "the real reason\\n")
        sys.exit(3)
    """
    obs = observe(python_sensor(code), context(tmp_path))
    assert (obs.status, obs.value) == ("error", None)
    assert "exited with code 3" in obs.detail
    assert obs.detail.endswith("the real reason")
    assert len(obs.detail) < 600


def test_sensor_killed_by_a_signal_is_an_error(tmp_path: Path) -> None:
    obs = observe(python_sensor("import os; os.kill(os.getpid(), 9)"), context(tmp_path))
    assert (obs.status, obs.value) == ("error", None)
    assert "was killed by signal 9" in obs.detail


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        ("not json", "not valid JSON"),
        ('{"value": NaN}', "not finite"),
        ('{"value": Infinity}', "not finite"),
        ('{"value": -Infinity}', "not finite"),
        ('{"value": "12"}', "not a number"),
        ('{"value": true}', "not a number"),
        ('{"value": null}', "not a number"),
        ('{"other": 1}', "not found"),
        ("[1, 2]", "not found"),
        ('{"value": 1' + "0" * 400 + "}", "too large"),
        ("[" * 100000 + "]" * 100000, "not valid JSON"),
    ],
    ids=[
        "text",
        "nan",
        "inf",
        "-inf",
        "string",
        "bool",
        "null",
        "no-key",
        "array",
        "huge-int",
        "deep-nesting",
    ],
)
def test_sensor_output_problems_are_errors(tmp_path: Path, stdout: str, reason: str) -> None:
    (tmp_path / "out.txt").write_text(stdout)
    code = "import sys; sys.stdout.write(open('out.txt').read())"
    obs = observe(python_sensor(code), context(tmp_path))
    assert (obs.status, obs.value) == ("error", None)
    assert reason in obs.detail, obs.detail


def test_sensor_huge_output_is_refused_quickly(tmp_path: Path) -> None:
    code = """
        import sys, time
        sys.stdout.write("x" * (3 << 20))
        sys.stdout.flush()
        time.sleep(30)
    """
    started = time.monotonic()
    obs = observe(python_sensor(code, timeout=20), context(tmp_path))
    assert time.monotonic() - started < 10
    assert (obs.status, obs.value) == ("error", None)
    assert "more than 1048576 bytes" in obs.detail


@pytest.mark.parametrize(
    "source",
    [
        {"command": "echo 1"},
        {"command": []},
        {"command": ["echo", 1]},
        {"command": ["/nonexistent/sensor-binary"]},
        {"command": [PY, "-c", "print(1)"], "timeout": 0},
        {"command": [PY, "-c", "print(1)"], "timeout": "soon"},
        {"command": [PY, "-c", "print(1)"], "key": ""},
    ],
    ids=["string", "empty", "non-string", "not-found", "zero-timeout", "bad-timeout", "no-key"],
)
def test_sensor_bad_configuration_is_an_error(tmp_path: Path, source: dict[str, Any]) -> None:
    obs = observe(gate("sensor.value", **source), context(tmp_path))
    assert (obs.status, obs.value) == ("error", None)


# --- pytest-benchmark -----------------------------------------------------------------------

BENCH_TESTS = """\
def test_fast(benchmark):
    benchmark(lambda: sum(range(10)))


def test_slow(benchmark):
    benchmark(lambda: sum(range(2000)))
"""


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pytest_benchmark")
    root = tmp_path_factory.mktemp("bench")
    (root / "test_b.py").write_text(BENCH_TESTS)
    # Without our own pytest's variables: under xdist, PYTEST_XDIST_WORKER would make
    # pytest-benchmark disable itself in the inner run.
    env = {k: v for k, v in clean_env().items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    subprocess.run(
        [
            PY,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_benchmark.plugin",
            "--benchmark-json=bench.json",
            "--benchmark-min-rounds=3",
            "--benchmark-max-time=0.01",
            "test_b.py",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        check=True,
    )
    return root


def bench_stats(root: Path, name: str) -> dict[str, Any]:
    document = json.loads((root / "bench.json").read_text())
    return next(b["stats"] for b in document["benchmarks"] if b["name"] == name)


@pytest.mark.parametrize("stat", ["min", "max", "mean", "median", "stddev", "ops", "rounds"])
def test_benchmark_stat_by_name(bench_dir: Path, stat: str) -> None:
    obs = observe(
        gate(f"benchmark.{stat}", file="bench.json", name="test_fast"), context(bench_dir)
    )
    assert obs.status == "ok", obs.detail
    assert obs.value == float(bench_stats(bench_dir, "test_fast")[stat])
    assert obs.extra == {"benchmark": "test_b.py::test_fast", "stat": stat}


def test_benchmark_by_fullname(bench_dir: Path) -> None:
    obs = observe(
        gate("benchmark.mean", file="bench.json", name="test_b.py::test_slow"), context(bench_dir)
    )
    assert obs.value == bench_stats(bench_dir, "test_slow")["mean"]


def test_benchmark_needs_a_name_when_there_are_several(bench_dir: Path) -> None:
    obs = observe(gate("benchmark.mean", file="bench.json"), context(bench_dir))
    assert (obs.status, obs.value) == ("error", None)
    assert "source.name" in obs.detail


def test_benchmark_single_entry_needs_no_name(bench_dir: Path, tmp_path: Path) -> None:
    document = json.loads((bench_dir / "bench.json").read_text())
    document["benchmarks"] = document["benchmarks"][:1]
    (tmp_path / "one.json").write_text(json.dumps(document))
    obs = observe(gate("benchmark.min", file="one.json"), context(tmp_path))
    assert obs.status == "ok", obs.detail
    assert obs.value == document["benchmarks"][0]["stats"]["min"]


@pytest.mark.parametrize(
    ("source", "status", "text"),
    [
        ({"file": "bench.json", "name": "test_missing"}, "missing", "test_b.py::test_fast"),
        ({"file": "nothere.json", "name": "test_fast"}, "missing", "nothere.json"),
        ({"name": "test_fast"}, "error", "source.file"),
    ],
    ids=["unknown-name", "no-file", "file-not-set"],
)
def test_benchmark_problems(
    bench_dir: Path, source: dict[str, Any], status: str, text: str
) -> None:
    obs = observe(gate("benchmark.mean", **source), context(bench_dir))
    assert (obs.status, obs.value) == (status, None)
    assert text in obs.detail


@pytest.mark.parametrize("stat", ["outliers", "nonsense"])
def test_benchmark_stat_that_is_not_a_number(bench_dir: Path, stat: str) -> None:
    obs = observe(
        gate(f"benchmark.{stat}", file="bench.json", name="test_fast"), context(bench_dir)
    )
    assert (obs.status, obs.value) == ("error", None)


def test_benchmark_file_without_benchmarks_is_missing(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('{"benchmarks": []}')
    obs = observe(gate("benchmark.mean", file="b.json"), context(tmp_path))
    assert (obs.status, obs.value) == ("missing", None)


def test_benchmark_ambiguous_name_asks_for_fullname(tmp_path: Path) -> None:
    entries = [
        {"name": "test_x", "fullname": f"{module}::test_x", "stats": {"mean": 1.0}}
        for module in ("a.py", "b.py")
    ]
    (tmp_path / "b.json").write_text(json.dumps({"benchmarks": entries}))
    ambiguous = observe(gate("benchmark.mean", file="b.json", name="test_x"), context(tmp_path))
    assert ambiguous.status == "error" and "fullname" in ambiguous.detail
    exact = observe(gate("benchmark.mean", file="b.json", name="b.py::test_x"), context(tmp_path))
    assert (exact.status, exact.value) == ("ok", 1.0)


def test_benchmark_file_of_another_kind_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('{"benchmarks": 3}')
    obs = observe(gate("benchmark.mean", file="b.json"), context(tmp_path))
    assert obs.status == "error" and "pytest-benchmark" in obs.detail


# --- observations and the registry ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "status"),
    [(None, "ok"), (math.nan, "ok"), (True, "ok"), ("1", "ok"), (1.0, "missing"), (1.0, "bad")],
)
def test_observation_invariants(value: Any, status: str) -> None:
    with pytest.raises(ValueError):
        Observation(value, status, "detail")


def test_observation_detail_is_one_line() -> None:
    obs = Observation(1, "ok", "first\nsecond  third")
    assert obs.detail == "first second third"
    assert isinstance(obs.value, float)


def test_builtin_registry_is_read_only() -> None:
    assert set(BUILTIN_SOURCES) == {
        "coverage",
        "duration",
        "tests",
        "metric",
        "sensor",
        "benchmark",
    }
    with pytest.raises(TypeError):
        BUILTIN_SOURCES["x"] = BUILTIN_SOURCES["tests"]  # type: ignore[index]


def test_plugin_sources_extend_a_copy(tmp_path: Path) -> None:
    def constant(g: MeasuredGate, ctx: SensorContext) -> Observation:
        return Observation(42.0, "ok", f"constant for {g.metric}")

    def crashing(g: MeasuredGate, ctx: SensorContext) -> Observation:
        raise RuntimeError("plugin bug")

    sources = {**BUILTIN_SOURCES, "const": constant, "crash": crashing}
    assert observe(gate("const.answer"), context(tmp_path), sources).value == 42.0
    broken = observe(gate("crash.x"), context(tmp_path), sources)
    assert (broken.status, broken.value) == ("error", None)
    assert "RuntimeError: plugin bug" in broken.detail
    assert observe(gate("const.answer"), context(tmp_path)).status == "error"


def test_plugin_source_must_return_an_observation(tmp_path: Path) -> None:
    def sloppy(g: MeasuredGate, ctx: SensorContext) -> Observation:
        return 42.0  # type: ignore[return-value]

    obs = observe(gate("sloppy.x"), context(tmp_path), {"sloppy": sloppy})
    assert (obs.status, obs.value) == ("error", None)
    assert "returned float" in obs.detail


def test_detail_never_carries_newlines(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('a\\nb\\n'); sys.exit(1)"
    obs = observe(python_sensor(code), context(tmp_path))
    assert not re.search(r"[\r\n]", obs.detail)


def test_a_junk_file_that_moves_diff_coverage_is_named_with_its_lines(
    baselined_repo: Path, candidates: Any
) -> None:
    """Where the user started: the honest fix beside an untracked module nothing runs; the
    diff-coverage gate says which lines of which file did not run, not only how many."""
    from testing.repos import run_cli

    candidates.honest(baselined_repo)
    (baselined_repo / "src/textkit/scratch.py").write_text(
        "def leftover(x):\n    y = x + 1\n    return y * 2\n", "utf-8"
    )
    result = run_cli(baselined_repo, "verify")
    verdict = json.loads((baselined_repo / ".loop-contract/verdict.json").read_text("utf-8"))
    [diff] = [g for g in verdict["gates"]["measured"] if g["id"] == "changed-lines-covered"]
    assert diff["status"] == "fail", diff
    assert "not run: src/textkit/scratch.py:1-3" in diff["message"], diff["message"]
    assert "src/textkit/scratch.py:1-3" in result.stdout + result.stderr


def test_missed_lines_are_shown_as_ranges_for_the_first_files() -> None:
    from pytest_loopcontract.verifier.sensors.coverage import missed_lines_text

    assert missed_lines_text({"a.py": [3, 4, 5, 9]}) == "a.py:3-5, 9"
    many = {f"m{i}.py": [1] for i in range(5)}
    assert missed_lines_text(many) == "m0.py:1; m1.py:1; m2.py:1; and 2 more files"


def test_coverage_gates_are_measured_when_the_project_names_no_coverage_source(
    example_repo: Path, candidates: Any
) -> None:
    """Without ``[tool.coverage.run] source`` coverage.py measures every file it sees run,
    the verifier's own plugin copied beside the run among them; that copy is gone when the
    report is made, and coverage.py's "No source for code" must not turn the gates to errors."""
    from testing.repos import git, run_cli

    pyproject = example_repo / "pyproject.toml"
    text = pyproject.read_text("utf-8")
    pyproject.write_text(text.replace('[tool.coverage.run]\nsource = ["src"]\n', ""), "utf-8")
    git(example_repo, "commit", "-qam", "no coverage source")
    assert run_cli(example_repo, "baseline").returncode == 0
    candidates.honest(example_repo)

    result = run_cli(example_repo, "verify")

    verdict = json.loads((example_repo / ".loop-contract/verdict.json").read_text("utf-8"))
    by_id = {g["id"]: g for g in verdict["gates"]["measured"]}
    assert by_id["coverage"]["status"] == "pass", by_id["coverage"]
    assert by_id["changed-lines-covered"]["status"] == "pass", by_id["changed-lines-covered"]
    assert "No source" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stdout


def test_the_report_leaves_out_the_folder_the_plugin_is_copied_to() -> None:
    """The omit pattern is written out (the sensors load without the runner), so it must
    follow the name the runner copies the plugin under."""
    from pytest_loopcontract.verifier.runner import INNER_NAME
    from pytest_loopcontract.verifier.sensors.coverage_report import INNER_OMIT

    assert f"*/{INNER_NAME}/*" == INNER_OMIT
