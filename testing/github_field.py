"""The GitHub contest scene shared by the publish and trust tests: three real seat branches of
the tiny ``calc`` contest, each verified the way the verify job does, and a fake GitHub that
knows what the real one would: the pull requests, their file lists (from ``git diff``), the
verify workflow on the default branch and at every head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contract.model import DEFAULT_VERIFY_WORKFLOW, load_contract
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import DATA_BRANCH
from pytest_loopcontract.github.publish import publish
from pytest_loopcontract.github.trust import VerifyRun
from pytest_loopcontract.github.verify_pr import verify_pull_request
from testing.contest_project import make_project
from testing.fake_github import FakeGitHub
from testing.repos import GIT_ENV, git

GOOD = "CALLS = 0\n\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
SLOW = GOOD.replace("CALLS += 1", "for _ in range(9):\n        CALLS += 1")
WORKFLOW = b"name: loop-contract verify\non: pull_request\n"
NUMBERS = {"good": 11, "slow": 12, "cheat": 13}
#: The scene's contract accepts process isolation, so the scene also works where bubblewrap
#: cannot start; tests/test_github_trust.py checks the default (the sandbox required) on the
#: same verdicts rewritten to say ``isolation: process``.
CONTRACT_EXTRA = {"github": {"require_sandbox": False}}


def seat_branch(root: Path, seat: str, files: dict[str, str]) -> str:
    git(root, "checkout", "-q", "-b", f"loop-contract/calc/{seat}", "main")
    for name, text in files.items():
        (root / name).write_text(text, "utf-8")
    git(root, "commit", "-qam", f"{seat}'s candidate")
    sha = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "main")
    return sha


def patches(root: Path, base: str, head: str) -> dict[str, str | None]:
    """What GitHub's pull-request file list would say: path -> the diff's hunks."""
    out: dict[str, str | None] = {}
    for path in git(root, "diff", "--name-only", base, head).split():
        text = git(root, "diff", "--no-color", base, head, "--", path)
        out[path] = text[text.index("@@") :] if "@@" in text else None
    return out


def make_field(tmp: Path) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    for key, value in GIT_ENV.items():
        mp.setenv(key, value)
    root = make_project(tmp, [], measured=True, extra=CONTRACT_EXTRA)
    base = git(root, "rev-parse", "HEAD").strip()
    heads = {
        "good": seat_branch(root, "good", {"calc.py": GOOD}),
        "slow": seat_branch(root, "slow", {"calc.py": SLOW}),
        "cheat": seat_branch(
            root,
            "cheat",
            {"calc.py": SLOW, "tests/test_calc.py": "def test_add():\n    assert True\n"},
        ),
    }
    artifacts = tmp / "artifacts"
    for seat, sha in heads.items():
        verify_pull_request(
            root,
            contract_path="loopcontract.yml",
            pr=NUMBERS[seat],
            base_sha=base,
            head_sha=sha,
            out=artifacts,
            scratch=tmp,
        )
    mp.undo()
    files = {seat: patches(root, base, sha) for seat, sha in heads.items()}
    return {
        "root": root,
        "heads": heads,
        "numbers": dict(NUMBERS),
        "artifacts": artifacts,
        "files": files,
    }


def server(field: dict[str, Any]) -> FakeGitHub:
    gh = FakeGitHub().start()
    gh.add_repo("octo", "calc")
    gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: WORKFLOW})
    for seat, number in field["numbers"].items():
        gh.add_user(f"{seat}-bot")
        gh.add_pull(number, f"loop-contract/calc/{seat}", field["heads"][seat], f"{seat}-bot")
        gh.set_pull_files(number, field["files"][seat])
        gh.add_commit_at(field["heads"][seat], {})  # the verify workflow as on main
    gh.add_pull(40, "feature/unrelated", "f" * 40, "someone")
    # the data branch exists after the first publish ever (creating it costs 4 requests once)
    gh.commit_files(DATA_BRANCH, {"README.md": b"loop-contract state\n"})
    return gh


def verify_run(sha: str, number: int | None = None, **kw: Any) -> VerifyRun:
    """The ``workflow_run`` of a verify run at ``sha`` (GitHub's event, as publish reads it)."""
    return VerifyRun(
        id="77",
        head_sha=sha,
        path=kw.get("path", DEFAULT_VERIFY_WORKFLOW),
        event=kw.get("event", "pull_request"),
        pull_numbers=(number,) if number is not None else (),
    )


def repo_of(gh: FakeGitHub) -> Any:
    return make_github("t", base_url=gh.base_url, lazy=True).get_repo("octo/calc")


def run_publish(gh: FakeGitHub, field: dict[str, Any], tmp_path: Path, **kw: Any) -> Any:
    """Publish; ``run_head_sha`` (or ``run``) makes it the publish of one verify run."""
    run = kw.get("run")
    if run is None and kw.get("run_head_sha"):
        run = verify_run(kw["run_head_sha"])
    contract = kw.get("contract") or load_contract(field["root"] / "loopcontract.yml")
    return publish(
        repo_of(gh),
        contract=contract,
        artifacts=kw.get("artifacts", field["artifacts"]),
        workdir=tmp_path,
        bot_login="github-actions[bot]",
        run_id="77",
        run=run,
    )
