"""Verification that really starts (issue 32, points 4 and 6), against the fake GitHub that
models GitHub's rule: an event caused by ``GITHUB_TOKEN`` starts no run, except
``workflow_dispatch``.

Before: the propose job opened each seat's pull request with ``GITHUB_TOKEN``, so no
``pull_request`` run followed and the seat was never verified on GitHub; and a candidate whose
verify run was cancelled (a newer run in its concurrency group) stayed unverified for good. Now
the propose job and publish dispatch the verify workflow on the default branch, and publish
takes a dispatched run's artifacts as the pull requests' own.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import DEFAULT_VERIFY_WORKFLOW, load_contract
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import DATA_BRANCH, state_path
from pytest_loopcontract.github.trust import VerifyRun
from pytest_loopcontract.github.verify_dispatch import request_verification
from testing.fake_github import FakeGitHub, StartedRun
from testing.github_field import repo_of, run_publish, server, verify_run

ROOT = Path(__file__).resolve().parents[2]
DISPATCHABLE = (ROOT / ".github" / "workflows" / "loop-contract-verify.yml").read_bytes()


pytestmark = pytest.mark.usefixtures("github_identity")


def dispatches(gh: FakeGitHub) -> list[tuple[str, str, dict[str, str]]]:
    return [
        (run.workflow or "", run.ref, dict(run.inputs))
        for run in gh.started
        if run.event == "workflow_dispatch"
    ]


def test_a_pull_request_the_token_opens_starts_nothing_but_a_dispatch_does(
    field: dict[str, Any],
) -> None:
    contract = load_contract(field["root"] / "loopcontract.yml")
    with server(field) as gh:
        gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: DISPATCHABLE})
        gh.commit_files("loop-contract/calc/extra", {"calc.py": b"x = 1\n"})
        repo = repo_of(gh)  # GITHUB_TOKEN: the bot's identity
        pull = repo.create_pull(base="main", head="loop-contract/calc/extra", title="t", body="")
        assert gh.started == []  # GitHub's rule: no pull_request run for the token's events
        assert [(r.event, r.pr, r.action) for r in gh.suppressed] == [
            ("pull_request", pull.number, "opened")
        ]
        assert request_verification(repo, contract, pull.number)
        assert dispatches(gh) == [(DEFAULT_VERIFY_WORKFLOW, "main", {"pr": str(pull.number)})]
        # a person's token is another matter: their pull request starts its run
        gh.add_token("alice-token", "alice")
        gh.commit_files("feature", {"calc.py": b"y = 2\n"})
        theirs = make_github("alice-token", base_url=gh.base_url, lazy=True).get_repo("octo/calc")
        mine = theirs.create_pull(base="main", head="feature", title="t", body="")
        assert gh.started[-1] == StartedRun(
            "pull_request", None, "feature", {}, "alice", mine.number, "opened"
        )


def test_a_verify_workflow_without_the_trigger_is_reported_not_fatal(
    field: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    contract = load_contract(field["root"] / "loopcontract.yml")
    with server(field) as gh:  # the scene's verify workflow: `on: pull_request` only
        with caplog.at_level(logging.WARNING, logger="loopcontract.github"):
            assert not request_verification(repo_of(gh), contract, 11)
        assert "does not have 'workflow_dispatch' trigger" in caplog.text
        assert gh.started == []


def test_publish_verifies_again_a_candidate_whose_run_never_came_once_per_head(
    field: dict[str, Any], tmp_path: Path
) -> None:
    heads = field["heads"]
    with server(field) as gh:
        gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: DISPATCHABLE})
        # slow's own run is still going; cheat's was cancelled (no artifact, no record)
        gh.add_workflow_run(501, head_sha=heads["slow"], head_branch="x", status="in_progress")
        run_publish(gh, field, tmp_path / "a", run=verify_run(heads["good"], 11))
        assert dispatches(gh) == [(DEFAULT_VERIFY_WORKFLOW, "main", {"pr": "13"})]
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert state["requested"] == {"13": heads["cheat"]}
        # the next publish asks for nothing twice; slow's run then ends without a verdict
        gh.add_workflow_run(501, head_sha=heads["slow"], head_branch="x", conclusion="cancelled")
        run_publish(gh, field, tmp_path / "b", run=verify_run(heads["good"], 11))
        assert [d[2]["pr"] for d in dispatches(gh)] == ["13", "12"]
        # a new head: the queued dispatched run of #13 (its run name says so) reads the head
        # when it starts, so nothing is asked; once that run is over, the new head is asked for
        gh.set_pull_head(13, heads["good"][:-1] + ("0" if heads["good"][-1] != "0" else "1"))
        run_publish(gh, field, tmp_path / "c", run=verify_run(heads["good"], 11))
        assert [d[2]["pr"] for d in dispatches(gh)] == ["13", "12"]
        first = gh.started[0].run_id
        assert first is not None
        gh.finish_run(first, "cancelled")
        run_publish(gh, field, tmp_path / "d", run=verify_run(heads["good"], 11))
        assert [d[2]["pr"] for d in dispatches(gh)] == ["13", "12", "13"]


def dispatched_run(gh: FakeGitHub, run_id: int, branch: str = "main") -> VerifyRun:
    sha = gh.branch_sha(branch)
    assert sha is not None
    gh.add_workflow_run(run_id, head_sha=sha, head_branch=branch, event="workflow_dispatch")
    run = VerifyRun.from_event(gh.workflow_run_event(run_id, pull_requests=[]))
    assert run is not None and run.dispatched
    return run


def test_a_dispatched_run_on_the_default_branch_speaks_for_the_candidates_it_verified(
    field: dict[str, Any], tmp_path: Path
) -> None:
    heads = field["heads"]
    with server(field) as gh:
        gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: DISPATCHABLE})
        only_good = tmp_path / "artifacts"
        only_good.mkdir()
        shutil.copytree(field["artifacts"] / "candidate-11", only_good / "candidate-11")
        outcome = run_publish(
            gh, field, tmp_path / "a", run=dispatched_run(gh, 601), artifacts=only_good
        )
        assert outcome.result["winner"] == "good" and outcome.winner_pr == 11
        assert [c["seat"] for c in outcome.result["candidates"]] == ["good"]
        status = gh.latest_status(heads["good"], "loop-contract/winner")
        assert status is not None and status.state == "pending"


def test_a_run_dispatched_on_another_branch_is_untrusted(
    field: dict[str, Any], tmp_path: Path
) -> None:
    """``workflow_dispatch`` runs the workflow file of the ref it names: on a branch someone
    pushed, that file (and the action it calls) is theirs."""
    with server(field) as gh:
        gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: DISPATCHABLE})
        gh.commit_files("evil", {DEFAULT_VERIFY_WORKFLOW: DISPATCHABLE})
        run = dispatched_run(gh, 602, branch="evil")
        outcome = run_publish(gh, field, tmp_path, run=run)
        reasons = {c["seat"]: c["reasons"][0] for c in outcome.result["candidates"]}
        assert {r["code"] for r in reasons.values()} == {"verification_untrusted"}
        assert (
            "dispatched on 'evil', not on the default branch 'main'" in reasons["good"]["message"]
        )
        assert outcome.result["winner"] is None
