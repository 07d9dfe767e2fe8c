"""State files on the data branch: atomic commits, fast-forward only, racing writers both land."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pytest
from github.Repository import Repository

from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.state_branch import (
    DATA_BRANCH,
    FileReader,
    StateConflictError,
    read_file,
    update_files,
    validate_path,
    write_files,
)
from testing.fake_github import FakeGitHub

REF = rf"^/repos/octo/demo/git/refs/heads/{DATA_BRANCH}$"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "demo")
        yield server


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo("octo/demo")


def test_read_missing_branch_and_file(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    assert read_file(repo, "ledger.jsonl") is None
    gh.commit_files(DATA_BRANCH, {"a.txt": b"a"})
    assert read_file(repo, "ledger.jsonl") is None
    assert read_file(repo, "a.txt") == b"a"


def test_first_write_creates_an_orphan_branch(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    head = write_files(
        repo, {"contests/calc/state.json": b"{}\n", "bin.dat": bytes(range(256))}, "m"
    )
    assert head == gh.branch_sha(DATA_BRANCH)
    assert gh.branch_files(DATA_BRANCH) == {
        "bin.dat": bytes(range(256)),
        "contests/calc/state.json": b"{}\n",
    }
    assert read_file(repo, "bin.dat") == bytes(range(256))
    assert gh.branch_files("main") == {}  # the default branch is untouched


def test_writes_keep_other_files_and_skip_empty_commits(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    write_files(repo, {"a.txt": b"1"}, "one")
    second = write_files(repo, {"b.txt": b"2"}, "two")
    assert gh.branch_files(DATA_BRANCH) == {"a.txt": b"1", "b.txt": b"2"}
    mark = len(gh.requests)
    assert write_files(repo, {"b.txt": b"2"}, "same again") == second
    assert [m for m, p in gh.requests[mark:] if m != "GET" and "/git/commits" in p] == []
    assert gh.count("PATCH", REF) == 1  # only the second write moved the branch


def test_delete_with_update_files(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    write_files(repo, {"a.txt": b"1", "b.txt": b"2"}, "one")
    update_files(repo, lambda read: {"a.txt": None, "missing.txt": None}, "drop a")
    assert gh.branch_files(DATA_BRANCH) == {"b.txt": b"2"}


def test_two_racing_writers_both_land(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    write_files(repo, {"seed.txt": b"seed"}, "seed")

    def other_writer() -> None:
        # runs when the first writer's ref update arrives, before the server handles it
        write_files(repo_of(gh), {"second.txt": b"2"}, "second", backoff=0)

    gh.before_next("PATCH", REF, other_writer)
    write_files(repo, {"first.txt": b"1"}, "first", backoff=0)
    assert gh.branch_files(DATA_BRANCH) == {
        "first.txt": b"1",
        "second.txt": b"2",
        "seed.txt": b"seed",
    }
    statuses = [e.status for e in gh.exchanges if e.method == "PATCH"]
    assert statuses == [200, 422, 200]  # other writer, refused first writer, its retry


def test_racing_appends_are_recomputed_on_the_new_head(gh: FakeGitHub) -> None:
    repo = repo_of(gh)

    def append(line: bytes) -> Callable[[FileReader], Mapping[str, bytes | None]]:
        def change(read: FileReader) -> Mapping[str, bytes | None]:
            return {"ledger.jsonl": (read("ledger.jsonl") or b"") + line}

        return change

    write_files(repo, {"ledger.jsonl": b"0\n"}, "seed")
    gh.before_next("PATCH", REF, lambda: update_files(repo_of(gh), append(b"B\n"), "B", backoff=0))
    update_files(repo, append(b"A\n"), "A", backoff=0)
    assert read_file(repo, "ledger.jsonl") == b"0\nB\nA\n"


def test_racing_branch_creation(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    create = r"^/repos/octo/demo/git/refs$"
    gh.before_next(
        "POST", create, lambda: write_files(repo_of(gh), {"b.txt": b"b"}, "b", backoff=0)
    )
    write_files(repo, {"a.txt": b"a"}, "a", backoff=0)
    assert gh.branch_files(DATA_BRANCH) == {"a.txt": b"a", "b.txt": b"b"}


def test_gives_up_after_the_attempts(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    write_files(repo, {"a.txt": b"a"}, "a")
    gh.fail_next("PATCH", REF, 422, body={"message": "Update is not a fast forward"}, times=3)
    with pytest.raises(StateConflictError):
        write_files(repo, {"b.txt": b"b"}, "b", attempts=3, backoff=0)
    assert gh.branch_files(DATA_BRANCH) == {"a.txt": b"a"}


def test_a_failed_blob_post_is_posted_again(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    gh.fail_next("POST", r"/git/blobs$", 502)
    write_files(repo, {"a.txt": b"a"}, "a")
    assert gh.branch_files(DATA_BRANCH) == {"a.txt": b"a"}
    assert gh.count("POST", r"/git/blobs$") == 2


@pytest.mark.parametrize(
    "path",
    ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", ".git/config", "a/.GIT/x", "a\\b",
     "a\nb", "x" * 300],
)  # fmt: skip
def test_hostile_paths_are_refused(gh: FakeGitHub, path: str) -> None:
    with pytest.raises(ValueError):
        validate_path(path)
    with pytest.raises(ValueError):
        write_files(repo_of(gh), {path: b"x"}, "m")
    assert gh.branch_sha(DATA_BRANCH) is None
