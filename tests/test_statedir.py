"""statedir: the state folder's file names, each path joined to its own folder, read-only."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from pytest_loopcontract.statedir import StateDir

# The names on disk: a folder written by an earlier version must still be read where it lies.
NAMES = {
    "verdict": "verdict.json",
    "pre_push_verdict": "pre-push-verdict.json",
    "baseline": "baseline.json",
    "bytecode": "bytecode",
    "parsed_contract": "contract-parsed.json",
    "harness": "harness.json",
    "history": "history.jsonl",
    "history_lock": "history.lock",
    "loop_lock": "loop.lock",
    "prompt": "prompt.md",
    "ledger": "ledger.sqlite",
    "cert_key": "cert.key",
    "lessons": "lessons.sqlite",
    "routes": "routes.json",
    "runs": "contest",
}


@pytest.mark.parametrize(("attribute", "name"), sorted(NAMES.items()))
def test_each_path_is_its_name_in_the_folder(tmp_path: Path, attribute: str, name: str) -> None:
    state = StateDir.of(tmp_path)
    assert getattr(state, attribute) == tmp_path / ".loop-contract" / name


def test_two_folders_each_get_their_own_paths(tmp_path: Path) -> None:
    first, second = StateDir(tmp_path / "a"), StateDir(tmp_path / "b")
    for attribute in NAMES:
        assert getattr(first, attribute).parent == first.folder
        assert getattr(second, attribute).parent == second.folder
    assert first.run_dir("r1") == tmp_path / "a" / "contest" / "r1"
    assert second.turn_log(3) == tmp_path / "b" / "turn-3.log"


def test_paths_are_read_only(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.verdict = tmp_path / "elsewhere.json"  # type: ignore[assignment]
    assert state.verdict == tmp_path / "verdict.json"


def test_ensure_makes_a_folder_git_ignores(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    state = StateDir.of(tmp_path)
    state.ensure()
    state.verdict.write_text("{}", "utf-8")
    ignored = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ignored.stdout == ""
