"""Git's evidence of an in-process run: with the environment kept before the first test, and
what the starting point's thread raises raised where it is asked for."""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

import pytest

from pytest_loopcontract.verifier import repo_evidence

_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def _committed_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "first"],
        check=True,
        env={**os.environ, **_IDENTITY},
    )


def _evidence(root: Path, environ: dict[str, str]) -> repo_evidence.RepoEvidence:
    start = repo_evidence.Pending(partial(repo_evidence.starting_point, root), environ, "start")
    # No baseline: the contract is never read, so any object stands in for it.
    return repo_evidence.PendingEvidence(start, object(), None, environ).result()  # type: ignore[arg-type]


def test_pending_evidence_reads_git_with_the_environment_before_the_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git runs on threads: with the environment kept before the first test, not the one a
    test left behind (here without PATH, so no git at all)."""
    _committed_repo(tmp_path)
    before = dict(os.environ)
    monkeypatch.setenv("PATH", "")
    evidence = _evidence(tmp_path, before)
    assert evidence.commit is not None and evidence.dirty is False
    live = _evidence(tmp_path, dict(os.environ))
    assert (live.commit, live.dirty) == (None, None)


def test_what_a_git_thread_raises_is_raised_where_the_evidence_is_asked_for(
    tmp_path: Path,
) -> None:
    def broken() -> None:
        raise OSError("the disk went away")

    pending = repo_evidence.Pending(broken, dict(os.environ), "broken")
    with pytest.raises(OSError, match="the disk went away"):
        pending.result()
