"""Where the recorded GitHub data the tests read lives: ``tests/data/github``, in the repository.

Why a module of its own: the fake server (:mod:`fake_github`) and the event builders
(:mod:`github_events`) read the same files (octokit's webhook examples and schemas, octokit's
REST fixtures, PyGithub's replay files; sources and licences in ``tests/data/github/README.md``).
They used to look for them outside the repository, so a clone from GitHub failed, errored and
skipped its GitHub tests. The folder is found relative to this file, never by an absolute path.

:func:`require` is what a test calls before it reads the data: a folder that is incomplete makes
the test skip, or fail when ``LOOP_CONTRACT_REQUIRE_TOOLS=1`` (set by ``.ci/run``), so CI can
never pass by skipping the GitHub tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["DATA", "REQUIRED", "missing", "require"]

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "github"
#: What the tests read; a folder without any of these is not the recorded data.
REQUIRED = (
    "webhooks",
    "webhook-schemas/common",
    "api-fixtures/create-status.json",
    "api-fixtures/get-repository.json",
    "pygithub-replay/PullRequestReview.testAttributes.txt",
    "pygithub-replay/Repository.testCollaboratorPermission.txt",
    "pygithub-replay/CheckRun.testCreateCheckRunCompleted.txt",
    "pygithub-replay/CheckRun.testUpdateCheckRunAll.txt",
)


def missing(data: Path | None = None) -> list[str]:
    """The entries of :data:`REQUIRED` that are not in ``data`` (default :data:`DATA`)."""
    folder = DATA if data is None else data
    return [name for name in REQUIRED if not (folder / name).exists()]


def require(data: Path | None = None) -> Path:
    """The data folder; skip the calling test when it is incomplete, fail under CI."""
    folder = DATA if data is None else data
    absent = missing(folder)
    if absent:
        reason = f"recorded GitHub data missing under {folder}: {', '.join(absent)}"
        if os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{reason} and LOOP_CONTRACT_REQUIRE_TOOLS=1")
        pytest.skip(reason)
    return folder
