"""Candidate discovery over the API: listing a contest, and the PRs of a workflow run."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.plan import plan
from pytest_loopcontract.github.pulls import (
    CandidatePR,
    contest_base,
    contest_pulls,
    list_candidates,
    pr_for_workflow_run,
)
from testing.fake_github import FakeGitHub, validate_event


def sha(n: int) -> str:
    return f"{n:040x}"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        yield server


def contract_of(extra: str) -> Contract:
    return parse_contract(f"version: 1\nid: calc\n{extra}".encode(), Path("loopcontract.yml"))


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")


def test_list_candidates_reads_every_page_and_keeps_only_the_contest(gh: FakeGitHub) -> None:
    for n in range(1, 231):
        gh.add_pull(n, f"feature/{n}", sha(n), f"user{n}")
    gh.add_pull(300, "loop-contract/calc/alice", sha(300), "alice")
    gh.add_pull(301, "loop-contract/other/bob", sha(301), "bob")
    gh.add_pull(302, "try-it", sha(302), "carol", labels=["loop-contract:calc"], fork=True)
    gh.add_pull(303, "loop-contract/calc/dave", sha(303), "dave", state="closed")
    gh.add_pull(304, "loop-contract/calc/../x", sha(304), "mallory")
    gh.add_pull(5000, "loop-contract/calc/erin", sha(5000), "erin", fork=True)
    repo = repo_of(gh)
    start = len(gh.requests)
    found = list_candidates(repo, "calc")
    here, main = "octo/demo", "main"
    base = gh.branch_sha("main") or ""  # the API's base commit: main's head
    assert found == [
        CandidatePR(
            300, sha(300), "loop-contract/calc/alice", "alice", "alice", False, "open", here, main,
            base,
        ),
        CandidatePR(
            302, sha(302), "try-it", "carol", "carol", True, "open", "carol/demo", main, base
        ),
        CandidatePR(
            5000, sha(5000), "loop-contract/calc/erin", "erin", "erin", True, "open", "erin/demo",
            main, base,
        ),
    ]  # fmt: skip
    pages = [p for m, p in gh.requests[start:] if p == "/repos/octo/demo/pulls"]
    assert len(pages) == 3  # 235 open pulls, 100 a page


def test_only_pull_requests_against_the_contest_base_are_candidates(
    gh: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    """One base: the default branch unless the contract's ``github.base`` says otherwise; a
    pull request against another branch is left out with a note, at no extra request (the
    default branch is read from the listed pull requests). The gate's net takes every base."""
    gh.add_pull(1, "loop-contract/calc/alice", sha(1), "alice")
    gh.add_pull(2, "loop-contract/calc/bob", sha(2), "bob", base_ref="release", fork=True)
    gh.add_pull(3, "try", sha(3), "carol", base_ref="release", labels=["loop-contract:calc"])
    repo = repo_of(gh)
    start = len(gh.requests)
    with caplog.at_level(logging.INFO, logger="loopcontract.github"):
        assert [c.number for c in list_candidates(repo, "calc")] == [1]
    assert len(gh.requests) - start == 1  # the pull list, one page
    assert "#2 targets 'release', not the contest's base 'main'" in caplog.text
    assert [c.number for c in list_candidates(repo, "calc", base="release")] == [2, 3]
    assert [c.base_ref for c in contest_pulls(repo, "calc")] == ["main", "release", "release"]
    assert contest_base(contract_of("github: {base: release}\n")) == "release"
    assert contest_base(contract_of("")) is None
    assert [row["pr"] for row in plan(repo, "calc", base="release")] == [2, 3]
    assert plan(repo, "calc", only_pr=2) == []  # not against the default branch


def test_list_candidates_rejects_a_bad_contract_id(gh: FakeGitHub) -> None:
    with pytest.raises(ValueError):
        list_candidates(repo_of(gh), "../calc")


def test_workflow_run_with_pull_requests(gh: FakeGitHub) -> None:
    gh.add_pull(7, "loop-contract/calc/alice", sha(7), "alice")
    gh.add_workflow_run(41, head_sha=sha(7), head_branch="loop-contract/calc/alice")
    event = gh.workflow_run_event(41, pull_requests=[7])
    found = pr_for_workflow_run(repo_of(gh), event)
    assert [(c.number, c.seat, c.fork) for c in found] == [(7, "alice", False)]
    assert gh.count("GET", r"/commits/") == 0  # the event named it: no lookup by SHA


def test_fork_pull_found_by_head_sha_when_the_event_lists_none(gh: FakeGitHub) -> None:
    for n in range(1, 120):
        gh.add_pull(n, f"feature/{n}", sha(n), f"user{n}")
    gh.add_pull(150, "loop-contract/calc/eve", sha(150), "eve", fork=True)
    gh.add_pull(151, "loop-contract/calc/eve", sha(151), "mallory", fork=True)  # same branch
    gh.add_workflow_run(
        42, head_sha=sha(150), head_branch="loop-contract/calc/eve", head_owner="eve"
    )
    event = gh.workflow_run_event(42)
    validate_event("workflow_run/completed", event)
    assert event["workflow_run"]["pull_requests"] == []
    found = pr_for_workflow_run(repo_of(gh), event)
    assert found == [
        CandidatePR(
            150,
            sha(150),
            "loop-contract/calc/eve",
            "eve",
            "eve",
            True,
            "open",
            "eve/demo",
            "main",
            gh.branch_sha("main") or "",
        ),
    ]


def test_stale_runs_and_foreign_pulls_are_not_matched(gh: FakeGitHub) -> None:
    gh.add_pull(7, "loop-contract/calc/alice", sha(7), "alice")
    gh.add_workflow_run(43, head_sha=sha(7), head_branch="loop-contract/calc/alice")
    event = gh.workflow_run_event(43, pull_requests=[7])
    gh.set_pull_head(7, sha(8))  # pushed again after the run started
    assert pr_for_workflow_run(repo_of(gh), event) == []


def test_event_entry_with_another_sha_is_ignored(gh: FakeGitHub) -> None:
    gh.add_pull(7, "loop-contract/calc/alice", sha(7), "alice")
    gh.add_pull(9, "loop-contract/calc/bob", sha(9), "bob")
    gh.add_workflow_run(44, head_sha=sha(9), head_branch="loop-contract/calc/bob")
    event = gh.workflow_run_event(44, pull_requests=[7])  # names a PR at another SHA
    found = pr_for_workflow_run(repo_of(gh), event)
    assert [c.number for c in found] == [9]


def test_contract_filter_and_non_candidates(gh: FakeGitHub) -> None:
    gh.add_pull(7, "loop-contract/calc/alice", sha(7), "alice")
    gh.add_pull(8, "feature/x", sha(7), "bob")
    gh.add_workflow_run(45, head_sha=sha(7), head_branch="loop-contract/calc/alice")
    event = gh.workflow_run_event(45)
    assert [c.number for c in pr_for_workflow_run(repo_of(gh), event)] == [7]
    assert pr_for_workflow_run(repo_of(gh), event, contract_id="other") == []


@pytest.mark.parametrize("head_sha", ["main", "A" * 40, "a" * 39, None])
def test_bad_event_sha_is_refused(gh: FakeGitHub, head_sha: object) -> None:
    gh.add_pull(7, "loop-contract/calc/alice", sha(7), "alice")
    gh.add_workflow_run(46, head_sha=sha(7), head_branch="loop-contract/calc/alice")
    event = gh.workflow_run_event(46)
    event["workflow_run"]["head_sha"] = head_sha
    with pytest.raises(ValueError):
        pr_for_workflow_run(repo_of(gh), event)
    with pytest.raises(ValueError):
        pr_for_workflow_run(repo_of(gh), {"action": "completed"})
