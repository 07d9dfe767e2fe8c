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
from pytest_loopcontract.workspace import WorkspaceError, find_repo, pinned_environment

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
