"""The loop-contract check run: the verdict's summary, annotations where findings and failing
tests are, sent 50 at a time as GitHub requires, against the fake server built from GitHub's
recorded check-run responses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.github.checks import (
    MAX_ANNOTATIONS,
    PER_REQUEST,
    plan_check_run,
    post_check_run,
)
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.verdict_outcomes import pack_tests
from testing.fake_github import FakeGitHub
from testing.github_data import DATA
from testing.verdicts import passing_verdict

A = "a" * 40
CHECK_RUNS = r"^/repos/octo/demo/check-runs"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        server.add_pull(1, "loop-contract/calc/alice", A, "alice")
        yield server


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")


def _failing(n_tests: int, *, findings: int = 1) -> dict[str, Any]:
    records = [
        {
            "nodeid": f"tests/test_calc.py::test_{i}",
            "outcome": "failed",
            "duration": 0.1,
            "when": "call",
            "message": f"E   assert 1 == 2\n\ntests/test_calc.py:{i + 3}: AssertionError",
        }
        for i in range(n_tests)
    ]
    records.append({"nodeid": "tests/test_calc.py::test_skip", "outcome": "skipped",
                    "duration": 0.0, "when": "setup", "message": "Skipped"})  # fmt: skip
    found = [
        {"code": "vacuous_pass", "message": "passes mutated", "path": "tests/test_calc.py",
         "line": 7, "allowed": False}
    ] * findings  # fmt: skip
    return passing_verdict(
        verdict="fail",
        exit_code=25,
        isolation="sandbox",
        tests=pack_tests(records, durations=False),
        tamper={"detected": bool(findings), "findings": found},
        reasons=[{"code": "tamper_detected", "message": "vacuous_pass: passes mutated"}],
    )


def test_plan_of_a_passing_verdict_succeeds_without_annotations() -> None:
    plan = plan_check_run(A, passing_verdict(isolation="sandbox"), seat="alice", stage="winner")
    assert plan.conclusion == "success"
    assert plan.title == "verdict: PASS (exit 0)"
    assert plan.annotations == [] and plan.requests == 1
    assert "**Seat `alice`**: winner." in plan.summary


def test_plan_annotates_findings_then_failing_tests_at_their_lines() -> None:
    plan = plan_check_run(A, _failing(2), seat="bob", stage="hard")
    assert plan.conclusion == "failure"
    places = [
        (a["path"], a["start_line"], a["annotation_level"], a["title"]) for a in plan.annotations
    ]
    assert places == [
        ("tests/test_calc.py", 7, "failure", "tamper: vacuous_pass"),
        ("tests/test_calc.py", 3, "failure", "failed: tests/test_calc.py::test_0"),
        ("tests/test_calc.py", 4, "failure", "failed: tests/test_calc.py::test_1"),
    ]  # the skipped test is not annotated
    assert "`tamper_detected`" in plan.summary


def test_plan_without_a_verdict_says_why() -> None:
    plan = plan_check_run(A, None, seat="eve", stage="hard", why="artifact_rejected: bad sha")
    assert plan.conclusion == "failure" and plan.annotations == []
    assert "artifact_rejected: bad sha" in plan.summary


def test_annotations_are_capped_and_the_summary_says_so() -> None:
    plan = plan_check_run(A, _failing(MAX_ANNOTATIONS + 10), seat="bob", stage="hard")
    assert len(plan.annotations) == MAX_ANNOTATIONS
    assert plan.left_out == 11
    assert "11 more annotations were left out" in plan.summary
    assert plan.requests == MAX_ANNOTATIONS // PER_REQUEST


def test_post_sends_fifty_per_request_and_appends_by_updating(gh: FakeGitHub) -> None:
    plan = plan_check_run(A, _failing(119), seat="bob", stage="hard")
    assert len(plan.annotations) == 120
    repo = repo_of(gh)
    before = len(gh.requests)
    run_id = post_check_run(repo, plan)
    (run,) = gh.check_runs(A)
    assert run.id == run_id and run.name == "loop-contract"
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert run.annotations == plan.annotations  # all of them, in order
    assert run.requests == plan.requests == 3
    assert gh.count("POST", CHECK_RUNS) == 1 and gh.count("PATCH", CHECK_RUNS) == 2
    assert len(gh.requests) - before == 3  # nothing else: counted exactly in the publish budget


def test_the_fake_refuses_what_github_refuses(gh: FakeGitHub) -> None:
    """The cheat: a client that sends every annotation in one request. GitHub answers 422;
    so does the fake, so a test cannot pass on a request GitHub would refuse."""
    plan = plan_check_run(A, _failing(PER_REQUEST), seat="bob", stage="hard")
    repo = repo_of(gh)
    output = {"title": plan.title, "summary": plan.summary, "annotations": plan.annotations}
    with pytest.raises(GithubException) as refused:
        repo.create_check_run(name="x", head_sha=A, status="completed", conclusion="failure",
                              output=output)  # fmt: skip
    assert refused.value.status == 422
    with pytest.raises(GithubException):
        repo.create_check_run(name="x", head_sha="b" * 40, conclusion="success")
    assert gh.check_runs(A) == []


def test_the_fakes_answer_has_githubs_shape(gh: FakeGitHub) -> None:
    """Every key of the recorded real response, with this run's values in it."""
    recorded = _recorded_create()
    plan = plan_check_run(A, _failing(1), seat="bob", stage="hard")
    post_check_run(repo_of(gh), plan)
    (run,) = gh.check_runs(A)
    answer = repo_of(gh).get_check_run(run.id).raw_data
    assert set(answer) == set(recorded)
    assert set(answer["output"]) == set(recorded["output"])
    assert answer["output"]["annotations_count"] == 2
    assert answer["head_sha"] == A and answer["conclusion"] == "failure"


def _recorded_create() -> dict[str, Any]:
    lines = (DATA / "pygithub-replay/CheckRun.testCreateCheckRunCompleted.txt").read_text()
    body: dict[str, Any] = json.loads(lines.split("\n")[9])
    return body
