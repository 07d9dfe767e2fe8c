"""The GitHub workflows and the composite action: the security properties, checked as data.

The workflows are half of the trust model (the other half is the code that reads artifacts),
so their properties are tested like code: no expression is ever spliced into a script, each
workflow holds the least permissions it needs, the privileged workflow never checks out a
pull request, every third-party action is pinned to a full commit SHA, no checkout leaves a
credential behind. The action's shell script is executed with a stand-in ``loop-contract``
so the arguments and the environment each mode really gets are checked, and fed to the real
argument parser. zizmor and check-jsonschema run as subprocesses when installed (set
``LOOP_CONTRACT_REQUIRE_TOOLS=1`` to make a missing tool a failure).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_loopcontract.cli.parser import build_parser
from pytest_loopcontract.github.artifacts import candidate_dirname

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action" / "action.yml"
EXAMPLES = ROOT / "examples" / "github"
WORKFLOWS = ROOT / ".github" / "workflows"
VERIFY = "loop-contract-verify.yml"
PUBLISH = "loop-contract-publish.yml"
REVIEW = "loop-contract-review.yml"
OURS = [
    EXAMPLES / VERIFY,
    EXAMPLES / PUBLISH,
    EXAMPLES / REVIEW,
    WORKFLOWS / VERIFY,
    WORKFLOWS / PUBLISH,
    WORKFLOWS / REVIEW,
]

PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
SHA = "0123456789abcdef0123456789abcdef01234567"
BASE = "fedcba9876543210fedcba9876543210fedcba98"

# Contexts an outside contributor controls; none may appear in any expression of ours.
ATTACKER_CONTEXTS = [
    "github.head_ref",
    "github.event.pull_request.title",
    "github.event.pull_request.body",
    "github.event.pull_request.head.ref",
    "github.event.pull_request.head.label",
    "github.event.pull_request.head.repo",
    "github.event.review.body",
    "github.event.comment.body",
    "github.event.workflow_run.head_branch",
    "github.event.workflow_run.head_commit",
    "github.event.workflow_run.display_title",
]


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(document, dict)
    if True in document:  # YAML 1.1 reads the key `on` as a boolean
        document["on"] = document.pop(True)
    return document


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (dotted path, value) pair of a parsed YAML document."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}[{index}]")


def steps(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(job id, step) for a workflow; ("action", step) for a composite action."""
    if "jobs" in document:
        for job_id, job in document["jobs"].items():
            for step in job.get("steps", []):
                yield job_id, step
    else:
        for step in document["runs"]["steps"]:
            yield "action", step


def expressions_in_run(document: dict[str, Any]) -> list[str]:
    """Dotted paths of every ``run:`` script that contains an expression."""
    return [
        path
        for path, value in walk(document)
        if path.split(".")[-1] == "run" and isinstance(value, str) and "${{" in value
    ]


def unpinned(document: dict[str, Any]) -> list[str]:
    out = []
    for _, step in steps(document):
        uses = step.get("uses")
        if uses is not None and not uses.startswith("./") and not PINNED.match(uses):
            out.append(uses)
    return out


def checkouts(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (job, step)
        for job, step in steps(document)
        if str(step.get("uses", "")).startswith("actions/checkout@")
    ]


def credentials_left(document: dict[str, Any]) -> list[str]:
    return [
        job
        for job, step in checkouts(document)
        if (step.get("with") or {}).get("persist-credentials") not in (False, "false")
    ]


VERIFIER = ".loop-contract-verifier"
"""Where the verify job checks out the base commit to run the action from."""


def by_uses(document: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [step for _, step in steps(document) if str(step.get("uses", "")).startswith(prefix)]


# --------------------------------------------------------------------------- the checks bite


BAD_WORKFLOW = """
name: bad
on: pull_request_target
permissions: write-all
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
"""


def test_the_property_checks_catch_a_bad_workflow(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(BAD_WORKFLOW)
    document = load(path)
    assert expressions_in_run(document) == ["jobs.x.steps[1].run"]
    assert unpinned(document) == ["actions/checkout@v4"]
    assert credentials_left(document) == ["x"]
    assert document["on"] == "pull_request_target"


# --------------------------------------------------------------------------- all of our files


def test_the_repository_copies_are_identical_to_the_examples() -> None:
    for name in (VERIFY, PUBLISH):
        assert (WORKFLOWS / name).read_bytes() == (EXAMPLES / name).read_bytes(), name


@pytest.mark.parametrize("path", [*OURS, ACTION], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_expression_inside_any_run_script(path: Path) -> None:
    assert expressions_in_run(load(path)) == []


@pytest.mark.parametrize("path", [*OURS, ACTION], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_expression_is_swallowed_by_a_yaml_comment(path: Path) -> None:
    """`name: verify #${{ x }}` is `verify` plus a comment: every expression must parse."""
    code = "\n".join(
        line for line in path.read_text("utf-8").splitlines() if not line.lstrip().startswith("#")
    )
    parsed = sum(value.count("${{") for _, value in walk(load(path)) if isinstance(value, str))
    assert parsed == code.count("${{")


@pytest.mark.parametrize("path", [*OURS, ACTION], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_attacker_controlled_context_in_any_expression(path: Path) -> None:
    found = [
        context
        for expression in EXPRESSION.findall(path.read_text("utf-8"))
        for context in ATTACKER_CONTEXTS
        if context in expression
    ]
    assert found == []


@pytest.mark.parametrize("path", [*OURS, ACTION], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_action_is_pinned_by_a_full_commit_sha(path: Path) -> None:
    assert unpinned(load(path)) == []


USING_THE_ACTION = [p for p in OURS if p.name != REVIEW]


@pytest.mark.parametrize("path", USING_THE_ACTION, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_checkout_leaves_no_credential_behind(path: Path) -> None:
    document = load(path)
    assert checkouts(document), "each job checks something out"
    assert credentials_left(document) == []


@pytest.mark.parametrize("path", OURS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_secret_and_no_blanket_permission(path: Path) -> None:
    assert [e for e in EXPRESSION.findall(path.read_text("utf-8")) if "secrets" in e] == []
    for where, value in walk(load(path)):
        if where.split(".")[-1] == "permissions":
            assert isinstance(value, dict), (where, value)  # never read-all / write-all
            assert "id-token" not in value


@pytest.mark.parametrize("path", USING_THE_ACTION, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_action_is_called_with_inputs_it_declares(path: Path) -> None:
    declared = set(load(ACTION)["inputs"])
    calls = by_uses(load(path), "./action")
    assert calls
    for step in calls:
        given = set(step["with"])
        assert "mode" in given and given <= declared, given - declared


# --------------------------------------------------------------------------- verify workflow


def test_verify_runs_on_pull_request_with_read_only_contents() -> None:
    from pytest_loopcontract.github.verify_dispatch import PR_INPUT

    document = load(EXAMPLES / VERIFY)
    assert set(document["on"]) == {"pull_request", "workflow_dispatch"}
    assert set(document["on"]["pull_request"]["types"]) == {
        "opened",
        "synchronize",
        "reopened",
        "labeled",
    }
    # the dispatch the propose job and publish send: the pull request's number, nothing else
    assert set(document["on"]["workflow_dispatch"]["inputs"]) == {PR_INPUT}
    assert document["on"]["workflow_dispatch"]["inputs"][PR_INPUT]["type"] == "number"
    assert document["permissions"] == {"contents": "read"}
    for job in document["jobs"].values():
        assert "permissions" not in job


def test_verify_cancels_only_a_pull_requests_older_run_never_a_dispatched_one() -> None:
    concurrency = load(EXAMPLES / VERIFY)["concurrency"]
    assert "github.event.pull_request.number" in concurrency["group"]
    assert "github.run_id" in concurrency["group"]  # a dispatched run's own group
    assert concurrency["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_the_privileged_installs_are_pinned_by_the_actions_constraints() -> None:
    """Every distribution the ``github`` extra pulls in (and the build backend) has an exact
    version in ``action/constraints.txt``; to update it, run ``pip install --dry-run
    --ignore-installed --report report.json ".[github]" setuptools`` and copy the versions."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    pinned = {}
    for line in (ROOT / "action" / "constraints.txt").read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[name.lower().replace("_", "-")] = version
    todo, seen = ["pytest-loopcontract"], set()
    while todo:
        dist = distribution(todo.pop())
        for text in dist.requires or []:
            req = Requirement(text)
            extras = {"extra": "github"} if dist.metadata["Name"] == "pytest-loopcontract" else {}
            if req.marker is not None and not req.marker.evaluate({"extra": "", **extras}):
                continue
            name = req.name.lower().replace("_", "-")
            if name not in seen and name != "pytest-loopcontract":
                seen.add(name)
                todo.append(name)
    assert seen and seen <= set(pinned), sorted(seen - set(pinned))
    assert "setuptools" in pinned
    assert "PIP_CONSTRAINT: ${{ github.action_path }}/constraints.txt" in ACTION.read_text()
    dispatch = (EXAMPLES / "loop-contract-dispatch.yml").read_text()
    assert dispatch.count("PIP_CONSTRAINT: ${{ github.workspace }}/action/constraints.txt") == 3


def test_verify_fans_out_over_the_plan_and_uploads_one_artifact_per_candidate() -> None:
    from pytest_loopcontract.github.plan import matrix_of
    from pytest_loopcontract.github.pulls import CandidatePR

    document = load(EXAMPLES / VERIFY)
    plan, verify = document["jobs"]["plan"], document["jobs"]["verify"]
    assert plan["outputs"]["candidates"] == "${{ steps.plan.outputs.candidates }}"
    assert verify["needs"] == "plan"
    assert verify["strategy"]["matrix"] == {
        "candidate": "${{ fromJSON(needs.plan.outputs.candidates) }}"
    }
    assert verify["strategy"]["fail-fast"] is False
    assert "'[]'" in verify["if"]  # an empty plan must not start an empty matrix

    # Every matrix key the workflow reads is one plan produces.
    cand = CandidatePR(7, SHA, "loop-contract/c/alpha", "alpha", "a", False, "open", base_sha=BASE)
    row = matrix_of([cand])
    used = set(re.findall(r"matrix\.candidate\.(\w+)", (EXAMPLES / VERIFY).read_text()))
    assert used and used <= set(row[0])

    # the candidate's head as data, then the verifier (action and package) from the base
    checkout, verifier = by_uses(document, "actions/checkout@")[1:]
    assert checkout["with"]["ref"] == "${{ matrix.candidate.head_sha }}"
    assert "repository" not in checkout["with"] and "path" not in checkout["with"]
    assert verifier["with"]["ref"] == "${{ github.event.pull_request.base.sha || github.sha }}"
    assert verifier["with"]["path"] == VERIFIER
    assert "repository" not in verifier["with"]
    (upload,) = by_uses(document, "actions/upload-artifact@")
    name = "candidate-${{ matrix.candidate.pr }}"
    assert candidate_dirname(7) == "candidate-7"  # the folder publish looks for
    assert upload["with"]["name"] == name
    assert upload["with"]["path"] == f"${{{{ runner.temp }}}}/loop-contract-artifacts/{name}/"
    assert upload["with"]["if-no-files-found"] == "error"
    (call,) = [s for s in by_uses(document, "./") if s["with"]["mode"] == "verify"]
    assert call["uses"] == f"./{VERIFIER}/action"  # never the candidate's action
    assert call["with"]["artifacts"] == "${{ runner.temp }}/loop-contract-artifacts"


# --------------------------------------------------------------------------- publish workflow


def test_publish_runs_after_verify_and_after_reviews() -> None:
    """Reviews reach publish through the review workflow's completion (workflow_run), so the
    gate has a write token even for a fork's pull request; the review workflow itself holds
    no permission and runs no code of anyone's."""
    verify_name = load(EXAMPLES / VERIFY)["name"]
    review = load(EXAMPLES / REVIEW)
    document = load(EXAMPLES / PUBLISH)
    assert document["on"]["workflow_run"] == {
        "workflows": [verify_name, review["name"]],
        "types": ["completed"],
    }
    assert set(document["on"]) == {"workflow_run"}
    assert review["on"] == {"pull_request_review": {"types": ["submitted", "dismissed"]}}
    assert review["permissions"] == {}
    steps = [step for job in review["jobs"].values() for step in job["steps"]]
    assert all("uses" not in step for step in steps)
    assert "pull_request_review" in document["jobs"]["gate"]["if"]


def test_publish_holds_the_least_permissions_per_job() -> None:
    document = load(EXAMPLES / PUBLISH)
    assert document["permissions"] == {}
    jobs = document["jobs"]
    assert jobs["publish"]["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "statuses": "write",
        "actions": "write",
        "checks": "write",
        "security-events": "write",
    }
    assert jobs["gate"]["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "statuses": "write",
    }


def test_publish_runs_one_at_a_time_per_contest_without_cancelling() -> None:
    concurrency = load(EXAMPLES / PUBLISH)["concurrency"]
    assert "${{ github.repository }}" in concurrency["group"]
    assert "loopcontract.yml" in concurrency["group"]
    assert concurrency["cancel-in-progress"] is False


def test_publish_never_checks_out_or_runs_pull_request_code() -> None:
    document = load(EXAMPLES / PUBLISH)
    for _, step in checkouts(document):
        assert step["with"]["ref"] == "${{ github.event.repository.default_branch }}"
        assert set(step["with"]) == {"ref", "persist-credentials"}
    # Nothing runs but the pinned actions and the default branch's own action.
    for _, step in steps(document):
        assert "run" not in step
        uses = step["uses"]
        assert uses == "./action" or uses.split("@")[0] in {
            "actions/checkout",
            "actions/setup-python",
            "actions/download-artifact",
            "github/codeql-action/upload-sarif",
        }
    text = (EXAMPLES / PUBLISH).read_text()
    for pr_ref in ("head_sha", "head.sha", "refs/pull", "merge_commit_sha", "github.ref"):
        assert pr_ref not in text


def test_publish_lets_the_action_fetch_the_artifacts_outside_the_workspace() -> None:
    """No download-artifact step: it would fetch every artifact of the run, of any size,
    before anything checks it; the action lists them and takes the candidate ones within the
    limits (pytest_loopcontract.github.artifact_fetch)."""
    document = load(EXAMPLES / PUBLISH)
    assert by_uses(document, "actions/download-artifact@") == []
    modes = {step["with"]["mode"]: step["with"] for step in by_uses(document, "./action")}
    assert modes["publish"]["artifacts"] == "${{ runner.temp }}/loop-contract-artifacts"
    assert set(modes) == {"publish", "gate"}
    job_if = document["jobs"]["publish"]["if"]
    assert "github.event.workflow_run.event == 'pull_request'" in job_if
    assert "conclusion != 'cancelled'" in job_if


# --------------------------------------------------------------------------- the action


def test_action_declares_its_interface() -> None:
    document = load(ACTION)
    assert document["runs"]["using"] == "composite"
    inputs = document["inputs"]
    assert inputs["mode"]["required"] is True
    assert inputs["contract"]["default"] == "loopcontract.yml"
    assert inputs["token"]["default"] == "${{ github.token }}"
    assert inputs["bot-login"]["default"] == "github-actions[bot]"
    assert inputs["python"]["default"] == "python3"
    assert "artifacts" in inputs
    assert {"candidates", "winner", "status"} <= set(document["outputs"])
    ids = {step.get("id") for _, step in steps(document)}
    for output in document["outputs"].values():
        (step_id,) = re.findall(r"steps\.([\w-]+)\.outputs", output["value"])
        assert step_id in ids
    used = set(re.findall(r"inputs\.([\w-]+)", ACTION.read_text()))
    assert used == set(inputs)  # every input is used, and only declared ones are


def test_action_installs_itself_from_its_own_checkout() -> None:
    install = load(ACTION)["runs"]["steps"][0]
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    # with the `github` extra: every mode of the action calls PyGithub
    assert '"$ACTION_PATH/..[github]"' in install["run"]
    # the working folder is the candidate's checkout in verify: `python -m` without -I would
    # import a venv.py or pip.py from there (tests/test_act_e2e.py, seat "shadow")
    calls = re.findall(r"^\s*(\S*python\S*) (.*)$", install["run"], re.MULTILINE | re.IGNORECASE)
    assert len(calls) == 2, calls
    for _, args in calls:
        assert args.startswith("-I -m "), args
    for _, step in steps(load(ACTION)):
        assert step["shell"] == "bash"


def _run_step() -> dict[str, Any]:
    (step,) = [s for _, s in steps(load(ACTION)) if s.get("id") == "run"]
    return step


def run_action_script(tmp_path: Path, **inputs: str) -> tuple[int, dict[str, Any] | None]:
    """Execute the action's run script as Actions would, with a stand-in ``loop-contract``."""
    step = _run_step()
    values = {
        "mode": "",
        "contract": "loopcontract.yml",
        "artifacts": "/tmp/arts",
        "pr": "",
        "head-sha": "",
        "base-sha": "",
        "bot-login": "github-actions[bot]",
        "token": "ghs_secret_token",
    }
    values.update({k.replace("_", "-"): v for k, v in inputs.items()})
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path), "GITHUB_TOKEN": "ambient"}
    for name, expression in step["env"].items():
        (input_name,) = re.findall(r"^\$\{\{ inputs\.([\w-]+) \}\}$", expression)
        env[name] = values[input_name]
    dump = tmp_path / "call.json"
    env["DUMP"] = str(dump)
    fake = tmp_path / "loop-contract-venv" / "bin" / "loop-contract"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "keep = ('LOOP_CONTRACT_TOKEN', 'GITHUB_TOKEN', 'LOOP_CONTRACT_BOT_LOGIN')\n"
        "env = {k: v for k, v in os.environ.items() if k in keep}\n"
        "json.dump({'argv': sys.argv[1:], 'env': env}, open(os.environ['DUMP'], 'w'))\n"
    )
    fake.chmod(0o755)
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    return proc.returncode, json.loads(dump.read_text()) if dump.exists() else None


def test_plan_mode_gets_the_token_and_valid_arguments(tmp_path: Path) -> None:
    code, call = run_action_script(tmp_path, mode="plan")
    assert code == 0 and call is not None
    assert call["argv"] == ["github", "plan", "--contract", "loopcontract.yml"]
    assert call["env"]["LOOP_CONTRACT_TOKEN"] == "ghs_secret_token"
    assert call["env"]["LOOP_CONTRACT_BOT_LOGIN"] == "github-actions[bot]"
    args = build_parser().parse_args(call["argv"])
    assert args.mode == "plan" and args.contract == "loopcontract.yml"


def test_verify_mode_gets_no_token_at_all(tmp_path: Path) -> None:
    code, call = run_action_script(
        tmp_path, mode="verify", pr="7", head_sha=SHA, base_sha=BASE, artifacts="/tmp/out"
    )
    assert code == 0 and call is not None
    assert "LOOP_CONTRACT_TOKEN" not in call["env"]
    assert "GITHUB_TOKEN" not in call["env"]  # not even one the runner had set
    args = build_parser().parse_args(call["argv"])
    assert (args.mode, args.pr, args.head_sha, args.base_sha) == ("verify", 7, SHA, BASE)
    assert args.out == "/tmp/out"


def test_publish_mode_reads_the_artifact_folder(tmp_path: Path) -> None:
    code, call = run_action_script(tmp_path, mode="publish", artifacts="/tmp/dl", bot_login="bot")
    assert code == 0 and call is not None
    assert call["env"]["LOOP_CONTRACT_TOKEN"] == "ghs_secret_token"
    assert call["env"]["LOOP_CONTRACT_BOT_LOGIN"] == "bot"
    args = build_parser().parse_args(call["argv"])
    assert (args.mode, args.artifacts) == ("publish", "/tmp/dl")


@pytest.mark.parametrize(("pr", "expected"), [("", None), ("9", 9)])
def test_gate_mode_takes_an_optional_pull_request(
    tmp_path: Path, pr: str, expected: int | None
) -> None:
    code, call = run_action_script(tmp_path, mode="gate", pr=pr)
    assert code == 0 and call is not None
    args = build_parser().parse_args(call["argv"])
    assert (args.mode, args.pr) == ("gate", expected)


def test_an_unknown_mode_stops_before_running_anything(tmp_path: Path) -> None:
    code, call = run_action_script(tmp_path, mode="deploy")
    assert code == 2 and call is None


def test_input_values_are_never_interpreted_by_the_shell(tmp_path: Path) -> None:
    hostile = 'x.yml"; touch pwned; echo "$(touch pwned2)'
    code, call = run_action_script(tmp_path, mode="plan", contract=hostile)
    assert code == 0 and call is not None
    assert call["argv"][-1] == hostile
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


# --------------------------------------------------------------------------- external linters


def tool(name: str, package: str) -> str:
    """Path of an installed command-line tool, or skip (fail under REQUIRE_TOOLS)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        reason = f"{name} is not installed (pip install {package})"
        if os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{reason} and LOOP_CONTRACT_REQUIRE_TOOLS=1")
        pytest.skip(f"{reason}; set LOOP_CONTRACT_REQUIRE_TOOLS=1 to make this a failure")
    return found


def zizmor_findings(*paths: Path, ignores: bool = True, cwd: Path = ROOT) -> list[dict[str, Any]]:
    cmd = [tool("zizmor", "zizmor"), "--offline", "--format", "json", "--no-exit-codes"]
    if not ignores:
        cmd.append("--no-ignores")
    proc = subprocess.run(
        [*cmd, *(str(p.relative_to(cwd)) for p in paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout)
    return findings


def describe(finding: dict[str, Any]) -> tuple[str, str, str, str]:
    """(audit, severity, file, the flagged YAML: the first line of each location, joined)."""
    locations = finding["locations"]
    path = locations[0]["symbolic"]["key"]["Local"]["verbatim_path"]
    features = " | ".join(loc["concrete"]["feature"].splitlines()[0] for loc in locations)
    return finding["ident"], finding["determinations"]["severity"], path, features


def test_zizmor_finds_a_planted_injection(tmp_path: Path) -> None:
    """The clean results below mean something: the same invocation flags a bad workflow."""
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    idents = {f["ident"] for f in zizmor_findings(bad, cwd=tmp_path)}
    assert {"template-injection", "dangerous-triggers", "unpinned-uses"} <= idents


def test_zizmor_reports_nothing_on_our_workflows_and_action() -> None:
    assert [describe(f) for f in zizmor_findings(*OURS, ACTION)] == []


def test_zizmor_ci_invocation_is_clean() -> None:
    """What .ci/run runs: the plain text mode on the workflows folder, exit code 0."""
    proc = subprocess.run(
        [tool("zizmor", "zizmor"), "--offline", ".github/workflows"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_zizmor_suppression_is_one_we_argued_for() -> None:
    """Ignore comments hide two findings only: workflow_run itself, and `./action` (in verify
    the base commit's copy)."""
    for finding in zizmor_findings(*OURS, ACTION, ignores=False):
        ident, severity, path, feature = describe(finding)
        assert finding["ignored"] is True, (ident, path)
        if severity in ("Medium", "High"):
            assert (ident, path.endswith(PUBLISH)) == ("dangerous-triggers", True)
            assert "workflow_run" in feature
        else:
            assert ident == "self-repository", (ident, feature)
            assert "./action" in feature or f"./{VERIFIER}/action" in feature, feature


@pytest.mark.parametrize(
    ("schema", "paths"),
    [("vendor.github-workflows", OURS), ("vendor.github-actions", [ACTION])],
    ids=["workflows", "action"],
)
def test_check_jsonschema_accepts_them(schema: str, paths: list[Path]) -> None:
    proc = subprocess.run(
        [
            tool("check-jsonschema", "check-jsonschema"),
            "--builtin-schema",
            schema,
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_publish_uploads_the_actions_sarif_to_code_scanning() -> None:
    """The SARIF comes from the action's publish mode (built from the accepted verdict), is
    filed under the candidate's pull request, and only the publish job may upload it."""
    document = load(EXAMPLES / PUBLISH)
    (upload,) = by_uses(document, "github/codeql-action/upload-sarif@")
    assert re.fullmatch(r"github/codeql-action/upload-sarif@[0-9a-f]{40}", upload["uses"])
    assert upload["if"] == "steps.publish.outputs.sarif != ''"
    assert upload["with"] == {
        "sarif_file": "${{ steps.publish.outputs.sarif }}",
        "ref": "${{ steps.publish.outputs.sarif-ref }}",
        "sha": "${{ steps.publish.outputs.sarif-sha }}",
        "category": "loop-contract",
    }
    holders = [n for n, job in document["jobs"].items() if "security-events" in job["permissions"]]
    assert holders == ["publish"]
    action = load(ACTION)
    assert {"sarif", "sarif-ref", "sarif-sha"} <= set(action["outputs"])
