"""The winner status: at most one success, never on a shared head commit, descriptions clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from github.Repository import Repository

from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.statuses import (
    MAX_DESCRIPTION,
    WINNER_CONTEXT,
    PlannedStatus,
    StatusDecision,
    plan_statuses,
    sanitize_description,
    set_winner_statuses,
)
from testing.fake_github import FakeGitHub

A, B, C = "a" * 40, "b" * 40, "c" * 40
STATUSES = r"^/repos/octo/demo/statuses/"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        server.add_pull(1, "loop-contract/calc/alice", A, "alice")
        server.add_pull(2, "loop-contract/calc/bob", B, "bob")
        server.add_pull(3, "loop-contract/calc/carol", C, "carol")
        yield server


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")


def test_plan_one_winner_posted_last() -> None:
    plan = plan_statuses(
        [
            StatusDecision(1, A, "success", "proposed winner", "https://example.com/run/1"),
            StatusDecision(2, B, "failure", "not the winner: matrix"),
            StatusDecision(3, C, "pending", "waiting"),
        ]
    )
    assert [(p.prs, p.state) for p in plan] == [
        ((2,), "failure"),
        ((3,), "pending"),
        ((1,), "success"),
    ]
    assert plan[-1].target_url == "https://example.com/run/1"


def test_plan_two_winners_sets_no_success() -> None:
    plan = plan_statuses(
        [StatusDecision(1, A, "success", "w"), StatusDecision(2, B, "success", "w")]
    )
    assert {p.state for p in plan} == {"failure"}


def test_plan_shared_winner_sha_sets_no_success() -> None:
    plan = plan_statuses(
        [StatusDecision(1, A, "success", "winner"), StatusDecision(2, A, "failure", "lost")]
    )
    assert plan == [
        PlannedStatus(A, "failure", "head commit shared with #2: no winner status", None, (1, 2))
    ]


def test_plan_shared_loser_sha_posts_once() -> None:
    plan = plan_statuses(
        [StatusDecision(2, B, "failure", "lost: gates"), StatusDecision(3, B, "pending", "wait")]
    )
    assert plan == [
        PlannedStatus(B, "failure", "head commit shared by #2, #3: lost: gates", None, (2, 3))
    ]


def test_plan_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        plan_statuses([StatusDecision(1, "main", "success", "x")])
    with pytest.raises(ValueError):
        plan_statuses([StatusDecision(1, A, "error", "x")])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        plan_statuses([StatusDecision(1, A, "failure", "x"), StatusDecision(1, B, "failure", "y")])


def test_descriptions_are_one_clean_line_of_at_most_140() -> None:
    assert sanitize_description("a\nb\t\x1b[31mc\u202ed  ") == "a b [31mc d"
    long = sanitize_description("word " * 100)
    assert len(long) == MAX_DESCRIPTION
    assert long.endswith("…")
    plan = plan_statuses([StatusDecision(1, A, "failure", "x" * 500, "javascript:alert(1)")])
    assert len(plan[0].description) <= MAX_DESCRIPTION
    assert plan[0].target_url is None


def test_statuses_on_the_server(gh: FakeGitHub) -> None:
    decisions = [
        StatusDecision(1, A, "success", "proposed winner: approve it with a review"),
        StatusDecision(2, B, "failure", "not the winner: measured (coverage)"),
        StatusDecision(3, C, "failure", "not the winner: hard (tests)"),
    ]
    lines = set_winner_statuses(repo_of(gh), decisions)
    assert lines[-1].startswith(f"success {A[:12]} #1")
    latest = {sha: gh.latest_status(sha, WINNER_CONTEXT) for sha in (A, B, C)}
    assert {sha: s.state for sha, s in latest.items() if s} == {
        A: "success",
        B: "failure",
        C: "failure",
    }
    posted = [p for m, p in gh.requests if m == "POST"]
    assert posted[-1] == f"/repos/octo/demo/statuses/{A}"  # the success goes last
    # the same decisions again: nothing is posted
    mark = len(gh.requests)
    again = set_winner_statuses(repo_of(gh), decisions)
    assert all(line.startswith("unchanged") for line in again)
    assert [m for m, _ in gh.requests[mark:] if m != "GET"] == []


def test_a_shared_head_commit_never_gets_success(gh: FakeGitHub) -> None:
    gh.add_pull(4, "loop-contract/calc/dave", A, "dave")  # same head commit as #1
    set_winner_statuses(
        repo_of(gh),
        [
            StatusDecision(1, A, "success", "proposed winner"),
            StatusDecision(4, A, "failure", "not the winner"),
            StatusDecision(2, B, "failure", "not the winner"),
        ],
    )
    assert all(s.state != "success" for sha in (A, B) for s in gh.statuses(sha))
    shared = gh.latest_status(A, WINNER_CONTEXT)
    assert shared is not None
    assert shared.description == "head commit shared with #4: no winner status"
    assert len(gh.statuses(A)) == 1


def test_a_failed_status_post_is_posted_again(gh: FakeGitHub) -> None:
    gh.fail_next("POST", STATUSES, 502)
    set_winner_statuses(repo_of(gh), [StatusDecision(2, B, "failure", "not the winner")])
    assert [s.state for s in gh.statuses(B)] == ["failure"]
    assert gh.count("POST", STATUSES) == 2
