"""The dispatch workflow file, run by ``act`` on this host against the fake GitHub.

The scene: the calc contest with three scripted seats (``testing/dispatch_scene.py``), this
repository's dispatch workflow and package, a bare "origin" the jobs check out from and push
to, and the fake server attached to it (a push there is a push to GitHub). Then:

1. ``workflow_dispatch`` by a writer opens three pull requests, one per seat, on
   ``loop-contract/calc/<seat>``; each seat saw its own secret only, and no token.
2. ``/contest`` by a read-only user (whose comment payload claims OWNER) starts nothing:
   no seat job, no write to GitHub, no branch.
3. A person rejected the winner; ``/contest`` by a writer runs round 2, which force-pushes
   each seat's branch and updates the same three pull requests, and every seat's prompt
   carries the reason.

Request counts per run land in ``requests.json`` in the test's folder. A second test then
runs the verify workflow on each dispatched pull request and publish on each verify run's
completion: the good seat becomes the proposed winner.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import DATA_BRANCH, state_path, write_state
from pytest_loopcontract.github.dispatch import parse_round
from testing.act_runner import ActScene, checkouts, job_lines, store_artifacts
from testing.dispatch_scene import SEATS, SECRET_VALUE, dispatch_project, probes
from testing.fake_github import FakeGitHub, load_webhook
from testing.github_data import require as require_data
from testing.github_events import user_object
from testing.github_field import patches
from testing.repos import git

# Real workflows under act, minutes each: the default run leaves them to CI's slow step.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ".github/workflows/loop-contract-dispatch.yml"
REPO = "octo/calc"
WRITES = {"POST", "PATCH", "PUT", "DELETE"}
VERIFY = ".github/workflows/loop-contract-verify.yml"
PUBLISH = ".github/workflows/loop-contract-publish.yml"
# As in tests/test_act_e2e.py: the sandbox is required once the verdict schema has the key.
SANDBOXED = (
    "isolation"
    in json.loads(
        (ROOT / "pytest_loopcontract" / "schemas" / "verdict.schema.json").read_text("utf-8")
    )["properties"]
)
CONTRACT_GITHUB = {
    "require_sandbox": SANDBOXED,
    "protect": ["pytest_loopcontract/", "pyproject.toml"],
}


def consumer(tmp: Path, *, contest: bool = False) -> dict[str, Any]:
    """The dispatch scene plus this repository's dispatch workflow and package, on main;
    ``contest``: also the verify and publish workflows and the action they call."""
    scene = dispatch_project(tmp, extra={"github": CONTRACT_GITHUB} if contest else None)
    root = scene["root"]
    (root / WORKFLOW).parent.mkdir(parents=True)
    for name in (WORKFLOW, VERIFY, PUBLISH) if contest else (WORKFLOW,):
        shutil.copy2(ROOT / name, root / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    # the action (its constraints pin what the dispatch workflow's jobs install)
    shutil.copytree(ROOT / "action", root / "action", ignore=skip)
    shutil.copytree(ROOT / "pytest_loopcontract", root / "pytest_loopcontract", ignore=skip)
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # pyproject names the license file
        shutil.copy2(ROOT / name, root / name)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the dispatch workflow and its package")
    git(root, "remote", "add", "origin", f"https://github.com/{REPO}")
    git(root, "config", "remote.origin.pushurl", str(scene["origin"]))
    git(root, "push", "-q", "origin", "main")
    scene["base"] = git(root, "rev-parse", "HEAD").strip()
    return scene


def dispatch_event(login: str) -> dict[str, Any]:
    base = load_webhook("issue_comment/created.payload.json")
    return {
        "inputs": {"contract": "loopcontract.yml"},
        "ref": "refs/heads/main",
        "repository": {**base["repository"], "default_branch": "main"},
        "sender": user_object(login),
        "workflow": WORKFLOW,
    }


def comment_event(login: str, body: str) -> dict[str, Any]:
    event = load_webhook("issue_comment/created.payload.json")
    event["comment"]["user"] = user_object(login)
    event["comment"]["author_association"] = "OWNER"  # the payload's claim, never trusted
    event["comment"]["body"] = body
    return event


def rejected_state(numbers: dict[str, int]) -> bytes:
    decision = {"decision": "reject", "by": "maint", "reason": "changes requested by maint"}
    state = {
        "result": {"decision": decision},
        "pulls": {seat: {"pr": n} for seat, n in numbers.items()},
    }
    return json.dumps(state).encode()


def test_dispatch_under_act_opens_then_updates_one_pull_request_per_seat(tmp_path: Path) -> None:
    require_data()
    scene = consumer(tmp_path)
    requests: dict[str, Any] = {}
    with FakeGitHub() as gh:
        gh.add_repo("octo", "calc")
        gh.attach_git(scene["origin"])
        gh.set_permission("maint", "write")
        gh.set_permission("reader", "read")
        act = ActScene(tmp_path, scene["origin"], gh.base_url)
        secrets = {"GITHUB_TOKEN": "fake-token", "LOOP_CONTRACT_SEAT_SECRET": SECRET_VALUE}

        def run(name: str, event_name: str, event: dict[str, Any], run_id: int) -> str:
            before = len(gh.requests)
            window = {"LOOP_CONTRACT_SANDBOX_WRITABLE": scene["window"]}
            log = act.run(scene["root"], event_name, event, run_id, WORKFLOW, secrets, window)
            made = gh.requests[before:]
            requests[name] = {
                "total": len(made),
                "writes": sum(1 for r in made if r[0] in WRITES),
                "by_endpoint": _by_endpoint(made),
            }
            return log

        try:
            # 1. a writer dispatches: three pull requests on the seats' branches
            log = run(
                "round 1 (workflow_dispatch)", "workflow_dispatch", dispatch_event("maint"), 601
            )
            assert gh.pull_numbers() == [1, 2, 3], log[-4000:]
            numbers = {}
            for number in gh.pull_numbers():
                pull = gh.pull_state(number)
                seat = pull["head_ref"].removeprefix("loop-contract/calc/")
                numbers[seat] = number
                pushed = git(scene["origin"], "rev-parse", f"refs/heads/{pull['head_ref']}")
                assert pull["head_sha"] == pushed.strip()
                assert pull["author"] == "github-actions[bot]"
                assert parse_round(pull["body"]) == 1 and "/actions/runs/601" in pull["body"]
            assert sorted(numbers) == sorted(SEATS)
            for seat in SEATS:
                # the seat's job and its propose job each checked out the base, nothing else
                assert checkouts(job_lines(log, f"seat {seat}")) == [scene["base"]]
                assert checkouts(job_lines(log, f"propose {seat}")) == [scene["base"]]
                for seen in probes(scene["probes"], seat):
                    shown = {k: v for k, v in seen["env"].items() if v}
                    expected = {"ALPHA_API_KEY": SECRET_VALUE} if seat == "alpha" else {}
                    assert shown == expected, (seat, shown)
            heads = {seat: gh.pull_state(n)["head_sha"] for seat, n in numbers.items()}

            # 2. a read-only user's /contest starts nothing
            log = run(
                "read-only /contest", "issue_comment", comment_event("reader", "/contest"), 602
            )
            assert requests["read-only /contest"]["writes"] == 0
            assert any("reader has read permission" in line for line in job_lines(log, "plan"))
            assert all(job_lines(log, f"seat {seat}") == [] for seat in SEATS)
            assert gh.pull_numbers() == [1, 2, 3]
            assert all(len(probes(scene["probes"], seat)) == 1 for seat in SEATS)

            # 3. after a rejection, a writer's /contest runs round 2 on the same pull requests
            # (the gate recorded the rejection through the API, as the action: a state pushed
            # by anyone else would be ignored, see tests/github/test_records.py)
            as_action = make_github("fake-token", base_url=gh.base_url, lazy=True)
            write_state(as_action.get_repo(REPO), "calc", json.loads(rejected_state(numbers)))
            run("round 2 (/contest)", "issue_comment", comment_event("maint", "/contest"), 603)
            assert gh.pull_numbers() == [1, 2, 3]
            for seat, number in numbers.items():
                pull = gh.pull_state(number)
                assert pull["head_ref"] == f"loop-contract/calc/{seat}"
                assert pull["head_sha"] != heads[seat]
                assert parse_round(pull["body"]) == 2 and "/actions/runs/603" in pull["body"]
                prompt = probes(scene["probes"], seat)[1]["prompt"]
                assert "changes requested by maint" in prompt
            assert not gh.unknown, gh.unknown
        finally:
            (tmp_path / "requests.json").write_text(json.dumps(requests, indent=1), "utf-8")


def _by_endpoint(made: list[tuple[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for method, path in made:
        parts = path.split("/")[4:] if path.startswith("/repos/") else path.split("/")[1:]
        key = f"{method} {'/'.join(p if not p.isdigit() else 'N' for p in parts[:3])}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def verify_dispatch_event(number: str) -> dict[str, Any]:
    """The ``workflow_dispatch`` payload of the verify workflow, as the propose job's
    dispatch makes GitHub send it."""
    base = load_webhook("issue_comment/created.payload.json")
    return {
        "inputs": {"pr": number},
        "ref": "refs/heads/main",
        "repository": {**base["repository"], "default_branch": "main"},
        "sender": user_object("github-actions[bot]"),
        "workflow": VERIFY,
    }


def test_the_dispatch_starts_verification_and_publish_proposes_a_winner(tmp_path: Path) -> None:
    """The chain as GitHub runs it, with its rule modelled by the fake: the propose job's
    pull requests (made with GITHUB_TOKEN) start no ``pull_request`` run, so each is verified
    by the ``workflow_dispatch`` the propose job sends (the default branch's verify workflow),
    and publish, started by each verify run's completion, takes the dispatched run as the pull
    request's. Only what the fake says GitHub would start is run. The good seat becomes the
    proposed winner."""
    require_data()
    scene = consumer(tmp_path, contest=True)
    root, origin, base = scene["root"], scene["origin"], scene["base"]
    secrets = {"GITHUB_TOKEN": "fake-token", "LOOP_CONTRACT_SEAT_SECRET": SECRET_VALUE}
    with FakeGitHub() as gh:
        gh.add_repo("octo", "calc")
        gh.attach_git(origin)
        gh.set_permission("maint", "write")
        # What the API says of the default branch, as GitHub would after the push.
        gh.commit_files("main", {VERIFY: (root / VERIFY).read_bytes()})
        gh.add_commit_at(base, {})  # main's commit, readable through the contents API
        gh.commit_files(DATA_BRANCH, {"README.md": b"loop-contract state\n"})
        act = ActScene(tmp_path, origin, gh.base_url)
        window = {"LOOP_CONTRACT_SANDBOX_WRITABLE": scene["window"]}  # the seats' probes
        act.run(root, "workflow_dispatch", dispatch_event("maint"), 701, WORKFLOW, secrets, window)
        assert gh.pull_numbers() == [1, 2, 3]
        # GitHub's rule: the token's pull requests start nothing; its dispatches do
        assert sorted(r.pr for r in gh.suppressed if r.event == "pull_request") == [1, 2, 3]
        started = list(gh.started)
        assert [(r.event, r.workflow, r.ref) for r in started] == [
            ("workflow_dispatch", VERIFY, "main")
        ] * 3
        assert sorted(r.inputs["pr"] for r in started) == ["1", "2", "3"]
        git(root, "fetch", "-q", str(origin), "+refs/heads/loop-contract/*:refs/remotes/o/*")
        pulls = {n: gh.pull_state(n) for n in gh.pull_numbers()}
        for number, pull in pulls.items():
            gh.set_pull_files(number, patches(root, base, pull["head_sha"]))
        seat_of = {n: p["head_ref"].removeprefix("loop-contract/calc/") for n, p in pulls.items()}
        for dispatch in started:
            assert dispatch.run_id is not None
            run_id = dispatch.run_id  # the run GitHub queued for the dispatch
            act.run(root, "workflow_dispatch", verify_dispatch_event(dispatch.inputs["pr"]),
                    run_id, VERIFY, secrets)  # fmt: skip
            gh.finish_run(run_id)  # the run is over
            store_artifacts(gh, tmp_path / "artifacts", run_id)  # what it uploaded, on GitHub
            completed = gh.workflow_run_event(run_id, pull_requests=[])
            completed["repository"]["default_branch"] = "main"
            act.run(root, "workflow_run", completed, run_id + 50, PUBLISH, secrets)
        state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
        stages = {c["seat"]: c["stage"] for c in state["result"]["candidates"]}
        assert state["result"]["winner"] == "alpha", stages
        assert stages == {"alpha": "winner", "beta": "measured", "gamma": "hard"}, stages
        winner = next(n for n, seat in seat_of.items() if seat == "alpha")
        status = gh.latest_status(pulls[winner]["head_sha"], "loop-contract/winner")
        assert status is not None and status.state == "pending", status
        # every candidate was verified by its dispatched run: publish asked for nothing more
        assert len(gh.started) == 3, gh.started
        assert not gh.unknown, gh.unknown
