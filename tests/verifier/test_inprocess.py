"""The in-process plugin's own helpers: the kept contract document and git beside the run."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import inprocess
from pytest_loopcontract.verifier.workspace import WorkspaceError, find_repo, pinned_environment

SHA = "a" * 64


@pytest.mark.parametrize(
    "document",
    [
        {"version": 1, "when": dt.date(2026, 1, 1)},  # a YAML date: JSON would make it a string
        {"version": 1, "steps": {1: "one"}},  # an int key: JSON would make it "1"
    ],
)
def test_a_document_json_would_change_is_not_kept(tmp_path: Path, document: Any) -> None:
    state = StateDir(tmp_path)
    inprocess._keep_parsed_document(state, SHA, document)
    assert not state.parsed_contract.exists()
    assert inprocess._parsed_document(state, SHA) is None


def test_a_kept_document_is_read_back_only_under_its_digest(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    document = {"version": 1, "id": "x", "dod": [{"id": "a", "tests": ["t.py::t"]}]}
    inprocess._keep_parsed_document(state, SHA, document)
    assert json.loads(state.parsed_contract.read_text("utf-8"))["sha256"] == SHA
    assert inprocess._parsed_document(state, SHA) == document
    assert inprocess._parsed_document(state, "b" * 64) is None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"sha256": "' + SHA + '", "document": 3}'])
def test_a_broken_kept_file_is_ignored(tmp_path: Path, text: str) -> None:
    state = StateDir(tmp_path)
    state.parsed_contract.write_text(text, "utf-8")
    assert inprocess._parsed_document(state, SHA) is None


def test_git_on_a_pinned_thread_ignores_the_live_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that empties PATH while git runs on the evidence thread: the thread's git still
    uses the environment taken before the tests started; this thread's does not."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    before = dict(os.environ)
    found: list[Path] = []

    def gather() -> None:
        with pinned_environment(before):
            found.append(find_repo(tmp_path))

    monkeypatch.setenv("PATH", "")
    thread = threading.Thread(target=gather)
    thread.start()
    thread.join()
    assert found == [tmp_path.resolve()]
    with pytest.raises(WorkspaceError, match="git is not installed"):
        find_repo(tmp_path)


def test_pending_evidence_reads_git_with_the_environment_before_the_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git runs on its own thread at the session's end: with the environment kept before the
    first test, not the one a test left behind (here without PATH, so no git at all)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "first"],
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        },
    )
    before = dict(os.environ)
    monkeypatch.setenv("PATH", "")
    # No baseline: the contract is never read, so any object stands in for it.
    evidence = inprocess.PendingEvidence(tmp_path, object(), None, before).result()  # type: ignore[arg-type]
    assert evidence.commit is not None and evidence.dirty is False
    live = inprocess.PendingEvidence(tmp_path, object(), None, dict(os.environ)).result()  # type: ignore[arg-type]
    assert (live.commit, live.dirty) == (None, None)


def test_what_the_git_thread_raises_is_raised_where_the_evidence_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(inprocess, "repo_evidence", broken)
    pending = inprocess.PendingEvidence(tmp_path, object(), None, dict(os.environ))  # type: ignore[arg-type]
    with pytest.raises(OSError, match="the disk went away"):
        pending.result()
