"""make_github: the retry policy against a real (fake) server.

Retries are observed through the server's request log, never through timing: a client that
did not wait out ``Retry-After`` is seen asking again while the server still refuses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from github import GithubException

from pytest_loopcontract.github.client import (
    API_URL_ENV,
    WRITE_SPACING_ENV,
    ContestRetry,
    make_github,
    make_retry,
    resolve_write_spacing,
)
from testing.fake_github import FakeGitHub

SHA = "a" * 40
PULL = r"^/repos/octo/demo/pulls/7$"
POST_COMMENT = r"^/repos/octo/demo/issues/7/comments$"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        server.add_pull(7, "loop-contract/c1/alice", SHA, "alice")
        yield server


def test_base_url_argument_env_and_default(gh: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_URL_ENV, gh.base_url + "/")
    assert make_github("t", write_spacing=0).get_repo("octo/demo").full_name == "octo/demo"
    monkeypatch.setenv(API_URL_ENV, "http://127.0.0.1:9")  # argument wins over the env
    assert make_github("t", base_url=gh.base_url).get_repo("octo/demo").name == "demo"
    assert gh.count("GET", r"^/repos/octo/demo$") == 2


def test_a_token_is_required() -> None:
    with pytest.raises(ValueError):
        make_github("")


def test_write_spacing_comes_from_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WRITE_SPACING_ENV, raising=False)
    assert resolve_write_spacing() == 1.0
    monkeypatch.setenv(WRITE_SPACING_ENV, "0")
    assert resolve_write_spacing() == 0.0
    assert resolve_write_spacing(2.5) == 2.5
    monkeypatch.setenv(WRITE_SPACING_ENV, "-3")
    assert resolve_write_spacing() == 0.0
    monkeypatch.setenv(WRITE_SPACING_ENV, "soon")
    assert resolve_write_spacing() == 1.0


def test_retry_policy_shape() -> None:
    retry = make_retry(2)
    assert isinstance(retry, ContestRetry)
    assert retry.total == 2
    assert retry.is_retry("GET", 502)
    assert retry.is_retry("PATCH", 503)
    assert not retry.is_retry("POST", 502)  # may have landed: the caller decides
    assert retry.is_retry("POST", 403)  # rate limited: not processed
    assert retry.is_retry("POST", 429)
    assert not retry.is_retry("GET", 404)


def test_502_on_a_get_is_retried(gh: FakeGitHub) -> None:
    repo = make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")
    gh.fail_next("GET", PULL, 502)
    assert repo.get_pull(7).head.sha == SHA
    assert [e.status for e in gh.exchanges if e.path.endswith("/pulls/7")] == [502, 200]


def test_retries_run_out_as_a_github_error(gh: FakeGitHub) -> None:
    repo = make_github("t", base_url=gh.base_url, retries=1, write_spacing=0).get_repo("octo/demo")
    gh.fail_next("GET", PULL, 503, times=5)
    with pytest.raises(GithubException) as info:
        repo.get_pull(7)
    assert info.value.status == 503
    assert gh.count("GET", PULL) == 2


def test_secondary_rate_limit_waits_for_retry_after(gh: FakeGitHub) -> None:
    repo = make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")
    # The fake keeps refusing until Retry-After has passed: a client that retried early
    # would show more than one refused request.
    gh.fail_next("GET", PULL, 403, headers={"Retry-After": "1"})
    assert repo.get_pull(7).number == 7
    assert [e.status for e in gh.exchanges if e.path.endswith("/pulls/7")] == [403, 200]


def test_secondary_rate_limit_on_a_post_is_retried(gh: FakeGitHub) -> None:
    issue = make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")
    issue_7 = issue.get_issue(7)
    gh.fail_next("POST", POST_COMMENT, 403, headers={"Retry-After": "1"})
    issue_7.create_comment("hello")
    assert [e.status for e in gh.exchanges if e.method == "POST"] == [403, 201]
    assert [c.body for c in gh.comments(7)] == ["hello"]


def test_a_plain_403_is_not_retried(gh: FakeGitHub) -> None:
    repo = make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")
    refusal = {"message": "Resource not accessible by integration", "documentation_url": "x"}
    gh.fail_next("GET", PULL, 403, body=refusal)
    with pytest.raises(GithubException) as info:
        repo.get_pull(7)
    assert info.value.status == 403
    assert gh.count("GET", PULL) == 1


def test_a_502_on_a_post_is_not_repeated_by_the_transport(gh: FakeGitHub) -> None:
    issue = make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")
    issue_7 = issue.get_issue(7)
    gh.fail_next("POST", POST_COMMENT, 502, landed=True)
    with pytest.raises(GithubException) as info:
        issue_7.create_comment("hello")
    assert info.value.status == 502
    assert gh.count("POST", POST_COMMENT) == 1
    assert len(gh.comments(7)) == 1
