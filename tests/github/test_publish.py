"""The Action's modes end to end without the runner: real verification of three seat branches
(one tampered, one failing a measured gate, one good), real artifacts, real PyGithub over real
HTTP against the fake GitHub server, and the human gate from reviews."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.report.markup import escape_markdown_inline
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.contract.model import Contract, load_contract
from pytest_loopcontract.github.contest_state import DATA_BRANCH, state_path
from pytest_loopcontract.github.decide import LESSONS_PATH, ROUTES_PATH, gate
from pytest_loopcontract.github.publish import PENDING_DESCRIPTION
from pytest_loopcontract.github.trust import VerifyRun
from testing.fake_github import FakeGitHub
from testing.github_field import NUMBERS, repo_of, run_publish, server, verify_run

WRITES = re.compile(r"^(POST|PATCH|PUT|DELETE)$")
BOT = "github-actions[bot]"


pytestmark = pytest.mark.usefixtures("github_identity")


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
        # a workflow without `checks: write`: every check run is refused (GitHub's words,
        # not a rate limit, so nothing waits), and the rest goes on
        refused = {"message": "Resource not accessible by integration", "status": "403"}
        gh.fail_next("POST", r"/check-runs$", 403, body=refused, times=3)
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


# ------------------------------------------------ seats are identities, one base, one run each
#
# Each test below stages an attack as a stranger can mount it today against a real scene
# (real verdicts, real PyGithub over HTTP) and checks that it is closed.

CONTEXT = "loop-contract/winner"
WINNER_LINE = "**This pull request is seat `good`**: the proposed winner"


def bound(field: dict[str, Any]) -> Contract:
    """The scene's contract with each seat bound to its account (``seats[].github``); the same
    sha256 as the verdicts', as if those lines had been there when they were measured."""
    pinned = load_contract(field["root"] / "loopcontract.yml")
    seats = tuple({"name": s, "family": f"vendor-{s}", "github": f"{s}-bot"} for s in NUMBERS)
    return pinned._replace(seats=seats)


def fork_run(gh: FakeGitHub, run_id: int, sha: str, branch: str, owner: str) -> VerifyRun:
    """The verify run of a fork's pull request, from GitHub's event (it names no pull request)."""
    gh.add_workflow_run(run_id, head_sha=sha, head_branch=branch, head_owner=owner)
    run = VerifyRun.from_event(gh.workflow_run_event(run_id))
    assert run is not None and run.pull_numbers == ()
    return run


def artifacts_as(field: dict[str, Any], tmp: Path, seat: str, number: int) -> Path:
    """The honest artifact of ``seat``'s head as the run of pull request ``number`` uploads it."""
    folder = tmp / f"artifacts-{number}" / f"candidate-{number}"
    shutil.copytree(field["artifacts"] / f"candidate-{NUMBERS[seat]}", folder)
    meta = {"pr": number, "head_sha": field["heads"][seat]}
    (folder / "meta.json").write_text(json.dumps(meta), "utf-8")
    return folder.parent


def state_of(gh: FakeGitHub) -> dict[str, Any]:
    return dict(json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")]))


def status_of(gh: FakeGitHub, sha: str) -> tuple[str, str] | None:
    found = gh.latest_status(sha, CONTEXT)
    return (found.state, found.description) if found is not None else None


def test_a_fork_reusing_the_winning_seat_is_refused_and_the_seat_stays_put(
    field: dict[str, Any], tmp_path: Path
) -> None:
    """Attack (a): mallory opens a fork pull request from ``loop-contract/calc/good`` (the
    winning seat's branch name) with an honest verdict that fails a measured gate. It became a
    second candidate of seat good: the seat's stage (winner) went to both, so did the pending
    status and the proposed-winner comment, and the state (and so the gate) took the last pull
    request recorded for the seat: mallory's. Now the seat is bound to its account."""
    heads, contract = field["heads"], bound(field)
    with server(field) as gh:
        gh.set_pull_state(12, "closed")  # mallory's head is slow's code: no shared head
        gh.add_pull(20, "loop-contract/calc/good", heads["slow"], "mallory", fork=True)
        gh.set_pull_files(20, field["files"]["slow"])
        first = run_publish(
            gh, field, tmp_path / "a", run=verify_run(heads["good"], 11), contract=contract
        )
        assert first.winner_pr == 11
        run = fork_run(gh, 90, heads["slow"], "loop-contract/calc/good", "mallory")
        artifacts = artifacts_as(field, tmp_path, "slow", 20)
        outcome = run_publish(
            gh, field, tmp_path / "b", run=run, contract=contract, artifacts=artifacts
        )
        # the seat, its gate, its status and its comment stay on the real pull request
        assert outcome.result["winner"] == "good" and outcome.winner_pr == 11
        assert state_of(gh)["pulls"]["good"]["pr"] == 11
        assert status_of(gh, heads["good"]) == ("pending", PENDING_DESCRIPTION)
        assert WINNER_LINE in gh.comments(11)[0].body
        assert "This pull request is seat" not in gh.comments(20)[0].body
        # mallory's pull request is refused: seat_claimed, and its verdict is not used
        assert [(r.pull.number, r.code, r.reason) for r in outcome.refused] == [
            (20, "verification_untrusted", "seat_claimed")
        ]
        assert [c["seat"] for c in outcome.result["candidates"]] == ["good"]
        assert "20" not in state_of(gh)["verified"]
        mine = status_of(gh, heads["slow"])
        assert mine is not None and mine[0] == "failure" and "seat_claimed" in mine[1]
        (comment,) = gh.comments(20)
        assert "but is not its candidate" in comment.body
        assert "(`verification_untrusted`, `seat_claimed`)" in comment.body
        assert gh.check_runs(heads["slow"]) == []
        # the gate follows the real pull request; mallory took part, so never counts
        repo = repo_of(gh)
        gh.add_user("maint")
        gh.set_permission("maint", "write")
        gh.add_review(20, "maint", "APPROVED", heads["slow"])
        assert gate(repo, contract_id="calc", bot_login=BOT, pr_number=20).decision == "none"
        gh.add_review(11, "maint", "APPROVED", heads["good"])
        approved = gate(repo, contract_id="calc", bot_login=BOT, pr_number=11)
        assert (approved.decision, approved.winner_pr) == ("approve", 11)
        assert status_of(gh, heads["good"]) == ("success", "approved by maint")


def test_two_pull_requests_for_one_seat_are_both_refused_until_one_is_closed(
    field: dict[str, Any], tmp_path: Path
) -> None:
    """Attack (b), on a contract that binds no seat: a second pull request for seat good. The
    last one recorded used to take the seat; now neither holds it, each is told the other's
    number and what to do, and the seat comes back when a person closes one."""
    heads = field["heads"]
    with server(field) as gh:
        gh.set_pull_state(12, "closed")
        gh.add_pull(21, "loop-contract/calc/good", heads["slow"], "twin-bot", fork=True)
        gh.set_pull_files(21, field["files"]["slow"])
        run_publish(gh, field, tmp_path / "a", run=verify_run(heads["good"], 11))
        run = fork_run(gh, 91, heads["slow"], "loop-contract/calc/good", "twin-bot")
        artifacts = artifacts_as(field, tmp_path, "slow", 21)
        outcome = run_publish(gh, field, tmp_path / "b", run=run, artifacts=artifacts)
        assert outcome.result["winner"] is None and outcome.winner_pr is None
        assert outcome.result["candidates"] == []
        assert [(r.pull.number, r.reason) for r in outcome.refused] == [
            (11, "seat_shared"),
            (21, "seat_shared"),
        ]
        assert "good" not in state_of(gh)["pulls"]
        pairs = zip(outcome.refused, (21, 11), (heads["good"], heads["slow"]), strict=True)
        for refusal, other, head in pairs:
            assert f"also claimed by #{other}" in refusal.message
            assert "Close the pull request that should not compete" in refusal.message
            body = gh.comments(refusal.pull.number)[0].body
            assert escape_markdown_inline(refusal.message, limit=1500) in body
            found = status_of(gh, head)
            assert found is not None and found[0] == "failure" and "seat_shared" in found[1]
        # a person closes the copy; the seat's own run publishes again: the winner is back
        gh.set_pull_state(21, "closed")
        again = run_publish(gh, field, tmp_path / "c", run=verify_run(heads["good"], 11))
        assert (again.result["winner"], again.winner_pr, again.refused) == ("good", 11, ())
        assert status_of(gh, heads["good"]) == ("pending", PENDING_DESCRIPTION)


def test_a_pull_request_against_another_base_is_ignored(
    field: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Attack (c): a candidate branch opened against another base (its baseline, contract and
    protected paths are another branch's). It used to compete; now it is no candidate: no
    comment, no status, a note in the log. A contract's ``github.base`` moves the contest."""
    heads = field["heads"]
    with server(field) as gh:
        gh.set_pull_state(12, "closed")
        gh.add_pull(
            22, "loop-contract/calc/fast", heads["slow"], "fast-bot", fork=True, base_ref="release"
        )
        gh.set_pull_files(22, field["files"]["slow"])
        run = fork_run(gh, 92, heads["slow"], "loop-contract/calc/fast", "fast-bot")
        artifacts = artifacts_as(field, tmp_path, "slow", 22)
        with caplog.at_level(logging.INFO, logger="loopcontract.github"):
            outcome = run_publish(gh, field, tmp_path / "a", run=run, artifacts=artifacts)
        assert outcome.result["candidates"] == [] and outcome.refused == ()
        assert gh.comments(22) == [] and gh.statuses(heads["slow"]) == []
        assert "#22 targets 'release', not the contest's base 'main'" in caplog.text
        pinned = load_contract(field["root"] / "loopcontract.yml")
        release = pinned._replace(github=pinned.github._replace(base="release"))
        moved = run_publish(
            gh, field, tmp_path / "b", run=run, artifacts=artifacts, contract=release
        )
        assert [c["seat"] for c in moved.result["candidates"]] == ["fast"]
        assert gh.comments(11) == [] and gh.comments(22) != []


def test_a_copy_of_a_candidates_head_cannot_speak_for_it(
    field: dict[str, Any], tmp_path: Path
) -> None:
    """A run is matched to a candidate by pull request and head SHA together. mallory opens a
    fork pull request (no contest branch) at a copy of good's head commit whose run comes from
    a workflow of its own: that run used to be taken as good's run, and good's verification
    was replaced by ``verification_untrusted``. Now it is nobody's run."""
    heads = field["heads"]
    with server(field) as gh:
        run_publish(gh, field, tmp_path / "a", run=verify_run(heads["good"], 11))
        gh.add_pull(23, "feature/copy", heads["good"], "mallory", fork=True)
        gh.add_workflow_run(
            93,
            head_sha=heads["good"],
            head_branch="feature/copy",
            head_owner="mallory",
            path=".github/workflows/evil.yml",
        )
        run = VerifyRun.from_event(gh.workflow_run_event(93))
        outcome = run_publish(gh, field, tmp_path / "b", run=run)
        assert outcome.result["winner"] == "good" and outcome.winner_pr == 11
        assert "refused" not in state_of(gh)["verified"]["11"]
        assert status_of(gh, heads["good"]) == ("pending", PENDING_DESCRIPTION)
