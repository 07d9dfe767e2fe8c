"""GitHub's 404s as GitHub words them, and the code that must read each one as "absent".

The data branch does not exist before the first publish. GitHub answers a contents read at that
ref with 404 "No commit found for the ref loop-contract-data", which PyGithub 2.x raises as a
plain ``GithubException``; code that caught only ``UnknownObjectException`` crashed on the first
publish of a real repository, hidden by a fake that answered "Not Found" everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from github.GithubException import GithubException, UnknownObjectException
from github.Repository import Repository

from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import (
    DATA_BRANCH,
    read_state,
    state_path,
    write_state,
)
from pytest_loopcontract.github.not_found import is_missing
from pytest_loopcontract.github.state_branch import read_file
from testing.fake_github import FakeGitHub

AUTH = {"Authorization": "token t"}
#: 404 messages GitHub uses for "no such ref / file / branch"; none may be relied upon.
WORDINGS = (
    f"No commit found for the ref {DATA_BRANCH}",
    "Not Found",
    "Branch not found",
    "Ref not found",
)


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        yield server


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0, retries=0).get_repo("octo/demo")


def message(gh: FakeGitHub, path: str) -> tuple[int, str]:
    answer = requests.get(f"{gh.base_url}/repos/octo/demo/{path}", headers=AUTH, timeout=10)
    return answer.status_code, answer.json()["message"]


def test_the_fake_answers_in_githubs_words(gh: FakeGitHub) -> None:
    assert message(gh, f"contents/x.json?ref={DATA_BRANCH}") == (
        404,
        f"No commit found for the ref {DATA_BRANCH}",
    )
    assert message(gh, "contents/x.json?ref=main") == (404, "Not Found")
    assert message(gh, f"git/ref/heads/{DATA_BRANCH}") == (404, "Not Found")
    assert message(gh, f"branches/{DATA_BRANCH}") == (404, "Branch not found")
    assert message(gh, f"commits/{'e' * 40}") == (422, f"No commit found for SHA: {'e' * 40}")


def test_pygithub_does_not_call_the_missing_ref_unknown(gh: FakeGitHub) -> None:
    """The premise of the fix: the real message escapes ``except UnknownObjectException``."""
    with pytest.raises(GithubException) as raised:
        repo_of(gh).get_contents("x.json", ref=DATA_BRANCH)
    assert raised.value.status == 404
    assert not isinstance(raised.value, UnknownObjectException)
    assert is_missing(raised.value)


def test_the_first_publish_reads_no_state_and_creates_the_data_branch(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    assert gh.branch_sha(DATA_BRANCH) is None
    assert read_state(repo, "calc") is None
    assert read_file(repo, "lessons.jsonl") is None
    write_state(repo, "calc", {"result": {"winner": None}}, known_sha=None)
    assert gh.branch_sha(DATA_BRANCH) is not None
    assert state_path("calc") in gh.branch_files(DATA_BRANCH)
    assert read_state(repo, "calc") == {"result": {"winner": None}}


@pytest.mark.parametrize("wording", WORDINGS)
def test_every_404_wording_reads_as_absent(gh: FakeGitHub, wording: str) -> None:
    repo = repo_of(gh)
    body = {"message": wording, "documentation_url": "https://docs.github.com/rest"}
    gh.fail_next("GET", r"/contents/", 404, body=body, times=2)
    assert read_state(repo, "calc") is None
    assert read_file(repo, "lessons.jsonl") is None


@pytest.mark.parametrize(
    ("status", "text"),
    [(403, "Resource not accessible by integration"), (401, "Bad credentials")],
)
def test_a_refusal_is_not_an_absence(gh: FakeGitHub, status: int, text: str) -> None:
    """A token that may not read is an error to report, never "no state yet" (which would make
    the next write start the contest's memory from nothing)."""
    gh.fail_next("GET", r"/contents/", status, body={"message": text}, times=5)
    with pytest.raises(GithubException) as raised:
        read_state(repo_of(gh), "calc")
    assert raised.value.status == status
