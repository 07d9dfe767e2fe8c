"""The Action's modes end to end without the runner: real verification of three seat branches
(one tampered, one failing a measured gate, one good), real artifacts, real PyGithub over real
HTTP against the fake GitHub server, and the human gate from reviews."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_ENV, git
from contest_project import make_project
from fake_github import FakeGitHub

from pytest_loopcontract.contest.report import validate_result
from pytest_loopcontract.contract import load_contract
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.decide import LESSONS_PATH, ROUTES_PATH, gate
from pytest_loopcontract.github.publish import DATA_BRANCH, publish, state_path
from pytest_loopcontract.github.verify_pr import verify_pull_request

GOOD = "CALLS = 0\n\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
SLOW = GOOD.replace("CALLS += 1", "for _ in range(9):\n        CALLS += 1")
WRITES = re.compile(r"^(POST|PATCH|PUT|DELETE)$")


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LOOP_CONTRACT_WRITE_SPACING", "0")


def seat_branch(root: Path, seat: str, files: dict[str, str]) -> str:
    git(root, "checkout", "-q", "-b", f"loop-contract/calc/{seat}", "main")
    for name, text in files.items():
        (root / name).write_text(text, "utf-8")
    git(root, "commit", "-qam", f"{seat}'s candidate")
    sha = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "main")
    return sha


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three seat branches, each verified the way the verify job does, once for the module."""
    mp = pytest.MonkeyPatch()
    for key, value in GIT_ENV.items():
        mp.setenv(key, value)
    tmp = tmp_path_factory.mktemp("field")
    root = make_project(tmp, [], measured=True)
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
    numbers = {"good": 11, "slow": 12, "cheat": 13}
    for seat, sha in heads.items():
        verify_pull_request(
            root,
            contract_path="loopcontract.yml",
            pr=numbers[seat],
            base_sha=base,
            head_sha=sha,
            out=artifacts,
            scratch=tmp,
        )
    mp.undo()
    return {"root": root, "heads": heads, "numbers": numbers, "artifacts": artifacts}


def server(field: dict[str, Any]) -> FakeGitHub:
    gh = FakeGitHub().start()
    gh.add_repo("octo", "calc")
    for seat, number in field["numbers"].items():
        gh.add_user(f"{seat}-bot")
        gh.add_pull(number, f"loop-contract/calc/{seat}", field["heads"][seat], f"{seat}-bot")
    gh.add_pull(40, "feature/unrelated", "f" * 40, "someone")
    # the data branch exists after the first publish ever (creating it costs 4 requests once)
    gh.commit_files(DATA_BRANCH, {"README.md": b"loop-contract state\n"})
    return gh


def run_publish(gh: FakeGitHub, field: dict[str, Any], tmp_path: Path, **kw: Any) -> Any:
    repo = make_github("t", base_url=gh.base_url, lazy=True).get_repo("octo/calc")
    return publish(
        repo,
        contract=load_contract(field["root"] / "loopcontract.yml"),
        artifacts=kw.get("artifacts", field["artifacts"]),
        workdir=tmp_path,
        bot_login="github-actions[bot]",
        run_id="77",
        run_head_sha=kw.get("run_head_sha"),
    )


def test_publish_marks_the_good_seat_and_explains_the_others(
    field: dict[str, Any], tmp_path: Path
) -> None:
    with server(field) as gh:
        outcome = run_publish(gh, field, tmp_path)
        assert not validate_result(outcome.result)
        assert outcome.result["winner"] == "good" and outcome.winner_pr == 11
        stages = {c["seat"]: c["stage"] for c in outcome.result["candidates"]}
        assert stages == {"good": "winner", "slow": "measured", "cheat": "hard"}
        good = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert good is not None and good.state == "success"
        for seat in ("slow", "cheat"):
            status = gh.latest_status(field["heads"][seat], "loop-contract/winner")
            assert status is not None and status.state == "failure"
        assert gh.latest_status("f" * 40, "loop-contract/winner") is None
        for number in (11, 12, 13):
            (comment,) = gh.comments(number)
            assert comment.body.startswith("<!-- loop-contract:calc -->")
            assert len(comment.body) <= 65_536
        assert gh.comments(40) == []
        # the request budget: at most 4 + 3N when something changed
        assert len(gh.requests) <= 4 + 3 * 3, "\n".join(map(str, gh.requests))
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert state["pulls"]["good"]["pr"] == 11
        # nothing changed: nothing is written
        before = len(gh.requests)
        again = run_publish(gh, field, tmp_path)
        assert set(again.comments.values()) == {"unchanged"}
        writes = [r for r in gh.requests[before:] if WRITES.match(r[0])]
        assert writes == []


def test_artifact_claiming_another_sha_is_refused(field: dict[str, Any], tmp_path: Path) -> None:
    forged = tmp_path / "artifacts"
    shutil.copytree(field["artifacts"], forged)
    meta = forged / "candidate-11" / "meta.json"
    meta.write_text(json.dumps({"pr": 11, "head_sha": "e" * 40}), "utf-8")
    with server(field) as gh:
        outcome = run_publish(gh, field, tmp_path / "w", artifacts=forged)
        good = next(c for c in outcome.result["candidates"] if c["seat"] == "good")
        assert good["stage"] == "hard"
        assert good["reasons"][0]["code"] == "artifact_rejected"
        assert outcome.result["winner"] is None
        status = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert status is not None and status.state == "failure"


def test_a_closed_pull_request_and_api_faults(field: dict[str, Any], tmp_path: Path) -> None:
    with server(field) as gh:
        gh.set_pull_state(12, "closed")
        gh.fail_next("GET", r"/pulls$", 502)
        gh.fail_next("POST", r"/statuses/", 403, headers={"Retry-After": "1"})
        outcome = run_publish(gh, field, tmp_path)
        assert {c["seat"] for c in outcome.result["candidates"]} == {"good", "cheat"}
        assert gh.comments(12) == [] and gh.statuses(field["heads"]["slow"]) == []
        good = gh.latest_status(field["heads"]["good"], "loop-contract/winner")
        assert good is not None and good.state == "success"


def test_the_human_gate_from_reviews(field: dict[str, Any], tmp_path: Path) -> None:
    with server(field) as gh:
        run_publish(gh, field, tmp_path)
        repo = make_github("t", base_url=gh.base_url, lazy=True).get_repo("octo/calc")
        for login, permission in (("reader", "read"), ("maint", "write")):
            gh.add_user(login)
            gh.set_permission(login, permission)
        gh.add_review(11, "reader", "APPROVED", field["heads"]["good"])
        gh.add_review(11, "good-bot", "APPROVED", field["heads"]["good"])
        pending = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert pending.decision == "pending"
        gh.add_review(11, "maint", "APPROVED", field["heads"]["good"])
        other = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=12)
        assert other.decision == "none"
        approved = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert approved.decision == "approve" and approved.by == "maint"
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert state["result"]["decision"]["by"] == "maint"
        assert state["result"]["status"] == "decided"
        for number in (11, 12, 13):
            assert "maint" in gh.comments(number)[0].body
        # the lessons and the route table go to the data branch at the decision
        files = gh.branch_files(DATA_BRANCH)
        lessons = [json.loads(line) for line in files[LESSONS_PATH].splitlines()]
        assert sorted(lesson["kind"] for lesson in lessons) == ["measured", "tamper"]
        assert all(
            "observed" in lesson["evidence"] or lesson["kind"] == "tamper" for lesson in lessons
        )
        routes = json.loads(files[ROUTES_PATH])
        assert routes["python.calc"]["slow"]["demotions"] == 1
        once = gate(repo, contract_id="calc", bot_login="github-actions[bot]", pr_number=11)
        assert once.reason == "already decided"


def test_a_run_speaks_only_for_its_own_pull_request(field: dict[str, Any], tmp_path: Path) -> None:
    """A pull request controls the verify run it triggers, so that run's artifacts count only
    for that pull request; the others keep what their own runs recorded."""
    heads = field["heads"]
    with server(field) as gh:
        first = run_publish(gh, field, tmp_path / "a", run_head_sha=heads["slow"])
        assert [c["seat"] for c in first.result["candidates"]] == ["slow"]
        assert gh.statuses(heads["good"]) == [] and gh.comments(11) == []
        second = run_publish(gh, field, tmp_path / "b", run_head_sha=heads["good"])
        assert {c["seat"] for c in second.result["candidates"]} == {"good", "slow"}
        assert second.result["winner"] == "good"
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        assert set(state["verified"]) == {"11", "12"}
        # a new push to slow: its recorded verification no longer applies
        gh.set_pull_head(12, "d" * 40)
        third = run_publish(gh, field, tmp_path / "c", run_head_sha=heads["good"])
        assert [c["seat"] for c in third.result["candidates"]] == ["good"]
