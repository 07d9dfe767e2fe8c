"""One engine, two front ends: the same field through the terminal contest and through GitHub
publish reaches the same decision, in the same document.

The field is real: a local contest's seats write their candidates in worktrees, and those very
commits then become pull requests on the fake GitHub, verified the way the verify job does and
judged by the same judge commands in publish's sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_loopcontract.contest.orchestrate import run_contest
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.github.verify_pr import verify_pull_request
from testing.contest_project import make_project
from testing.fake_github import FakeGitHub
from testing.github_field import CONTRACT_EXTRA, WORKFLOW, patches, repo_of
from testing.repos import GIT_ENV, git

SEATS = [
    ("alpha", "fa", "good", "prefers-sum"),
    ("beta", "fb", "good2", "prefers-sum"),
    ("gamma", "fc", "wrong", "prefers-sum"),
]


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LOOP_CONTRACT_WRITE_SPACING", "0")


def github_result(root: Path, local: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Publish the local contest's candidates as pull requests and return the result."""
    from pytest_loopcontract.contract.model import DEFAULT_VERIFY_WORKFLOW
    from pytest_loopcontract.github.contest_state import DATA_BRANCH
    from pytest_loopcontract.github.publish import publish

    base = git(root, "rev-parse", "main").strip()
    gh = FakeGitHub().start()
    gh.add_repo("octo", "calc")
    gh.commit_files("main", {DEFAULT_VERIFY_WORKFLOW: WORKFLOW})
    gh.commit_files(DATA_BRANCH, {"README.md": b"loop-contract state\n"})
    artifacts = tmp_path / "artifacts"
    for number, cand in enumerate(local["candidates"], start=11):
        seat, head = cand["seat"], cand["commit"]
        git(root, "branch", "-f", f"loop-contract/calc/{seat}", head)
        verify_pull_request(
            root,
            contract_path="loopcontract.yml",
            pr=number,
            base_sha=base,
            head_sha=head,
            out=artifacts,
            scratch=tmp_path,
        )
        gh.add_user(f"{seat}-bot")
        gh.add_pull(number, f"loop-contract/calc/{seat}", head, f"{seat}-bot")
        gh.set_pull_files(number, patches(root, base, head))
        gh.add_commit_at(head, {})
    with gh:
        outcome = publish(
            repo_of(gh),
            contract=load_contract(root / "loopcontract.yml"),
            artifacts=artifacts,
            workdir=tmp_path / "publish",
            bot_login="github-actions[bot]",
            run_id="77",
        )
    return dict(outcome.result)


def decision_of(result: dict[str, Any]) -> dict[str, Any]:
    """What the engine decides, without what differs by front end by design (run ids, times,
    the shuffled labels, where the record is kept, a seat's spend)."""
    matrix = result["matrix"] or {}
    return {
        "status": result["status"],
        "winner": result["winner"],
        "bracket": result["bracket"],
        "escalations": result["escalations"],
        "stages": {c["seat"]: c["stage"] for c in result["candidates"]},
        "verdicts": {c["seat"]: c["verdict"] for c in result["candidates"]},
        "scores": {
            seat: (score["overall"], score["passed"], score["row_medians"])
            for seat, score in (matrix.get("candidates") or {}).items()
        },
        "keys": sorted(set(result) - {"spend", "base"}),
    }


def bind_seats(root: Path) -> None:
    """Each seat's pull requests come from its own login (``seats[].github``)."""
    path = root / "loopcontract.yml"
    contract = yaml.safe_load(path.read_text("utf-8"))
    for seat in contract["seats"]:
        seat["github"] = f"{seat['name']}-bot"
    path.write_text(yaml.safe_dump(contract, sort_keys=False), "utf-8")
    git(root, "commit", "-qam", "bind the seats to their logins")


def test_the_terminal_contest_and_github_publish_decide_one_field_alike(tmp_path: Path) -> None:
    root = make_project(tmp_path, SEATS, extra=CONTRACT_EXTRA)
    bind_seats(root)
    local = run_contest(root, contract_path="loopcontract.yml")
    assert local["winner"] == "beta", local["bracket"]  # the judges prefer beta's diff
    remote = github_result(root, local, tmp_path)
    assert not validate_result(local) and not validate_result(remote)
    assert decision_of(remote) == decision_of(local)
    assert remote["schema_version"] == local["schema_version"]
