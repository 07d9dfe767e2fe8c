"""The sticky comment: found by marker *and* author, written only when it changed, never twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from github.PullRequest import PullRequest

from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.comments import (
    MAX_COMMENT_CHARS,
    TRUNCATION_NOTE,
    body_digest,
    compose_body,
    find_sticky_comment,
    marker_line,
    read_sticky_state,
    upsert_sticky_comment,
)
from testing.contest_fixtures import hostile_result, sample_result
from testing.fake_github import FakeGitHub

BOT = "github-actions[bot]"
SHA = "a" * 40
POSTS = r"^/repos/octo/demo/issues/7/comments$"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(bot_login=BOT) as server:
        server.add_repo("octo", "demo")
        server.add_pull(7, "loop-contract/calc/alice", SHA, "alice")
        yield server


def pull(gh: FakeGitHub) -> PullRequest:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo").get_pull(7)


def upsert(target: PullRequest, body: str, contract_id: str = "calc") -> str:
    return upsert_sticky_comment(target, contract_id=contract_id, body=body, bot_login=BOT)


def test_body_layout_and_state() -> None:
    body = compose_body("calc", "# Report\n")
    first, second, rest = body.split("\n", 2)
    assert first == "<!-- loop-contract:calc -->" == marker_line("calc")
    digest = body_digest("# Report\n")
    assert second == f"<!-- loop-contract-state:{digest} -->"
    assert rest == "# Report\n"
    state = read_sticky_state(body)
    assert state is not None
    assert (state.contract_id, state.digest) == ("calc", digest)
    assert read_sticky_state("hello <!-- loop-contract:calc -->") is None
    assert read_sticky_state(None) is None
    with pytest.raises(ValueError):
        marker_line("calc -->")


def test_created_edited_unchanged_with_request_counts(gh: FakeGitHub) -> None:
    pr = pull(gh)
    mark = len(gh.requests)
    assert upsert(pr, "first") == "created"
    assert gh.requests[mark:] == [("GET", POSTS[1:-1]), ("POST", POSTS[1:-1])]
    mark = len(gh.requests)
    assert upsert(pr, "second") == "edited"
    (comment,) = gh.comments(7)
    assert [m for m, _ in gh.requests[mark:]] == ["GET", "PATCH"]
    assert gh.requests[mark + 1] == ("PATCH", f"/repos/octo/demo/issues/comments/{comment.id}")
    mark = len(gh.requests)
    assert upsert(pr, "second") == "unchanged"
    assert gh.requests[mark:] == [("GET", POSTS[1:-1])]  # only the read
    (comment,) = gh.comments(7)
    assert comment.body == compose_body("calc", "second")
    assert comment.user == BOT


def test_lookup_reads_every_page(gh: FakeGitHub) -> None:
    for i in range(230):
        gh.add_comment(7, "someone", f"chatter {i}")
    gh.add_comment(7, BOT, compose_body("calc", "old"))
    pr = pull(gh)
    mark = len(gh.requests)
    assert upsert(pr, "new") == "edited"
    assert [m for m, _ in gh.requests[mark:]] == ["GET", "GET", "GET", "PATCH"]
    assert len(gh.comments(7)) == 231
    assert gh.comments(7)[-1].body == compose_body("calc", "new")


def test_a_forged_marker_by_someone_else_is_ignored(gh: FakeGitHub) -> None:
    forged = gh.add_comment(7, "mallory", compose_body("calc", "mallory wins"))
    pr = pull(gh)
    assert find_sticky_comment(pr, contract_id="calc", bot_login=BOT) is None
    assert upsert(pr, "the real report") == "created"
    comments = gh.comments(7)
    assert (comments[0].id, comments[0].user) == (forged, "mallory")
    assert comments[0].body == compose_body("calc", "mallory wins")  # untouched
    assert comments[1].user == BOT
    assert upsert(pr, "the real report") == "unchanged"


def test_markers_of_other_contests_are_left_alone(gh: FakeGitHub) -> None:
    gh.add_comment(7, BOT, compose_body("other", "x"))
    pr = pull(gh)
    assert upsert(pr, "x") == "created"
    states = [read_sticky_state(c.body) for c in gh.comments(7)]
    assert [s.contract_id for s in states if s is not None] == ["other", "calc"]
    assert gh.comments(7)[0].body == compose_body("other", "x")


def test_a_deleted_comment_is_created_again(gh: FakeGitHub) -> None:
    pr = pull(gh)
    assert upsert(pr, "report") == "created"
    gh.delete_comment(gh.comments(7)[0].id)
    assert upsert(pr, "report") == "created"
    assert [c.body for c in gh.comments(7)] == [compose_body("calc", "report")]


def test_a_502_on_a_post_that_landed_does_not_duplicate(gh: FakeGitHub) -> None:
    pr = pull(gh)
    gh.fail_next("POST", POSTS, 502, landed=True)
    assert upsert(pr, "report") == "created"
    assert [c.body for c in gh.comments(7)] == [compose_body("calc", "report")]
    assert gh.count("POST", POSTS) == 1
    assert gh.count("GET", POSTS) == 2  # the lookup, then the check after the failure


def test_a_502_on_a_post_that_did_not_land_is_posted_again(gh: FakeGitHub) -> None:
    pr = pull(gh)
    gh.fail_next("POST", POSTS, 502)
    assert upsert(pr, "report") == "created"
    assert [c.body for c in gh.comments(7)] == [compose_body("calc", "report")]
    assert gh.count("POST", POSTS) == 2


def test_persistent_failure_is_raised(gh: FakeGitHub) -> None:
    from github import GithubException

    pr = pull(gh)
    gh.fail_next("POST", POSTS, 500, times=10)
    with pytest.raises(GithubException):
        upsert(pr, "report")
    assert gh.comments(7) == []


def test_duplicates_left_by_an_old_failure_are_removed(gh: FakeGitHub) -> None:
    first = gh.add_comment(7, BOT, compose_body("calc", "a"))
    gh.add_comment(7, BOT, compose_body("calc", "a"))
    assert upsert(pull(gh), "b") == "edited"
    assert [(c.id, c.body) for c in gh.comments(7)] == [(first, compose_body("calc", "b"))]


def test_repository_and_number_form(gh: FakeGitHub) -> None:
    repo = make_github("t", base_url=gh.base_url, write_spacing=0, lazy=True).get_repo("octo/demo")
    kw = {"contract_id": "calc", "bot_login": BOT}
    assert gh.requests == []  # lazy: nothing fetched yet
    assert upsert_sticky_comment(repo, 7, body="r", **kw) == "created"
    assert [m for m, _ in gh.requests] == ["GET", "POST"]
    assert upsert_sticky_comment(repo, 7, body="r", **kw) == "unchanged"
    with pytest.raises(TypeError):
        upsert_sticky_comment(repo, body="r", **kw)


def test_oversized_body_is_cut_to_the_limit(gh: FakeGitHub) -> None:
    markdown = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(1000))
    body = compose_body("calc", markdown)
    assert len(body) <= MAX_COMMENT_CHARS
    assert body.endswith(TRUNCATION_NOTE)
    assert "line 0 " in body
    assert upsert(pull(gh), markdown) == "created"  # the server accepts it
    assert len(gh.comments(7)[0].body) <= MAX_COMMENT_CHARS
    assert upsert(pull(gh), markdown) == "unchanged"


def test_a_rendered_report_round_trips(gh: FakeGitHub) -> None:
    pr = pull(gh)
    body = render_markdown(sample_result(), summary_pointer="Full report in the job summary.")
    assert upsert(pr, body) == "created"
    assert upsert(pr, body) == "unchanged"
    hostile = render_markdown(hostile_result(), summary_pointer="See the job summary.")
    assert upsert(pr, hostile) == "edited"
    (comment,) = gh.comments(7)
    assert comment.body.split("\n", 1)[0] == "<!-- loop-contract:calc -->"
    assert len(comment.body) <= MAX_COMMENT_CHARS
