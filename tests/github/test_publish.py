"""The Action's modes end to end without the runner: real verification of three seat branches
(one tampered, one failing a measured gate, one good), real artifacts, real PyGithub over real
HTTP against the fake GitHub server, and the human gate from reviews."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.github.decide import LESSONS_PATH, ROUTES_PATH, gate
from pytest_loopcontract.github.publish import DATA_BRANCH, state_path
from testing.github_field import make_field, repo_of, run_publish, server
from testing.repos import GIT_ENV

WRITES = re.compile(r"^(POST|PATCH|PUT|DELETE)$")


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LOOP_CONTRACT_WRITE_SPACING", "0")


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three seat branches, each verified the way the verify job does, once for the module."""
    return make_field(tmp_path_factory.mktemp("field"))


def test_publish_marks_the_good_seat_and_explains_the_others(
    field: dict[str, Any], tmp_path: Path
) -> None:
    with server(field) as gh:
        outcome = run_publish(gh, field, tmp_path)
        assert not validate_result(outcome.result)
        assert outcome.result["winner"] == "good" and outcome.winner_pr == 11
        stages = {c["seat"]: c["stage"] for c in outcome.result["candidates"]}
        assert stages == {"good": "winner", "slow": "measured", "cheat": "hard"}
        good = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert good is not None and good.state == "pending"  # only the gate sets success
        assert good.description == "proposed winner, waiting for a maintainer's review"
        for seat in ("slow", "cheat"):
            status = gh.latest_status(field["heads"][seat], "loop-contract/winner")
            assert status is not None and status.state == "failure"
        assert gh.latest_status("f" * 40, "loop-contract/winner") is None
        for number in (11, 12, 13):
            (comment,) = gh.comments(number)
            assert comment.body.startswith("<!-- loop-contract:calc -->")
            assert len(comment.body) <= 65_536
        assert gh.comments(40) == []
        # a check run on each head: the verdict's conclusion, annotations where it failed
        for seat, conclusion in (("good", "success"), ("slow", "failure"), ("cheat", "failure")):
            (check,) = gh.check_runs(field["heads"][seat])
            assert (check.name, check.status, check.conclusion) == (
                "loop-contract",
                "completed",
                conclusion,
            ), seat
            assert outcome.checks[{"good": 11, "slow": 12, "cheat": 13}[seat]] == check.id
        assert gh.check_runs(field["heads"]["good"])[0].annotations == []
        assert gh.check_runs(field["heads"]["cheat"])[0].annotations, "the tamper is annotated"
        # the request budget of a local publish: 3 + 5N when something changed (the state
        # read and write, the pull list; per candidate its files, comment, comment write,
        # status, check run), plus one per 50 annotations past a check run's first 50
        updates = gh.count("PATCH", r"/check-runs/")
        assert len(gh.requests) <= 3 + 5 * 3 + updates, "\n".join(map(str, gh.requests))
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert state["pulls"]["good"]["pr"] == 11
        # nothing changed: nothing is written
        before = len(gh.requests)
        again = run_publish(gh, field, tmp_path)
        assert set(again.comments.values()) == {"unchanged"}
        writes = [r for r in gh.requests[before:] if WRITES.match(r[0])]
        assert writes == []
        assert len(gh.check_runs(field["heads"]["good"])) == 1


def test_artifact_claiming_another_sha_is_refused(field: dict[str, Any], tmp_path: Path) -> None:
    forged = tmp_path / "artifacts"
    shutil.copytree(field["artifacts"], forged)
    meta = forged / "candidate-11" / "meta.json"
    meta.write_text(json.dumps({"pr": 11, "head_sha": "e" * 40}), "utf-8")
    with server(field) as gh:
        outcome = run_publish(gh, field, tmp_path / "w", artifacts=forged)
        good = next(c for c in outcome.result["candidates"] if c["seat"] == "good")
        assert good["stage"] == "hard"
        assert good["reasons"][0]["code"] == "artifact_rejected"
        assert outcome.result["winner"] is None
        status = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert status is not None and status.state == "failure"


def test_a_closed_pull_request_and_api_faults(field: dict[str, Any], tmp_path: Path) -> None:
    with server(field) as gh:
        gh.set_pull_state(12, "closed")
        gh.fail_next("GET", r"/pulls$", 502)
        gh.fail_next("POST", r"/statuses/", 403, headers={"Retry-After": "1"})
        # a workflow without `checks: write`: the check run is refused, the rest goes on
        gh.fail_next("POST", r"/check-runs$", 403, times=3)
        outcome = run_publish(gh, field, tmp_path)
        assert {c["seat"] for c in outcome.result["candidates"]} == {"good", "cheat"}
        assert gh.comments(12) == [] and gh.statuses(field["heads"]["slow"]) == []
        good = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert good is not None and good.state == "pending"


def test_the_human_gate_from_reviews(field: dict[str, Any], tmp_path: Path) -> None:
    with server(field) as gh:
        run_publish(gh, field, tmp_path)
        repo = repo_of(gh)
        for login, permission in (("reader", "read"), ("maint", "write")):
            gh.add_user(login)
            gh.set_permission(login, permission)
        gh.add_review(11, "reader", "APPROVED", field["heads"]["good"])
        gh.add_review(11, "good-bot", "APPROVED", field["heads"]["good"])
        pending = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert pending.decision == "pending"
        gh.add_review(11, "maint", "APPROVED", field["heads"]["good"])
        other = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=12)
        assert other.decision == "none"
        approved = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert approved.decision == "approve" and approved.by == "maint"
        good = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert good is not None and good.state == "success"  # the gate's, after the approval
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert state["result"]["decision"]["by"] == "maint"
        assert state["result"]["status"] == "decided"
        for number in (11, 12, 13):
            assert "maint" in gh.comments(number)[0].body
        # the lessons and the route table go to the data branch at the decision
        files = gh.branch_files(DATA_BRANCH)
        lessons = [json.loads(line) for line in files[LESSONS_PATH].splitlines()]
        assert sorted(lesson["kind"] for lesson in lessons) == ["measured", "tamper"]
        assert all(
            "observed" in lesson["evidence"] or lesson["kind"] == "tamper" for lesson in lessons
        )
        routes = json.loads(files[ROUTES_PATH])
        assert routes["python.calc"]["slow"]["demotions"] == 1
        once = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert once.reason == "already decided"


def test_a_run_speaks_only_for_its_own_pull_request(field: dict[str, Any], tmp_path: Path) -> None:
    """A pull request controls the verify run it triggers, so that run's artifacts count only
    for that pull request; the others keep what their own runs recorded."""
    heads = field["heads"]
    with server(field) as gh:
        first = run_publish(gh, field, tmp_path / "a", run_head_sha=heads["slow"])
        assert [c["seat"] for c in first.result["candidates"]] == ["slow"]
        assert gh.statuses(heads["good"]) == [] and gh.comments(11) == []
        second = run_publish(gh, field, tmp_path / "b", run_head_sha=heads["good"])
        assert {c["seat"] for c in second.result["candidates"]} == {"good", "slow"}
        assert second.result["winner"] == "good"
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert set(state["verified"]) == {"11", "12"}
        # a new push to slow: its recorded verification no longer applies
        gh.set_pull_head(12, "d" * 40)
        third = run_publish(gh, field, tmp_path / "c", run_head_sha=heads["good"])
        assert [c["seat"] for c in third.result["candidates"]] == ["good"]
