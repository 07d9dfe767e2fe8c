"""Fixtures of the publish-side GitHub tests: the verified three-seat field, and a git identity
with no write spacing (the modules that need them say ``usefixtures("github_identity")``)."""

from __future__ import annotations

from typing import Any

import pytest

from testing.github_field import make_field
from testing.repos import GIT_ENV


@pytest.fixture
def github_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LOOP_CONTRACT_WRITE_SPACING", "0")


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three seat branches, each verified the way the verify job does, once per module."""
    return make_field(tmp_path_factory.mktemp("field"))
