"""The contest demo (examples/contest): its project, its scripted seats and judges, for real.

Every test copies the project into a fresh git repository, runs the seat and judge programs
as subprocesses with the commands the contract names (placeholders filled in the way the seat
protocol fills them), and runs pytest or the real verifier on what the seats wrote. Nothing
here stands in for the programs under test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_loopcontract.contest.lessons.learn import lesson_from_verdict
from pytest_loopcontract.contest.lessons.prompt import prompt_block
from pytest_loopcontract.contest.matrix import score_matrix
from pytest_loopcontract.contest.matrix_model import Cell
from pytest_loopcontract.contest.packets import CandidateView, JudgeBrief, build_packet
from pytest_loopcontract.contest.prompting import contest_prompt, retry_notes
from pytest_loopcontract.contract.model import Contract, JudgedSettings, load_contract
from pytest_loopcontract.idsets import unpack_ids
from testing.repos import ROOT, assert_valid_verdict, git, init_repo, run_cli

CONTEST = ROOT / "examples" / "contest"
SEATS = ("alpha", "beta", "gamma")
STYLES = {"alpha": "deque", "beta": "ring", "gamma": "resync"}
ROWS = ["question_fidelity", "completeness", "evidence", "test_agreement"]
TARGET = "rolling/samplers.py"
NAIVE_VERDICT: dict[str, Any] = {
    "verdict": "fail",
    "gates": {
        "hard": [
            {"id": "acceptance", "kind": "acceptance", "status": "pass"},
            {"id": "no-regressions", "kind": "pass_to_pass", "status": "pass"},
        ],
        "measured": [
            {
                "id": "tick-arithmetic",
                "status": "fail",
                "metric": "metric.ops_per_tick",
                "observed": 50.3875,
                "op": "<=",
                "threshold": 4.0,
                "unit": "ops",
            }
        ],
    },
    "tamper": {"detected": False, "findings": []},
    "reasons": [{"code": "measured_gate_failed", "message": "tick-arithmetic"}],
}
"""The part of the naive candidate's verdict that lessons and retry notes are built from."""
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["scores"],
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["candidate", "row", "score", "confidence", "evidence", "rationale"],
                "properties": {
                    "candidate": {"type": "string", "minLength": 1},
                    "row": {"enum": ROWS},
                    "score": {"type": "number", "minimum": 0, "maximum": 10},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "evidence": {"type": "string", "minLength": 1},
                    "rationale": {"type": "string", "minLength": 1, "maxLength": 300},
                },
            },
        }
    },
}


def reply_schema() -> dict[str, Any]:
    """The package's judge-reply schema once it ships, else the spec's reply format."""
    shipped = ROOT / "pytest_loopcontract" / "schemas" / "judge_reply.schema.json"
    if shipped.is_file():
        loaded: dict[str, Any] = json.loads(shipped.read_text("utf-8"))
        return loaded
    return REPLY_SCHEMA


def load_prepare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lc_contest_prepare", CONTEST / "prepare.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PREPARE = load_prepare()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The demo project at its base commit, contract tokens filled in."""
    dest = tmp_path / "rolling-mean"
    shutil.copytree(
        CONTEST / "project", dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")
    )
    contract = dest / "loopcontract.yml"
    contract.write_text(PREPARE.substitute(contract.read_text("utf-8")), "utf-8")
    return init_repo(dest)


def contract_of(repo: Path) -> Contract:
    return load_contract(repo / "loopcontract.yml")


def seat(contract: Contract, name: str) -> Mapping[str, Any]:
    return next(s for s in contract.seats if s["name"] == name)


def fill(argv: list[str], **values: str) -> list[str]:
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def worktree(repo: Path, name: str) -> Path:
    path = repo.parent / f"wt-{name}"
    git(repo, "worktree", "add", "-q", "--detach", str(path), "HEAD")
    return path


def run_seat(
    repo: Path, name: str, prompt: str, *, tag: str = ""
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Run seat ``name``'s generate command in a new worktree, as the orchestrator would."""
    contract = contract_of(repo)
    tag = tag or name
    workdir = worktree(repo, tag)
    prompt_file = repo.parent / f"prompt-{tag}.md"
    prompt_file.write_text(prompt, "utf-8")
    report = repo.parent / f"report-{tag}.json"
    argv = fill(
        list(seat(contract, name)["generate"]),
        prompt_file=str(prompt_file),
        workdir=str(workdir),
        report_file=str(report),
    )
    env = {
        **os.environ,
        "LOOP_CONTRACT_REPORT": str(report),
        "LOOP_CONTRACT_ROLE": "candidate",
        "LOOP_CONTRACT_SEAT": name,
    }
    proc = subprocess.run(
        argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text("utf-8")) == {"tokens": 0, "cost_usd": 0.0}
    assert "scripted seat" in proc.stdout and "not a model" in proc.stdout
    return workdir, proc


def plain_prompt(repo: Path) -> str:
    """Attempt 1 of a first run: the contract's goal, DoD and gates (with the metric's name)."""
    return contest_prompt(contract_of(repo), attempt=1)


def lesson_prompt(repo: Path, verdict: Mapping[str, Any] = NAIVE_VERDICT) -> str:
    """A later run: the lessons block carries the rule learned from the naive candidate."""
    contract = contract_of(repo)
    lesson = lesson_from_verdict(
        verdict,
        domain=contract.contest.domain,
        tags=contract.contest.tags,
        contract_id=contract.id,
        run_id="run-1",
        seat="alpha",
        now="2026-11-29T21:30:00Z",
    )
    assert lesson is not None
    block = prompt_block([lesson], cap_chars=contract.contest.lesson_chars)
    assert block.included == 1
    return contest_prompt(contract, attempt=1, lessons_block=block.text)


def retry_prompt(repo: Path) -> str:
    """Attempt 2 of the same run: that seat's failed gates, as the verifier measured them."""
    return contest_prompt(contract_of(repo), attempt=2, retry=retry_notes(NAIVE_VERDICT))


def in_process_verdict(workdir: Path) -> dict[str, Any]:
    """``pytest --loop-contract`` in ``workdir`` (the plugin loads through its entry point)."""
    out = workdir.parent / f"verdict-{workdir.name}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--loop-contract",
            "--loop-contract-verdict",
            str(out),
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.is_file(), proc.stdout + proc.stderr
    verdict: dict[str, Any] = json.loads(out.read_text("utf-8"))
    assert_valid_verdict(verdict)
    return verdict


def gate(verdict: Mapping[str, Any], kind: str, gate_id: str) -> Mapping[str, Any]:
    return next(g for g in verdict["gates"][kind] if g["id"] == gate_id)


def commit_all(workdir: Path, message: str) -> str:
    git(workdir, "add", "-A")
    git(workdir, "commit", "-q", "-m", message)
    return git(workdir, "rev-parse", "HEAD").strip()


# --- the project and its contract ------------------------------------------------------------


def test_contract_is_valid_and_names_three_scripted_seats(repo: Path) -> None:
    result = run_cli(repo, "check", "-c", "loopcontract.yml")
    assert result.returncode == 0, result.stdout + result.stderr

    contract = contract_of(repo)
    assert contract.id == "rolling-mean" and contract.mode == "fix"
    assert contract.boundaries.allow == ("rolling/**",)
    assert contract.judged == JudgedSettings(min_score=6, spread_threshold=4, dissent_threshold=4)
    assert (contract.bracket.cut, contract.bracket.final) == (1, 2)
    assert contract.contest.domain == "python.numeric.rolling"
    (tick,) = [g for g in contract.measured_gates if g.id == "tick-arithmetic"]
    assert (tick.metric, tick.op, tick.threshold, tick.aggregate) == (
        "metric.ops_per_tick",
        "<=",
        4,
        "max",
    )
    assert [s["name"] for s in contract.seats] == list(SEATS)
    assert len({s["family"] for s in contract.seats}) == 3
    for entry in contract.seats:
        assert entry["scripted"] is True
        for command in (entry["generate"], entry["judge"]):
            assert not any("@" in arg for arg in command), command
            assert command[0] == sys.executable
            assert Path(command[1]).is_absolute() and Path(command[1]).is_file()


def test_only_the_verifier_feedback_switches_a_seat_to_the_incremental_version(
    repo: Path,
) -> None:
    plain = plain_prompt(repo)
    assert "metric.ops_per_tick <= 4" in plain  # the gate line alone must not count as a lesson
    for tag, prompt, learned in (
        ("plain", plain, False),
        ("lesson", lesson_prompt(repo), True),
        ("retry", retry_prompt(repo), True),
    ):
        _, proc = run_seat(repo, "beta", prompt, tag=tag)
        assert ("incremental (ring)" in proc.stdout) is learned, (tag, proc.stdout)


def test_substitute_quotes_paths_for_single_quoted_yaml(tmp_path: Path) -> None:
    odd = tmp_path / "it's a dir"
    text = PREPARE.substitute(
        (CONTEST / "project" / "loopcontract.yml").read_text("utf-8"),
        contest_dir=odd,
        python="/opt/py thon/bin/python3",
    )
    seats = yaml.safe_load(text)["seats"]
    assert seats[0]["generate"][:2] == ["/opt/py thon/bin/python3", f"{odd}/seats/seat.py"]
    assert seats[2]["judge"][1] == f"{odd}/judges/judge.py"


def test_prepare_script_makes_a_clean_committed_repository(tmp_path: Path) -> None:
    dest = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, str(CONTEST / "prepare.py"), str(dest)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == dest
    assert git(dest, "status", "--porcelain") == ""
    assert "@CONTEST@" not in git(dest, "show", "HEAD:loopcontract.yml")
    assert run_cli(dest, "check").returncode == 0


def test_baseline_is_adopted_in_fix_mode(repo: Path) -> None:
    result = run_cli(repo, "baseline", "-c", "loopcontract.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    baseline = json.loads((repo / ".loop-contract" / "baseline.json").read_text("utf-8"))
    assert baseline["mode"] == "fix"
    assert "tests/test_tick_cost.py::test_arithmetic_per_tick" in baseline["fail_to_pass"]
    assert "tests/test_rolling_mean.py::test_negative_values" in baseline["fail_to_pass"]
    pass_to_pass = unpack_ids(baseline["pass_to_pass"])
    assert "tests/test_exponential.py::test_each_value_counts_alpha" in pass_to_pass
    assert not any("window_must_be" in n for n in baseline["fail_to_pass"])


def test_base_commit_fails_acceptance(repo: Path) -> None:
    verdict = in_process_verdict(repo)
    assert verdict["verdict"] == "fail"
    assert gate(verdict, "hard", "acceptance")["status"] == "fail"
    assert gate(verdict, "measured", "tick-arithmetic")["observed"] is None


# --- the seats -------------------------------------------------------------------------------


def test_without_the_lesson_every_seat_writes_the_same_naive_version(repo: Path) -> None:
    prompt = plain_prompt(repo)
    outputs = {}
    for name in SEATS:
        workdir, proc = run_seat(repo, name, prompt)
        assert "naive" in proc.stdout
        assert git(workdir, "status", "--porcelain").split() == ["M", TARGET]
        outputs[name] = (workdir / TARGET).read_text("utf-8")
    assert len(set(outputs.values())) == 1

    verdict = in_process_verdict(repo.parent / "wt-alpha")
    assert gate(verdict, "hard", "acceptance")["status"] == "pass"
    assert gate(verdict, "hard", "no-regressions")["status"] == "pass"
    tick = gate(verdict, "measured", "tick-arithmetic")
    assert tick["status"] == "fail"
    assert 45 < tick["observed"] < 55  # ~50 adds and a division a tick, window of 50

    # The lesson this very verdict teaches is what switches a seat over.
    _, proc = run_seat(repo, "gamma", lesson_prompt(repo, verdict), tag="learned")
    assert "incremental (resync)" in proc.stdout


def test_with_the_lesson_each_seat_writes_its_own_version(repo: Path) -> None:
    prompt = lesson_prompt(repo)
    outputs = {}
    for name in SEATS:
        workdir, proc = run_seat(repo, name, prompt)
        assert f"incremental ({STYLES[name]})" in proc.stdout
        outputs[name] = (workdir / TARGET).read_text("utf-8")
    assert len(set(outputs.values())) == 3


@pytest.mark.parametrize("name", SEATS)
def test_lesson_version_passes_the_tick_arithmetic_gate(repo: Path, name: str) -> None:
    workdir, _ = run_seat(repo, name, lesson_prompt(repo))
    verdict = in_process_verdict(workdir)
    assert gate(verdict, "hard", "acceptance")["status"] == "pass"
    assert gate(verdict, "hard", "no-regressions")["status"] == "pass"
    tick = gate(verdict, "measured", "tick-arithmetic")
    assert tick["status"] == "pass"
    assert 2 <= tick["observed"] <= 4
    assert verdict["summary"]["failed"] == 0


def test_isolated_verifier_fails_naive_and_passes_every_lesson_version(repo: Path) -> None:
    baseline = run_cli(repo, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    candidates = {"naive": run_seat(repo, "alpha", plain_prompt(repo), tag="naive")[0]}
    for name in SEATS:
        candidates[name] = run_seat(repo, name, lesson_prompt(repo))[0]

    observed = {}
    for label, workdir in candidates.items():
        sha = commit_all(workdir, label)
        result = run_cli(repo, "verify", "--candidate", sha, "--json")
        verdict = result.json()
        assert_valid_verdict(verdict)
        assert verdict["trust"] == "isolated"
        assert not verdict["tamper"]["detected"], verdict["tamper"]
        assert all(g["status"] == "pass" for g in verdict["gates"]["hard"]), verdict["gates"]
        assert gate(verdict, "measured", "coverage")["status"] == "pass"
        observed[label] = gate(verdict, "measured", "tick-arithmetic")["observed"]
        if label == "naive":
            assert result.returncode == 20 and verdict["verdict"] == "fail"
            assert [r["code"] for r in verdict["reasons"]] == ["measured_gate_failed"]
        else:
            assert result.returncode == 0 and verdict["verdict"] == "pass", verdict["reasons"]
    assert observed["naive"] > 45
    assert all(observed[name] <= 4 for name in SEATS)


# --- the judges ------------------------------------------------------------------------------


def gates_with(ops_per_tick: float) -> dict[str, Any]:
    return {
        "hard": [
            {"id": "acceptance", "status": "pass"},
            {"id": "no-regressions", "status": "pass"},
        ],
        "measured": [
            {
                "id": "tick-arithmetic",
                "status": "pass" if ops_per_tick <= 4 else "fail",
                "metric": "metric.ops_per_tick",
                "observed": ops_per_tick,
                "op": "<=",
                "threshold": 4,
                "unit": "ops",
            },
            {
                "id": "coverage",
                "status": "pass",
                "metric": "coverage.percent",
                "observed": 100.0,
                "op": ">=",
                "threshold": 90,
                "unit": "%",
            },
        ],
    }


OPS = {"alpha": 2.975, "beta": 2.975, "gamma": 3.15}


def seat_diffs(repo: Path) -> dict[str, str]:
    """Each seat's lesson version as the unified diff a packet carries."""
    diffs = {}
    for name in SEATS:
        workdir, _ = run_seat(repo, name, lesson_prompt(repo))
        diffs[name] = git(workdir, "diff", "HEAD")
    return diffs


def packet(
    candidates: Mapping[str, tuple[str, dict[str, Any]]], *, repair: Any = None
) -> dict[str, Any]:
    return {
        "kind": "loop-contract.judge-packet",
        "version": 1,
        "task": {
            "goal": "Implement RollingMean.",
            "mode": "fix",
            "dod": [{"id": "correct-mean", "text": "value is the mean of the window."}],
        },
        "rows": ROWS,
        "candidates": [
            {
                "label": label,
                "diff": diff,
                "gates": gates,
                "tests": {"passed": 19, "failed": 0, "skipped": 0},
            }
            for label, (diff, gates) in candidates.items()
        ],
        "instructions": "Score every candidate on every row.",
        "reply_schema": reply_schema(),
        "repair": repair,
    }


def run_judge(
    repo: Path, name: str, document: Mapping[str, Any]
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run seat ``name``'s judge command in an empty directory, as the orchestrator would."""
    scratch = Path(tempfile.mkdtemp(prefix=f"judge-{name}-", dir=repo.parent))
    packet_file = scratch.with_suffix(".json")
    packet_file.write_text(json.dumps(document), "utf-8")
    argv = fill(list(seat(contract_of(repo), name)["judge"]), packet_file=str(packet_file))
    env = {**os.environ, "LOOP_CONTRACT_ROLE": "judge", "LOOP_CONTRACT_SEAT": name}
    env.pop("LOOP_CONTRACT_REPORT", None)
    proc = subprocess.run(
        argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "scripted judge" in proc.stderr and "not a model" in proc.stderr
    assert list(scratch.iterdir()) == []
    reply: dict[str, Any] = json.loads(proc.stdout)
    return reply, proc


def check_reply(reply: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    jsonschema.validate(reply, reply_schema())
    labels = {c["label"]: c["diff"] for c in document["candidates"]}
    cells = {(s["candidate"], s["row"]) for s in reply["scores"]}
    assert len(cells) == len(reply["scores"]) == len(labels) * len(ROWS)
    assert cells == {(label, row) for label in labels for row in ROWS}
    for score in reply["scores"]:
        assert 0.6 <= score["confidence"] <= 0.9
        assert "\n" not in score["rationale"] and len(score["rationale"]) <= 300
        path = score["evidence"].split("::")[0].split(":")[0]
        assert f"b/{path}" in labels[score["candidate"]], score["evidence"]


def test_judge_replies_validate_and_are_deterministic(repo: Path) -> None:
    diffs = seat_diffs(repo)
    document = packet(
        {"A": (diffs["beta"], gates_with(2.975)), "B": (diffs["gamma"], gates_with(3.15))}
    )
    for judge in SEATS:
        first, _ = run_judge(repo, judge, document)
        check_reply(first, document)
        again, _ = run_judge(repo, judge, document)
        assert again == first


def test_judge_answers_a_repair_request_properly(repo: Path) -> None:
    diffs = seat_diffs(repo)
    candidates = {"A": (diffs["alpha"], gates_with(2.975))}
    plain = packet(candidates)
    repair = packet(
        candidates,
        repair={"error": "reply was not a JSON object", "previous_reply": "I think A is good"},
    )
    for judge in SEATS:
        answer, proc = run_judge(repo, judge, repair)
        check_reply(answer, repair)
        assert "repair" in proc.stderr
        assert answer == run_judge(repo, judge, plain)[0]


def test_judge_writes_a_zero_cost_report_when_asked(repo: Path, tmp_path: Path) -> None:
    document = packet({"A": ("", gates_with(3.0))})
    packet_file = tmp_path / "packet.json"
    packet_file.write_text(json.dumps(document), "utf-8")
    report = tmp_path / "judge-report.json"
    argv = fill(list(seat(contract_of(repo), "alpha")["judge"]), packet_file=str(packet_file))
    proc = subprocess.run(
        argv,
        cwd=tmp_path,
        env={**os.environ, "LOOP_CONTRACT_REPORT": str(report)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    jsonschema.validate(json.loads(proc.stdout), reply_schema())
    assert json.loads(report.read_text("utf-8")) == {"tokens": 0, "cost_usd": 0.0}


def test_judge_scores_a_gate_failure_below_the_pass_line(repo: Path) -> None:
    diffs = seat_diffs(repo)
    document = packet(
        {"A": (diffs["alpha"], gates_with(50.3875)), "B": (diffs["beta"], gates_with(2.975))}
    )
    for judge in SEATS:
        reply, _ = run_judge(repo, judge, document)
        check_reply(reply, document)
        failing = [s["score"] for s in reply["scores"] if s["candidate"] == "A"]
        passing = [s["score"] for s in reply["scores"] if s["candidate"] == "B"]
        assert max(failing) < 6 <= min(passing)


def test_judge_cites_a_test_the_diff_adds(repo: Path) -> None:
    diff = (
        "diff --git a/tests/test_extra.py b/tests/test_extra.py\n"
        "new file mode 100644\n--- /dev/null\n+++ b/tests/test_extra.py\n@@ -0,0 +1,2 @@\n"
        "+def test_big_window():\n+    assert True\n"
    )
    document = packet({"A": (diff, gates_with(3.0))})
    reply, _ = run_judge(repo, "gamma", document)
    check_reply(reply, document)
    evidence = {s["row"]: s["evidence"] for s in reply["scores"]}
    assert evidence["evidence"] == "tests/test_extra.py"


def test_in_run_two_every_candidate_passes_the_judged_gate(repo: Path) -> None:
    """Each judge gets the packet the engine builds (the other families' candidates, blind,
    scrubbed); the matrix passes all three, without escalation, with different scores."""
    contract = contract_of(repo)
    diffs = seat_diffs(repo)
    families = {s["name"]: s["family"] for s in contract.seats}
    views = [
        CandidateView(
            seat=name,
            family=families[name],
            diff=diffs[name],
            gates=gates_with(OPS[name]),
            tests={"passed": 19, "failed": 0, "skipped": 0},
        )
        for name in SEATS
    ]
    task = {
        "goal": contract.goal,
        "mode": contract.mode,
        "dod": [{"id": item.id, "text": item.text} for item in contract.dod],
    }
    cells = []
    for judge in SEATS:
        document, labels = build_packet(
            JudgeBrief(
                run_id="run-2",
                judge_seat=judge,
                judge_family=families[judge],
                task=task,
                candidates=views,
            )
        )
        assert sorted(labels.values()) == [name for name in SEATS if name != judge]
        reply, _ = run_judge(repo, judge, document)
        check_reply(reply, document)
        jsonschema.validate(reply, document["reply_schema"])
        cells += [
            Cell(
                seat=judge,
                family=families[judge],
                candidate=labels[s["candidate"]],
                row=s["row"],
                score=s["score"],
                confidence=s["confidence"],
                evidence=s["evidence"],
                rationale=s["rationale"],
            )
            for s in reply["scores"]
        ]
    assert min(c.score for c in cells) > contract.judged.min_score
    assert len({c.score for c in cells}) > 2
    result = score_matrix(
        cells,
        families,
        min_score=contract.judged.min_score,
        spread_threshold=contract.judged.spread_threshold,
        dissent_threshold=contract.judged.dissent_threshold,
    )
    assert result.passed == SEATS
    assert result.escalated == () and result.rerun_gates == ()
    overall = {name: result.candidates[name].overall for name in SEATS}
    assert len(set(overall.values())) == 3, overall
    assert not any(score.degraded for score in result.candidates.values())
