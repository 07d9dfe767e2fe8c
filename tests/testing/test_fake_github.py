"""The fake GitHub server itself: auth, JSON shapes from the recordings, pagination, faults.

Other GitHub tests trust this server to behave like the real API in the ways they rely on,
so those ways are pinned here with raw HTTP (``requests``) and with PyGithub.
"""

from __future__ import annotations

import io
import json
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import requests
from github import Auth, Github, GithubException, InputGitTreeElement

from testing import github_data
from testing.fake_github import (
    GITHUB_DATA,
    SECONDARY_RATE_LIMIT,
    FakeGitHub,
    load_webhook,
    validate_event,
)
from testing.repos import ROOT

SHA_A = "a" * 40
AUTH = {"Authorization": "token t"}


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        server.add_pull(7, "loop-contract/c1/alice", SHA_A, "alice", labels=["x"])
        yield server


def client(gh: FakeGitHub) -> Github:
    return Github(
        auth=Auth.Token("t"),
        base_url=gh.base_url,
        retry=None,
        per_page=100,
        seconds_between_writes=0,
        seconds_between_requests=0,
    )


def test_requires_authorization(gh: FakeGitHub) -> None:
    answer = requests.get(f"{gh.base_url}/repos/octo/demo", timeout=10)
    assert answer.status_code == 401
    assert answer.json()["message"] == "Requires authentication"
    assert requests.get(f"{gh.base_url}/repos/octo/demo", headers=AUTH, timeout=10).ok


def test_unknown_endpoint_is_a_logged_github_404(gh: FakeGitHub) -> None:
    answer = requests.get(f"{gh.base_url}/repos/octo/demo/nonsense", headers=AUTH, timeout=10)
    assert answer.status_code == 404
    assert set(answer.json()) == {"message", "documentation_url", "status"}
    assert answer.json()["status"] == "404"  # GitHub's error bodies carry the status as a string
    assert gh.unknown == [("GET", "/repos/octo/demo/nonsense")]


def test_json_is_shaped_like_the_recordings_and_points_at_the_fake(gh: FakeGitHub) -> None:
    recorded_pull = load_webhook("pull_request/opened.payload.json")["pull_request"]
    recorded_repo = json.loads((GITHUB_DATA / "api-fixtures/get-repository.json").read_text())
    pull = requests.get(f"{gh.base_url}/repos/octo/demo/pulls/7", headers=AUTH, timeout=10)
    repo = requests.get(f"{gh.base_url}/repos/octo/demo", headers=AUTH, timeout=10)
    assert set(recorded_pull) <= set(pull.json())
    assert set(recorded_repo[0]["response"]) - {"organization"} <= set(repo.json())
    text = pull.text + repo.text
    assert "api.github.com" not in text
    assert f"{gh.base_url}/repos/octo/demo/pulls/7" in text


def test_link_header_pagination(gh: FakeGitHub) -> None:
    for i in range(7):
        gh.add_comment(7, "alice", f"c{i}")
    url = f"{gh.base_url}/repos/octo/demo/issues/7/comments?per_page=3"
    first = requests.get(url, headers=AUTH, timeout=10)
    assert [c["body"] for c in first.json()] == ["c0", "c1", "c2"]
    assert first.links["next"]["url"].endswith("per_page=3&page=2")
    assert first.links["last"]["url"].endswith("page=3")
    last = requests.get(first.links["last"]["url"], headers=AUTH, timeout=10)
    assert [c["body"] for c in last.json()] == ["c6"]
    assert "next" not in last.links
    assert [c.body for c in client(gh).get_repo("octo/demo").get_issue(7).get_comments()] == [
        f"c{i}" for i in range(7)
    ]


def test_fail_next_answers_the_fault_then_recovers(gh: FakeGitHub) -> None:
    gh.fail_next("GET", r"/pulls/7$", 502, times=2)
    url = f"{gh.base_url}/repos/octo/demo/pulls/7"
    statuses = [requests.get(url, headers=AUTH, timeout=10).status_code for _ in range(3)]
    assert statuses == [502, 502, 200]
    assert [e.status for e in gh.exchanges] == [502, 502, 200]
    assert gh.count("GET", r"/pulls/7$") == 3


def test_retry_after_fault_holds_until_the_time_passed(gh: FakeGitHub) -> None:
    gh.fail_next("GET", r"/pulls/7$", 403, headers={"Retry-After": "30"})
    url = f"{gh.base_url}/repos/octo/demo/pulls/7"
    answers = [requests.get(url, headers=AUTH, timeout=10) for _ in range(2)]
    assert [a.status_code for a in answers] == [403, 403]
    assert answers[1].headers["Retry-After"] == "30"
    assert answers[1].json()["message"] == SECONDARY_RATE_LIMIT
    # other endpoints are not held
    assert requests.get(f"{gh.base_url}/repos/octo/demo", headers=AUTH, timeout=10).ok


def test_landed_fault_applies_the_request(gh: FakeGitHub) -> None:
    gh.fail_next("POST", r"/issues/7/comments$", 502, landed=True)
    answer = requests.post(
        f"{gh.base_url}/repos/octo/demo/issues/7/comments",
        headers=AUTH,
        json={"body": "hi"},
        timeout=10,
    )
    assert answer.status_code == 502
    assert [(c.user, c.body) for c in gh.comments(7)] == [("github-actions[bot]", "hi")]


def test_before_next_runs_the_callback_first(gh: FakeGitHub) -> None:
    seen: list[int] = []

    def other_writer() -> None:
        seen.append(len(gh.comments(7)))
        client(gh).get_repo("octo/demo").get_issue(7).create_comment("first")

    gh.before_next("POST", r"/issues/7/comments$", other_writer)
    client(gh).get_repo("octo/demo").get_issue(7).create_comment("second")
    assert seen == [0]
    assert [c.body for c in gh.comments(7)] == ["first", "second"]


def test_tokens_map_to_users_and_edits_are_author_only(gh: FakeGitHub) -> None:
    gh.add_token("alice-token", "alice")
    issue = Github(
        auth=Auth.Token("alice-token"),
        base_url=gh.base_url,
        retry=None,
        seconds_between_writes=0,
        seconds_between_requests=0,
    )
    comment = issue.get_repo("octo/demo").get_issue(7).create_comment("mine")
    assert comment.user.login == "alice"
    bot_view = client(gh).get_repo("octo/demo").get_issue(7).get_comments()[0]
    with pytest.raises(GithubException) as info:
        bot_view.edit("taken over")
    assert info.value.status == 403


def test_reviews_permissions_and_users(gh: FakeGitHub) -> None:
    gh.add_review(7, "carol", "approved", SHA_A, "2026-02-01T00:00:00Z")
    gh.set_permission("carol", "maintain")
    gh.add_user("renovate[bot]", type="Bot")
    g = client(gh)
    repo = g.get_repo("octo/demo")
    (review,) = repo.get_pull(7).get_reviews()
    assert (review.user.login, review.state, review.commit_id) == ("carol", "APPROVED", SHA_A)
    assert repo.get_collaborator_permission("carol") == "write"
    assert repo.get_collaborator_role_name("carol") == "maintain"
    assert repo.get_collaborator_permission("alice") == "none"
    assert g.get_user("renovate[bot]").type == "Bot"


def test_git_data_fast_forward_rules(gh: FakeGitHub) -> None:
    repo = client(gh).get_repo("octo/demo")
    blob = repo.create_git_blob("hello", "utf-8")
    tree = repo.create_git_tree([InputGitTreeElement("d/a.txt", "100644", "blob", sha=blob.sha)])
    first = repo.create_git_commit("one", tree, [])
    repo.create_git_ref("refs/heads/data", first.sha)
    with pytest.raises(GithubException) as exists:
        repo.create_git_ref("refs/heads/data", first.sha)
    assert exists.value.status == 422
    tree2 = repo.create_git_tree(
        [InputGitTreeElement("b.txt", "100644", "blob", content="B")], base_tree=tree
    )
    second = repo.create_git_commit("two", tree2, [first])
    ref = repo.get_git_ref("heads/data")
    ref.edit(second.sha)
    assert gh.branch_files("data") == {"b.txt": b"B", "d/a.txt": b"hello"}
    with pytest.raises(GithubException) as rewind:
        ref.edit(first.sha)
    assert rewind.value.status == 422
    assert "fast forward" in str(rewind.value.data)
    ref.edit(first.sha, force=True)
    assert gh.branch_sha("data") == first.sha
    with pytest.raises(GithubException) as missing:
        repo.get_git_ref("heads/nope")
    assert missing.value.status == 404


def test_contents_read_and_write(gh: FakeGitHub) -> None:
    gh.commit_files("main", {"loopcontract.yml": b"id: c1\n", "docs/x.md": b"x"})
    repo = client(gh).get_repo("octo/demo")
    content = repo.get_contents("loopcontract.yml", ref="main")
    assert not isinstance(content, list)
    assert content.decoded_content == b"id: c1\n"
    listing = repo.get_contents("", ref="main")
    assert isinstance(listing, list)
    assert sorted((c.path, c.type) for c in listing) == [
        ("docs", "dir"),
        ("loopcontract.yml", "file"),
    ]
    repo.update_file("loopcontract.yml", "bump", "id: c2\n", content.sha, branch="main")
    with pytest.raises(GithubException) as stale:
        repo.update_file("loopcontract.yml", "again", "id: c3\n", content.sha, branch="main")
    assert stale.value.status == 409
    assert gh.branch_files("main")["loopcontract.yml"] == b"id: c2\n"


@pytest.mark.parametrize("redirect", [True, False])
def test_artifact_zip_download(gh: FakeGitHub, redirect: bool) -> None:
    gh.artifact_redirect = redirect
    gh.add_workflow_run(55, head_sha=SHA_A, head_branch="loop-contract/c1/alice")
    gh.add_artifact(55, "verdict-7", {"candidate-7/verdict.json": b"{}"})
    run = client(gh).get_repo("octo/demo").get_workflow_run(55)
    (artifact,) = run.get_artifacts()
    assert artifact.workflow_run.head_sha == SHA_A
    answer = requests.get(artifact.archive_download_url, headers=AUTH, timeout=10)
    assert answer.status_code == 200
    assert bool(answer.history) is redirect
    assert zipfile.ZipFile(io.BytesIO(answer.content)).namelist() == ["candidate-7/verdict.json"]


def test_concurrent_requests_are_served(gh: FakeGitHub) -> None:
    errors: list[BaseException] = []

    def post(i: int) -> None:
        try:
            client(gh).get_repo("octo/demo").get_issue(7).create_comment(f"c{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(c.body for c in gh.comments(7)) == [f"c{i}" for i in range(8)]


RECORDED = sorted(
    p
    for p in (GITHUB_DATA / "webhooks").rglob("*.json")
    if (GITHUB_DATA / "webhook-schemas" / p.parent.name / f"{p.name.split('.')[0]}.schema.json")
    .resolve()
    .exists()
)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_webhooks_validate(path: Path) -> None:
    validate_event(path.parent.name, json.loads(path.read_text("utf-8")))


def test_validate_event_rejects_a_broken_variant() -> None:
    payload = load_webhook("workflow_run/completed.payload.json")
    payload["workflow_run"]["head_sha"] = 42
    with pytest.raises(jsonschema.ValidationError):
        validate_event("workflow_run/completed", payload)


def test_workflow_run_event_of_a_fork_validates(gh: FakeGitHub) -> None:
    gh.add_workflow_run(9, head_sha=SHA_A, head_branch="loop-contract/c1/eve", head_owner="eve")
    event = gh.workflow_run_event(9)
    run = event["workflow_run"]
    assert run["pull_requests"] == []
    assert run["head_repository"]["full_name"] == "eve/demo"
    assert run["repository"]["full_name"] == "octo/demo"
    assert run["head_sha"] == SHA_A
    validate_event("workflow_run", event)


# --------------------------------------------------------------------------- the data's home


def test_the_recorded_data_lives_in_the_repository() -> None:
    """A clone from GitHub has everything: the folder is under tests/, and complete."""
    assert ROOT / "tests" / "data" / "github" == GITHUB_DATA
    assert github_data.missing() == []
    assert RECORDED, "no recorded webhook was found to check against its schema"


def test_missing_data_skips_locally_and_fails_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOP_CONTRACT_REQUIRE_TOOLS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="recorded GitHub data missing"):
        github_data.require(tmp_path)
    monkeypatch.setenv("LOOP_CONTRACT_REQUIRE_TOOLS", "1")
    with pytest.raises(pytest.fail.Exception, match="LOOP_CONTRACT_REQUIRE_TOOLS=1"):
        github_data.require(tmp_path)
    with pytest.raises(pytest.fail.Exception):
        FakeGitHub(data_dir=tmp_path)
    # the complete folder passes, under CI too
    assert github_data.require() == GITHUB_DATA


def test_ci_stops_at_once_without_the_data(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.ci/run`` sets LOOP_CONTRACT_REQUIRE_TOOLS=1: a run without the data is a usage error,
    never a green run of skips. (The real conftest, with the data folder pointed elsewhere.)"""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text("utf-8"))
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    shutil.copytree(ROOT / "testing", pytester.path / "testing")
    pytester.syspathinsert()
    monkeypatch.setenv("LOOP_CONTRACT_REQUIRE_TOOLS", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*recorded GitHub data missing*"])
    monkeypatch.delenv("LOOP_CONTRACT_REQUIRE_TOOLS")
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0
