"""Git's evidence of an in-process run, read on its own thread: with the environment kept
before the first test, and what the thread raises raised where the evidence is asked for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.verifier import repo_evidence


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
    evidence = repo_evidence.PendingEvidence(tmp_path, object(), None, before).result()  # type: ignore[arg-type]
    assert evidence.commit is not None and evidence.dirty is False
    live = repo_evidence.PendingEvidence(tmp_path, object(), None, dict(os.environ)).result()  # type: ignore[arg-type]
    assert (live.commit, live.dirty) == (None, None)


def test_what_the_git_thread_raises_is_raised_where_the_evidence_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(repo_evidence, "repo_evidence", broken)
    pending = repo_evidence.PendingEvidence(tmp_path, object(), None, dict(os.environ))  # type: ignore[arg-type]
    with pytest.raises(OSError, match="the disk went away"):
        pending.result()
