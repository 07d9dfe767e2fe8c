"""The dispatch modes end to end in this process: real git (a bare origin, fresh clones as the
jobs' checkouts), real seat programs, PyGithub over real HTTP against the fake GitHub.

Each job of the workflow gets its own clone, as on GitHub: the plan reads the contract, each
seat runs in a clone at the base commit and hands over a bundle, and propose pushes it from
another clean clone and opens (round 1) or updates (round 2) the seat's pull request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from github.Repository import Repository

from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.errors import ContractError
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import write_state
from pytest_loopcontract.github.dispatch import (
    DispatchError,
    contract_path_problem,
    dispatch_context,
    may_dispatch,
    parse_round,
    seat_matrix,
    trigger_of,
)
from pytest_loopcontract.github.dispatch_propose import propose
from pytest_loopcontract.github.dispatch_seat import (
    BUNDLE,
    RECORD,
    SECRET_ENV,
    run_dispatched_seat,
)
from testing.agent_standins import install_standins
from testing.dispatch_scene import SEATS, SECRET_VALUE, dispatch_project, probes
from testing.fake_github import FakeGitHub, load_webhook
from testing.repos import git

REPO = "octo/calc"


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made = dispatch_project(tmp_path)
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", made["window"])  # the probes' window
    return made


@pytest.fixture
def gh(scene: dict[str, Any]) -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo("octo", "calc")
        server.attach_git(scene["origin"])
        for login, level in (("maint", "write"), ("reader", "read"), ("boss", "admin")):
            server.set_permission(login, level)
        yield server


def repo_of(gh: FakeGitHub) -> Repository:
    return make_github("t", base_url=gh.base_url, write_spacing=0).get_repo(REPO)


def checkout(scene: dict[str, Any], dest: Path) -> Path:
    """A job's checkout: a clone of origin, detached at the base commit."""
    git(dest.parent, "clone", "-q", str(scene["origin"]), str(dest))
    git(dest, "checkout", "-q", "--detach", scene["base"])
    return dest


def comment_event(login: str, body: str, *, on_pull: bool = False) -> dict[str, Any]:
    event = load_webhook("issue_comment/created.payload.json")
    event["comment"]["user"]["login"] = login
    event["comment"]["author_association"] = "OWNER"  # what the payload claims, never used
    event["comment"]["body"] = body
    if on_pull:
        event["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    return event


def one_round(
    tmp: Path, scene: dict[str, Any], gh: FakeGitHub, run_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plan, three seat jobs and three propose jobs; the context and each seat's proposal."""
    repo = repo_of(gh)
    contract = load_contract(str(scene["root"] / "loopcontract.yml"))
    rows = seat_matrix(contract)
    context = dispatch_context(repo, contract, [r["name"] for r in rows], run_id)
    # the plan's output crosses into the seat jobs as JSON text
    context = json.loads(json.dumps(context))
    done = {}
    for row in rows:
        name = row["name"]
        job = tmp / f"run-{run_id}-{name}"
        job.mkdir()
        seat_checkout = checkout(scene, job / "seat-ws")
        environ = {SECRET_ENV: SECRET_VALUE} if row["secret"] else {}
        run_dispatched_seat(
            seat_checkout,
            contract=contract,
            seat_name=name,
            base_sha=scene["base"],
            context=context,
            work=job / "seat-tmp",
            out=job / "artifact",
            environ=environ,
        )
        assert SECRET_ENV not in environ  # the carrier is gone before the seat starts
        done[name] = propose(
            repo,
            checkout(scene, job / "propose-ws"),
            contract=contract,
            seat=name,
            folder=job / "artifact",
            base_sha=scene["base"],
            token="t",
            server_url="https://github.com",
            round_no=int(context["round"]),
            run_id=run_id,
            run_attempt="1",
        )
    return context, done


def test_who_may_start_a_contest_is_read_from_the_api(gh: FakeGitHub) -> None:
    repo = repo_of(gh)
    # the payload says OWNER for everyone; only the API's answer counts
    reader = trigger_of("issue_comment", comment_event("reader", "/contest"))
    assert reader is not None and reader.contract == "loopcontract.yml"
    assert may_dispatch(repo, reader.login) == (False, "read")
    assert may_dispatch(repo, "maint") == (True, "write")
    assert may_dispatch(repo, "boss") == (True, "admin")
    assert may_dispatch(repo, "stranger") == (False, "none")  # 404: no such collaborator
    assert gh.count("GET", r"/collaborators/[^/]+/permission") == 4
    # not a contest request: another comment, a pull request's conversation, an edit
    assert trigger_of("issue_comment", comment_event("maint", "looks good")) is None
    assert trigger_of("issue_comment", comment_event("maint", "/contestx")) is None
    assert trigger_of("issue_comment", comment_event("maint", "/contest", on_pull=True)) is None
    edited = {**comment_event("maint", "/contest"), "action": "edited"}
    assert trigger_of("issue_comment", edited) is None
    named = trigger_of("issue_comment", comment_event("maint", "/contest ci/other.yml"))
    assert named is not None and named.contract == "ci/other.yml"
    dispatch = {
        "inputs": {"contract": "loopcontract.yml"},
        "sender": {"login": "maint"},
        "ref": "refs/heads/main",
        "repository": {"default_branch": "main"},
    }
    assert trigger_of("workflow_dispatch", dispatch) == trigger_of(
        "issue_comment", comment_event("maint", "/contest")
    )
    # "Run workflow" on another branch would read that branch's contract: refused
    with pytest.raises(DispatchError, match="run the workflow on main"):
        trigger_of("workflow_dispatch", {**dispatch, "ref": "refs/heads/feature"})


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("loopcontract.yml", True),
        ("contracts/calc.yaml", True),
        ("../outside.yml", False),
        ("/etc/contract.yml", False),
        ("a/./b.yml", False),
        ("x.yml; rm -rf /", False),
        ("${{ github.token }}.yml", False),
        ("contract.json", False),
    ],
)
def test_the_contract_path_is_a_plain_relative_yaml_path(path: str, ok: bool) -> None:
    assert (contract_path_problem(path) is None) is ok


def test_seat_names_and_secrets_are_checked_before_a_matrix(tmp_path: Path) -> None:
    scene = dispatch_project(tmp_path)
    contract = load_contract(str(scene["root"] / "loopcontract.yml"))
    assert seat_matrix(contract) == [
        {"name": "alpha", "secret": "ALPHA_API_KEY"},
        {"name": "beta", "secret": ""},
        {"name": "gamma", "secret": ""},
    ]
    path = scene["root"] / "loopcontract.yml"
    doc = yaml.safe_load(path.read_text("utf-8"))
    for bad in ("lower_case", "GITHUB_TOKEN", "LOOP_CONTRACT_TOKEN", "A-B"):
        doc["seats"][0]["secret"] = bad
        path.write_text(yaml.safe_dump(doc), "utf-8")
        with pytest.raises(ContractError, match="secret"):
            load_contract(str(path))
    doc["seats"][0]["secret"] = "ANTHROPIC_API_KEY"
    doc["seats"][0]["name"] = "${{ secrets.X }}"
    path.write_text(yaml.safe_dump(doc), "utf-8")
    with pytest.raises(ContractError):
        load_contract(str(path))
    # the loader's schema is one check; the matrix checks again on its own
    forged = contract._replace(seats=({"name": "a/../b", "generate": ["x"]},))
    with pytest.raises(DispatchError, match="id pattern"):
        seat_matrix(forged)


def test_a_round_opens_one_pull_request_per_seat_and_the_next_updates_them(
    tmp_path: Path, scene: dict[str, Any], gh: FakeGitHub
) -> None:
    start = len(gh.requests)
    context, done = one_round(tmp_path, scene, gh, "501")
    assert context["round"] == 1 and context["rejection"] is None
    assert {name: p.action for name, p in done.items()} == dict.fromkeys(SEATS, "opened")
    numbers = {name: p.number for name, p in done.items()}
    assert sorted(numbers.values()) == gh.pull_numbers() == [1, 2, 3]
    for name, proposal in done.items():
        pull = gh.pull_state(numbers[name])
        assert pull["head_ref"] == f"loop-contract/calc/{name}"
        assert pull["head_sha"] == proposal.head_sha
        assert pull["author"] == "github-actions[bot]"
        assert parse_round(pull["body"]) == 1 and f"seat `{name}`" in pull["body"]
        assert "/actions/runs/501" in pull["body"]
        # one commit on the base, holding what the seat wrote
        parents = git(scene["origin"], "rev-list", "--parents", "-n", "1", proposal.head_sha)
        assert parents.split()[1:] == [scene["base"]]
        changed = git(scene["origin"], "diff", "--name-only", scene["base"], proposal.head_sha)
        assert changed.split() == ["calc.py"]
    first_round = len(gh.requests) - start
    # the seat's own secret, under the contract's name; no carrier, no token, for any seat
    (alpha,) = probes(scene["probes"], "alpha")
    assert alpha["env"]["ALPHA_API_KEY"] == SECRET_VALUE
    for name in SEATS:
        for seen in probes(scene["probes"], name):
            leaked = {k: v for k, v in seen["env"].items() if v and k != "ALPHA_API_KEY"}
            assert leaked == {}, (name, leaked)
            assert "## Definition of done" in seen["prompt"] and "few-calls" in seen["prompt"]
    assert probes(scene["probes"], "beta")[0]["env"]["ALPHA_API_KEY"] is None

    # A person rejects the proposed winner (the gate records it through the API, as the
    # action); the next dispatch tells every seat why, and each seat's own failed gates from
    # its last verification.
    write_state(
        repo_of(gh),
        "calc",
        json.loads(
            json.dumps(
                {
                    "result": {
                        "decision": {
                            "decision": "reject",
                            "by": "maint",
                            "reason": "changes requested by maint",
                        }
                    },
                    "pulls": {"beta": {"pr": numbers["beta"]}},
                    "verified": {
                        str(numbers["beta"]): {
                            "verdict": {
                                "verdict": "fail",
                                "reasons": [{"code": "measured_gate_failed", "message": "x"}],
                                "gates": {
                                    "hard": [],
                                    "measured": [
                                        {
                                            "id": "few-calls",
                                            "status": "fail",
                                            "metric": "metric.calls",
                                            "observed": 9,
                                            "op": "<=",
                                            "threshold": 2,
                                        }
                                    ],
                                },
                                "tests": [],
                            }
                        }
                    },
                }
            )
        ),
        known_sha=None,
    )
    before = {n: gh.pull_state(n)["head_sha"] for n in numbers.values()}
    start = len(gh.requests)
    context, again = one_round(tmp_path, scene, gh, "502")
    second_round = len(gh.requests) - start
    assert context["round"] == 2
    assert context["rejection"] == "changes requested by maint"
    assert {name: p.action for name, p in again.items()} == dict.fromkeys(SEATS, "updated")
    assert {name: p.number for name, p in again.items()} == numbers  # the same pull requests
    assert gh.pull_numbers() == [1, 2, 3]  # and no second one
    for name, number in numbers.items():
        pull = gh.pull_state(number)
        assert pull["head_sha"] == again[name].head_sha != before[number]  # force-pushed
        assert parse_round(pull["body"]) == 2 and "/actions/runs/502" in pull["body"]
        second = probes(scene["probes"], name)[1]["prompt"]
        assert "A person rejected the previous winner" in second
        assert "changes requested by maint" in second
    beta_prompt = probes(scene["probes"], "beta")[1]["prompt"]
    assert "measured gate `few-calls`: metric.calls observed 9" in beta_prompt
    assert "measured gate" not in probes(scene["probes"], "alpha")[1]["prompt"]
    assert not gh.unknown, gh.unknown
    print(f"requests: round 1 {first_round}, round 2 {second_round}")


def test_a_round_with_two_preset_seats_and_a_scripted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The three seats of issue 14: stand-in ``claude`` and ``codex`` first on PATH (each
    writes calc.py in its worktree and prints its CLI's documented output) and the probe
    program; each gets its pull request, and the presets' seat records carry the tokens and
    cost their CLIs printed (tests/data/presets/*/success.*)."""
    folder = install_standins(tmp_path / "bin", ("claude", "codex"))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    presets = [{"name": "claude", "agent": "claude-code"}, {"name": "codex", "agent": "codex"}]
    scene = dispatch_project(tmp_path, extra={"seats": presets}, scripted={"alpha": "good"})
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", scene["window"])
    with FakeGitHub() as gh:
        gh.add_repo("octo", "calc")
        gh.attach_git(scene["origin"])
        _, done = one_round(tmp_path, scene, gh, "601")
        assert {name: p.action for name, p in done.items()} == dict.fromkeys(
            ("claude", "codex", "alpha"), "opened"
        )
        assert gh.pull_numbers() == [1, 2, 3]
        for name, proposal in done.items():
            pull = gh.pull_state(proposal.number)
            assert pull["head_ref"] == f"loop-contract/calc/{name}"
            assert pull["head_sha"] == proposal.head_sha
            assert f"seat `{name}`" in pull["body"] and "/actions/runs/601" in pull["body"]
            changed = git(scene["origin"], "diff", "--name-only", scene["base"], pull["head_sha"])
            assert changed.split() == ["calc.py"]
            code = git(scene["origin"], "show", f"{pull['head_sha']}:calc.py")
            assert "return a + b" in code  # what the seat wrote, not the base's stub
        assert not gh.unknown, gh.unknown
    records = {
        name: json.loads((tmp_path / f"run-601-{name}" / "artifact" / RECORD).read_text("utf-8"))
        for name in done
    }
    assert records["claude"]["status"] == records["codex"]["status"] == "ok"
    assert records["claude"]["tokens"] == 1203 + 4021 + 15635 + 612  # its usage object
    assert records["claude"]["cost_usd"] == pytest.approx(0.0421825)  # its total_cost_usd
    assert records["codex"]["tokens"] == 24763 + 122  # its turn.completed usage
    assert records["codex"]["cost_usd"] is None  # codex prints no cost: none guessed
    assert records["alpha"]["tokens"] is None and records["alpha"]["cost_usd"] is None
    (alpha,) = probes(scene["probes"], "alpha")
    assert alpha["env"]["ALPHA_API_KEY"] == SECRET_VALUE


def candidate_worktree(seat_ws: Path, path: Path, branch: str) -> Path:
    """The captured candidate's branch checked out beside the job's clone, to forge a bundle
    from (the seat itself worked in a checkout of its own, which holds no such branch)."""
    git(seat_ws, "worktree", "add", "-q", str(path), branch)
    return path


def test_propose_refuses_a_bundle_that_is_not_one_commit_on_the_base(
    tmp_path: Path, scene: dict[str, Any], gh: FakeGitHub
) -> None:
    contract = load_contract(str(scene["root"] / "loopcontract.yml"))
    seat_ws = checkout(scene, tmp_path / "seat-ws")
    out = tmp_path / "artifact"
    record = run_dispatched_seat(
        seat_ws,
        contract=contract,
        seat_name="beta",
        base_sha=scene["base"],
        context={"round": 1, "run": "9"},
        work=tmp_path / "work",
        out=out,
        environ={},
    )
    assert record["status"] == "ok"
    # The cheat: the seat's job hands over two commits (one rewriting the tests).
    branch = "refs/heads/loop-contract/calc/beta"
    edit = candidate_worktree(seat_ws, tmp_path / "edit", "loop-contract/calc/beta")
    (edit / "tests" / "test_calc.py").write_text("def test_add():\n    assert True\n")
    git(edit, "commit", "-qam", "and the tests")
    git(seat_ws, "bundle", "create", str(out / BUNDLE), f"{scene['base']}..{branch}")
    with pytest.raises(DispatchError, match="not one commit on the base"):
        propose(
            repo_of(gh),
            checkout(scene, tmp_path / "propose-ws"),
            contract=load_contract(str(scene["root"] / "loopcontract.yml")),
            seat="beta",
            folder=out,
            base_sha=scene["base"],
            token="t",
            server_url="https://github.com",
            round_no=1,
            run_id="9",
        )
    assert gh.pull_numbers() == []
    assert git(scene["origin"], "branch", "--list", "loop-contract/*").strip() == ""


def test_a_candidate_that_changes_a_workflow_is_not_pushed(
    tmp_path: Path, scene: dict[str, Any], gh: FakeGitHub
) -> None:
    """The GITHUB_TOKEN cannot push workflow files; propose says so instead of failing late."""
    contract = load_contract(str(scene["root"] / "loopcontract.yml"))
    seat_ws = checkout(scene, tmp_path / "seat-ws")
    out = tmp_path / "artifact"
    run_dispatched_seat(
        seat_ws,
        contract=contract,
        seat_name="gamma",
        base_sha=scene["base"],
        context={"round": 1, "run": "9"},
        work=tmp_path / "work",
        out=out,
        environ={},
    )
    branch = "loop-contract/calc/gamma"
    edit = candidate_worktree(seat_ws, tmp_path / "edit", branch)
    (edit / ".github" / "workflows").mkdir(parents=True)
    (edit / ".github" / "workflows" / "x.yml").write_text("on: push\n")
    git(edit, "add", "-A")
    git(edit, "commit", "-q", "--amend", "--no-edit")
    git(seat_ws, "bundle", "create", str(out / BUNDLE), f"{scene['base']}..{branch}")
    done = propose(
        repo_of(gh),
        checkout(scene, tmp_path / "propose-ws"),
        contract=load_contract(str(scene["root"] / "loopcontract.yml")),
        seat="gamma",
        folder=out,
        base_sha=scene["base"],
        token="t",
        server_url="https://github.com",
        round_no=1,
        run_id="9",
    )
    assert done.action == "skipped" and "workflow" in done.why
    assert gh.pull_numbers() == []
    assert git(scene["origin"], "branch", "--list", "loop-contract/*").strip() == ""


def test_a_seat_that_did_not_run_opens_nothing_and_says_why(
    tmp_path: Path, scene: dict[str, Any], gh: FakeGitHub
) -> None:
    """The seat's outcome kinds come through: a missing program is ``unavailable``."""
    path = scene["root"] / "loopcontract.yml"
    doc = yaml.safe_load(path.read_text("utf-8"))
    doc["seats"][2]["generate"] = ["no-such-agent-binary-xyz", "{prompt_file}"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    contract = load_contract(str(path))
    out = tmp_path / "artifact"
    record = run_dispatched_seat(
        checkout(scene, tmp_path / "seat-ws"),
        contract=contract,
        seat_name="gamma",
        base_sha=scene["base"],
        context={"round": 1, "run": "9"},
        work=tmp_path / "work",
        out=out,
        environ={},
    )
    assert record["status"] == "unavailable" and "not found" in record["reason"]
    assert not (out / BUNDLE).exists()
    done = propose(
        repo_of(gh),
        checkout(scene, tmp_path / "propose-ws"),
        contract=load_contract(str(scene["root"] / "loopcontract.yml")),
        seat="gamma",
        folder=out,
        base_sha=scene["base"],
        token="t",
        server_url="https://github.com",
        round_no=1,
        run_id="9",
    )
    assert done.action == "skipped" and "unavailable" in done.why
    assert gh.pull_numbers() == []


SNOOP = r"""
import json, os, pathlib, sys
secret, window = sys.argv[1], pathlib.Path(sys.argv[2])
found = []
for proc in pathlib.Path("/proc").iterdir():
    try:
        if proc.name.isdigit() and secret.encode() in (proc / "environ").read_bytes():
            found.append("the environment of process " + proc.name)
    except OSError:
        pass
home, temp = pathlib.Path(os.environ["PLANTED_HOME"]), pathlib.Path(os.environ["PLANTED_TEMP"])
for planted in (home / ".credentials", temp / "_runner_file_commands" / "set_env"):
    try:
        if secret in planted.read_text():
            found.append(str(planted))
    except OSError:
        pass
try:
    other = temp / "loop-contract-seat-out-beta"
    other.mkdir(parents=True, exist_ok=True)
    (other / "seat.json").write_text('{"seat": "beta"}')
    found.append("beta's upload folder")
except OSError:
    pass
import subprocess
seen = subprocess.run(["git", "log", "--all", "--format=%H"], capture_output=True, text=True)
if len(seen.stdout.split()) != 1:
    found.append(f"{len(seen.stdout.split())} commits of the repository's history")
pathlib.Path("calc.py").write_text("def add(a, b):\n    return a + b\n")
(window / "found.json").write_text(json.dumps(found))
"""


@pytest.mark.parametrize("confined", [False, True])
def test_a_seat_on_the_runner_reaches_no_token_and_no_other_seats_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    """Attack (issue 32, point 5): the seat's own environment is clean, but the job's other
    processes are not (the runner's worker holds ACTIONS_RUNTIME_TOKEN, which uploads
    artifacts under any name), the runner's home holds its credentials, and RUNNER_TEMP holds
    the job's files. Unconfined (the contract allows it), the seat reads all of it and writes a
    folder named like another seat's upload; in its box it finds none of it."""
    secret = "runtime-token-0123456789abcdef"
    window = tmp_path / "window"
    window.mkdir()
    (window / "snoop.py").write_text(SNOOP, "utf-8")
    home, temp = tmp_path / "runner-home", tmp_path / "runner-temp"
    (home).mkdir()
    (home / ".credentials").write_text(secret)
    (temp / "_runner_file_commands").mkdir(parents=True)
    (temp / "_runner_file_commands" / "set_env").write_text(f"ACTIONS_RUNTIME_TOKEN={secret}")
    generate = [sys.executable, str(window / "snoop.py"), secret, str(window)]
    seat = {"name": "snoop", "family": "x", "scripted": True, "timeout": 60, "generate": generate}
    extra: dict[str, Any] = {"seats": [seat]}
    if not confined:
        extra["github"] = {"require_sandbox": False}
        monkeypatch.setenv("LOOP_CONTRACT_ISOLATION", "process")
    scene = dispatch_project(tmp_path, extra=extra, scripted={})
    for key, value in {"HOME": str(home), "RUNNER_TEMP": str(temp), "PLANTED_HOME": str(home),
                       "PLANTED_TEMP": str(temp), "LOOP_CONTRACT_SANDBOX_WRITABLE": str(window)
                       }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    # the runner's worker: another process of the job, with the token in its environment
    worker = subprocess.Popen(["sleep", "60"], env={"ACTIONS_RUNTIME_TOKEN": secret})
    seat_ws = checkout(scene, tmp_path / "seat-ws")
    git(seat_ws, "commit", "-q", "--allow-empty", "-m", "later history the seat must not see")
    try:
        record = run_dispatched_seat(
            seat_ws,
            contract=load_contract(str(scene["root"] / "loopcontract.yml")),
            seat_name="snoop",
            base_sha=scene["base"],
            context={"round": 1, "run": "9"},
            work=temp / "loop-contract-seat-snoop",
            out=temp / "loop-contract-seat-out",
            environ={},
        )
    finally:
        worker.kill()
        worker.wait()
    assert record["status"] == "ok" and record["changed"] == ["calc.py"]
    found = json.loads((window / "found.json").read_text("utf-8"))
    # either way the seat's checkout holds the base commit only: not the job's clone
    assert not [item for item in found if "history" in item], found
    forged = temp / "loop-contract-seat-out-beta" / "seat.json"
    if confined:  # no secret in reach; what it wrote in RUNNER_TEMP went to an empty tmpfs
        assert [item for item in found if item != "beta's upload folder"] == []
        assert not forged.exists()
    else:  # as it was: everything in reach
        assert f"the environment of process {worker.pid}" in found
        assert str(home / ".credentials") in found
        assert str(temp / "_runner_file_commands" / "set_env") in found
        assert forged.read_text("utf-8") == '{"seat": "beta"}'  # beta's upload, forged
