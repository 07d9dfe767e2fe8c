"""The governed loop end to end (issue 3): real git repositories, the real CLI in subprocesses,
the scripted stand-in agent (and a few tiny agents written here) as the agent command.

Nothing here asserts on wall-clock time: deadlines only keep a broken build from hanging.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record
from testing.loop_project import STATE, fast_contract, make_repo, write_agent
from testing.repos import ROOT, CLIResult, assert_valid_verdict, git, run_cli
from testing.verifier_project import contract as mini_contract
from testing.verifier_project import make_repo as make_mini

SCRIPTED = ROOT / "examples" / "agents" / "scripted_agent.py"
DEADLINE = 120.0  # seconds a helper waits for a subprocess event before failing the test

PROGRESS = re.compile(
    r"^\[loop\] iteration (?P<n>\d+)/(?P<cap>\d+|-)"
    r" · time [\d.]+(?:/[\d.]+)? min"
    r" · tokens \d+(?:/\d+)?"
    r" · \$[\d.]+(?:/\$[\d.]+)?"
    r" · gates (?P<passing>\d+)/(?P<total>\d+)"
    r" · (?P<verdict>pass|fail|error)$"
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def scripted(mode: str) -> list[str]:
    return [sys.executable, str(SCRIPTED), mode, "{prompt_file}"]


def loop(repo: Path, *args: str, timeout: float = 300) -> CLIResult:
    return run_cli(repo, "loop", *args, timeout=timeout)


def records(repo: Path, kind: str | None = None) -> list[Record]:
    found = History(repo / STATE).read()
    return [r for r in found.records if kind is None or r.kind == kind]


def stops(repo: Path) -> list[dict[str, Any]]:
    return [r.data for r in records(repo, "stop")]


def iterations(repo: Path) -> list[dict[str, Any]]:
    return [r.data for r in records(repo, "iteration")]


def progress_lines(stdout: str) -> list[re.Match[str]]:
    lines = [line for line in stdout.splitlines() if line.startswith("[loop] iteration ")]
    matches = [PROGRESS.match(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m is not None]


def verdict_on_disk(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo / STATE / "verdict.json").read_text("utf-8"))
    assert_valid_verdict(document)
    return document


def process_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _default_sigint() -> None:
    # A worker may run with SIGINT ignored; the loop must see Ctrl-C as a user would send it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Background:
    """``loop-contract loop ...`` running in the background, output to files."""

    def __init__(self, repo: Path, *args: str) -> None:
        self.out = repo.parent / f"bg-{os.getpid()}-{time.monotonic_ns()}.out"
        self.err = self.out.with_suffix(".err")
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pytest_loopcontract", "loop", *args],
                cwd=repo,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                preexec_fn=_default_sigint,
            )

    def wait(self) -> int:
        return self.proc.wait(timeout=DEADLINE)

    @property
    def stdout(self) -> str:
        return self.out.read_text("utf-8")

    @property
    def stderr(self) -> str:
        return self.err.read_text("utf-8")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def sleeper_agent(tmp_path: Path) -> tuple[Path, Path]:
    """Flails on turn 1; on the first later turn says it is ready (its pid) and sleeps; on any
    turn after that (a resumed one) applies the honest fix."""
    ready = tmp_path / "sleeper-ready"
    agent = write_agent(
        tmp_path,
        "sleeper",
        f"""
        turn = turn_of(Path(sys.argv[1]).read_text())
        ready = Path({str(ready)!r})
        if turn == 1:
            flail(turn)
        elif not ready.exists():
            say(ready, str(os.getpid()))
            time.sleep(600)
        else:
            fix()
        """,
    )
    return agent, ready


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """Pids of agents a test left behind (the loop was killed): killed at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- 1. stop reasons


def test_met_after_two_iterations(repo: Path) -> None:
    result = loop(repo, "--", *scripted("fix-on-turn-2"))
    assert result.returncode == 0, result.stdout + result.stderr
    done = iterations(repo)
    assert [i["n"] for i in done] == [1, 2]
    assert [i["verdict"] for i in done] == ["fail", "pass"]
    assert stops(repo) == [
        {"reason": "met", "exit_code": 0, "decision": "done", "message": "contract met"}
    ]
    lines = progress_lines(result.stdout)
    assert [(m["n"], m["cap"], m["verdict"]) for m in lines] == [
        ("1", "4", "fail"),
        ("2", "4", "pass"),
    ]
    assert lines[-1]["passing"] == lines[-1]["total"] == "2"
    verdict = verdict_on_disk(repo)
    assert verdict["loop"] == {"iteration": 2, "decision": "done", "stop_reason": "met"}
    # the prompt of the last turn: the goal, what was still failing, and the turn
    prompt = (repo / STATE / "prompt.md").read_text("utf-8")
    goal = yaml.safe_load((repo / "loopcontract.yml").read_text())["goal"]
    assert "(turn 2)" in prompt
    assert goal in prompt
    assert "failed: tests/test_slug.py::test_accents_are_transliterated" in prompt
    assert History(repo / STATE).read().ok


def test_iteration_cap_stops_with_23(repo: Path) -> None:
    result = loop(repo, "--", *scripted("flail"))
    assert result.returncode == 23, result.stdout + result.stderr
    assert [i["n"] for i in iterations(repo)] == [1, 2, 3, 4]
    assert [s["reason"] for s in stops(repo)] == ["iteration_cap"]
    assert stops(repo)[0]["exit_code"] == 23
    assert "iteration cap reached (4/4)" in result.stdout
    assert len(progress_lines(result.stdout)) == 4
    assert verdict_on_disk(repo)["loop"]["decision"] == "stop"


def test_budget_stops_with_21_and_records_the_trip(repo: Path) -> None:
    result = loop(repo, "--", *scripted("spender"))
    assert result.returncode == 21, result.stdout + result.stderr
    spends = [r.data for r in records(repo, "spend")]
    assert [s["usd"] for s in spends] == [0.4, 0.4, 0.4]
    assert all(s["tokens"] == 1500 for s in spends)
    tripped = [r.data for r in records(repo, "budget_tripped")]
    assert len(tripped) == 1
    assert tripped[0]["which"] == "usd"
    assert tripped[0]["cap"] == 1.0
    assert tripped[0]["observed"] == pytest.approx(1.2)
    assert [s["reason"] for s in stops(repo)] == ["budget"]
    assert stops(repo)[0]["exit_code"] == 21
    assert len(iterations(repo)) == 3
    lines = progress_lines(result.stdout)
    assert "$0.40/$1.00" in lines[0].group(0)
    assert "tokens 4500" in lines[-1].group(0)


def test_no_progress_stops_with_22_after_three_identical_keys(repo: Path) -> None:
    result = loop(repo, "--", *scripted("noop"))
    assert result.returncode == 22, result.stdout + result.stderr
    done = iterations(repo)
    assert len(done) == 3
    assert len({i["progress_key"] for i in done}) == 1
    assert all(i["empty_diff"] for i in done)
    assert "diff against the baseline is empty" in result.stdout
    assert [s["reason"] for s in stops(repo)] == ["no_progress"]
    assert "3 iterations in a row" in stops(repo)[0]["message"]


def test_oscillation_stops_with_22_within_six_iterations(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, budget="{iterations: 10}")
    agent = write_agent(
        tmp_path,
        "oscillator",
        """
        turn = turn_of(Path(sys.argv[1]).read_text())
        text = re.sub(r"\\n# variant .\\n$", "", SLUG.read_text())
        SLUG.write_text(text + ("\\n# variant A\\n" if turn % 2 else "\\n# variant B\\n"))
        """,
    )
    result = loop(repo, "--", sys.executable, str(agent), "{prompt_file}")
    assert result.returncode == 22, result.stdout + result.stderr
    done = iterations(repo)
    assert len(done) <= 6
    keys = [i["progress_key"] for i in done]
    assert len(set(keys)) == 2
    assert keys[0::2] == [keys[0]] * len(keys[0::2])
    assert keys[1::2] == [keys[1]] * len(keys[1::2])
    assert [s["reason"] for s in stops(repo)] == ["no_progress"]
    assert "oscillating" in stops(repo)[0]["message"]


def test_checkpoint_waits_for_a_named_person_and_resume_goes_on(repo: Path) -> None:
    result = loop(repo, "--", *scripted("leaker"))
    assert result.returncode == 24, result.stdout + result.stderr
    assert stops(repo)[-1]["reason"] == "checkpoint"
    assert stops(repo)[-1]["decision"] == "await_human"
    listed = run_cli(repo, "checkpoint", "list", "--json")
    assert listed.returncode == 0
    [first] = listed.json()
    assert first["status"] == "pending"
    assert first["kind"] == "diff"
    assert first["id"] in run_cli(repo, "checkpoint", "list").stdout

    # status says what waits, while it waits
    status = run_cli(repo, "status", "--json")
    assert status.returncode == 0, status.stderr
    doc = status.json()
    assert doc["loop"]["status"] == "awaiting_human"
    assert [cp["id"] for cp in doc["checkpoints_pending"]] == [first["id"]]
    assert first["id"] in run_cli(repo, "status").stdout

    # a resume without a decision stops again at once, without an agent turn
    again = loop(repo, "--resume")
    assert again.returncode == 24
    assert len(iterations(repo)) == 1

    resolved = run_cli(repo, "checkpoint", "resolve", first["id"], "--by", "alice")
    assert resolved.returncode == 0, resolved.stderr
    assert "approved by alice" in resolved.stdout
    second = loop(repo, "--resume")
    # the loop went on: the agent took turn 2 (and leaked again, a new request)
    assert [i["n"] for i in iterations(repo)] == [1, 2]
    assert "(turn 2)" in (repo / STATE / "prompt.md").read_text()
    assert f"{first['id']} approved by alice" in (repo / STATE / "prompt.md").read_text()
    assert second.returncode == 24, second.stdout + second.stderr
    [pending] = run_cli(repo, "checkpoint", "list", "--json").json()
    assert pending["id"] != first["id"]

    denied = run_cli(repo, "checkpoint", "resolve", pending["id"], "--by", "bob", "--deny")
    assert denied.returncode == 0, denied.stderr
    loop(repo, "--resume")
    prompt = (repo / STATE / "prompt.md").read_text()
    assert "(turn 3)" in prompt
    assert f"{pending['id']} DENIED by bob" in prompt
    assert History(repo / STATE).read().ok


def test_tampering_stops_with_25(repo: Path) -> None:
    result = loop(repo, "--", *scripted("cheat"))
    assert result.returncode == 25, result.stdout + result.stderr
    assert [s["reason"] for s in stops(repo)] == ["tamper"]
    assert len(iterations(repo)) == 1
    verdict = verdict_on_disk(repo)
    assert verdict["tamper"]["detected"]
    assert verdict["loop"]["stop_reason"] == "tamper"


@pytest.mark.parametrize("mode", ["fix-on-turn-2", "fix-on-turn-1"])
def test_stop_rule_on_a_touched_path_waits_for_a_person(tmp_path: Path, mode: str) -> None:
    """Touching a guarded path stops the loop for a person, even when that turn's verdict
    passes; the person's approval stands for the rest of the loop."""
    repo = make_repo(tmp_path, extra='stop_when: {paths_touched: ["src/textkit/slug.py"]}\n')
    result = loop(repo, "--", *scripted(mode))
    assert result.returncode == 24, result.stdout + result.stderr
    [stop] = stops(repo)
    assert stop["reason"] == "checkpoint"
    assert stop["decision"] == "await_human"
    assert "src/textkit/slug.py" in stop["message"]
    [request] = run_cli(repo, "checkpoint", "list", "--json").json()
    assert request["kind"] == "stop_rule"
    assert request["id"] in stop["message"]
    assert verdict_on_disk(repo)["loop"]["decision"] == "await_human"

    assert run_cli(repo, "checkpoint", "resolve", request["id"], "--by", "alice").returncode == 0
    resumed = loop(repo, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert stops(repo)[-1]["reason"] == "met"
    assert [i["n"] for i in iterations(repo)] == [1, 2]


# --------------------------------------------------------------------------- 2. output, prompt


def test_prompt_placeholder_carries_goal_failing_tests_and_turn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    seen = tmp_path / "prompts"
    seen.mkdir()
    agent = write_agent(
        tmp_path,
        "placeholder",
        f"""
        prompt = sys.argv[1]
        turn = turn_of(prompt)
        Path({str(seen)!r}, f"turn-{{turn}}.md").write_text(prompt)
        if turn >= 2:
            fix()
        """,
    )
    result = loop(repo, "--", sys.executable, str(agent), "{prompt}")
    assert result.returncode == 0, result.stdout + result.stderr
    goal = yaml.safe_load((repo / "loopcontract.yml").read_text())["goal"]
    first = (seen / "turn-1.md").read_text()
    second = (seen / "turn-2.md").read_text()
    assert "(turn 1)" in first
    assert "(turn 2)" in second
    for prompt in (first, second):
        assert goal in prompt
        assert "tests/test_slug.py::test_accents_are_transliterated" in prompt
    # turn 2 is told what the verifier found, in its words
    assert "failed: tests/test_slug.py::test_special_letters" in second
    assert "What the verifier found last turn" in second
    assert second == (repo / STATE / "prompt.md").read_text()
    assert len(progress_lines(result.stdout)) == 2


def test_prompt_goes_to_stdin_without_a_placeholder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    seen = tmp_path / "stdin-prompt.md"
    agent = write_agent(
        tmp_path,
        "reads_stdin",
        f"""
        prompt = sys.stdin.read()
        Path({str(seen)!r}).write_text(prompt)
        if "(turn 1)" in prompt:
            fix()
        """,
    )
    result = loop(repo, "--", sys.executable, str(agent))
    assert result.returncode == 0, result.stdout + result.stderr
    prompt = seen.read_text()
    assert "(turn 1)" in prompt
    assert prompt == (repo / STATE / "prompt.md").read_text()
    assert [i["n"] for i in iterations(repo)] == [1]


# --------------------------------------------------------------------------- 3. resumability


def test_kill_9_mid_turn_then_resume_finishes(
    tmp_path: Path, repo: Path, reaper: list[int]
) -> None:
    agent, ready = sleeper_agent(tmp_path)
    command = [sys.executable, str(agent), "{prompt_file}"]
    running = Background(repo, "--", *command)
    try:
        wait_for(ready.exists, "the agent's second turn")
        reaper.append(int(ready.read_text()))
        running.proc.send_signal(signal.SIGKILL)
        assert running.wait() == -signal.SIGKILL
    finally:
        running.stop()
    assert [i["n"] for i in iterations(repo)] == [1]
    assert stops(repo) == []
    status = run_cli(repo, "status", "--json").json()
    assert status["loop"]["status"] == "interrupted"  # recorded running, nobody holds the lock
    assert status["loop"]["lock_holder"] is None
    # a killed loop's clock stands at the last thing it recorded, however much later it is
    # read, and a person's record written after the kill does not move it
    written = History(repo / STATE).read().records
    start, last = next(r for r in written if r.kind == "loop_started"), written[-1]
    assert start.mono is not None and last.mono is not None
    time.sleep(max(0.0, 2.0 - (time.monotonic() - last.mono)))
    History(repo / STATE).append("paused", {"by": "someone", "reason": None})
    History(repo / STATE).append("unpaused", {"by": "someone"})
    later = run_cli(repo, "status", "--json").json()
    assert later["budget"]["minutes"]["used"] == round((last.mono - start.mono) / 60, 2)

    # a new loop is refused while this one is recorded running
    fresh = loop(repo, "--", *command)
    assert fresh.returncode != 0
    assert "--resume" in fresh.stderr

    resumed = loop(repo, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    found = History(repo / STATE).read()
    assert found.ok, found.messages()
    assert [i["n"] for i in iterations(repo)] == [1, 2]
    assert [r.kind for r in found.records if r.kind in ("loop_started", "resumed", "stop")] == [
        "loop_started",
        "resumed",
        "stop",
    ]
    assert stops(repo)[-1]["reason"] == "met"


def test_ctrl_c_records_interrupted_exits_130_and_resume_works(
    tmp_path: Path, repo: Path, reaper: list[int]
) -> None:
    agent, ready = sleeper_agent(tmp_path)
    running = Background(repo, "--", sys.executable, str(agent), "{prompt_file}")
    try:
        wait_for(ready.exists, "the agent's second turn")
        agent_pid = int(ready.read_text())
        reaper.append(agent_pid)
        running.proc.send_signal(signal.SIGINT)
        assert running.wait() == 130, running.stdout + running.stderr
    finally:
        running.stop()
    [interrupted] = [r.data for r in records(repo, "interrupted")]
    assert interrupted == {"iteration": 2, "phase": "agent"}
    assert "--resume" in running.stdout
    wait_for(lambda: process_gone(agent_pid), "the interrupted agent to be killed")

    resumed = loop(repo, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert [i["n"] for i in iterations(repo)] == [1, 2]
    assert History(repo / STATE).read().ok


def test_a_second_loop_is_refused_and_told_who_holds_the_lock(
    tmp_path: Path, repo: Path, reaper: list[int]
) -> None:
    agent, ready = sleeper_agent(tmp_path)
    command = [sys.executable, str(agent), "{prompt_file}"]
    running = Background(repo, "--", *command)
    try:
        wait_for(ready.exists, "the agent's second turn")
        reaper.append(int(ready.read_text()))
        for args in (["--", *scripted("noop")], ["--resume"]):
            second = loop(repo, *args)
            assert second.returncode != 0
            assert f"pid {running.proc.pid}" in second.stderr
            assert str(agent) in second.stderr  # the holder's command
        running.proc.send_signal(signal.SIGINT)
        assert running.wait() == 130
    finally:
        running.stop()
    # the refused loops left no trace in the history
    assert [r.kind for r in records(repo) if r.kind in ("loop_started", "resumed")] == [
        "loop_started"
    ]


def test_resume_with_nothing_recorded_says_so(repo: Path) -> None:
    result = loop(repo, "--resume")
    assert result.returncode == 2
    assert "nothing to resume" in result.stderr


# --------------------------------------------------------------------------- 4. agent faults


def test_agent_command_not_found(repo: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-agent")
    result = loop(repo, "--", missing, "{prompt_file}")
    assert result.returncode == 2
    assert "agent command not found" in result.stderr
    assert missing in result.stderr
    [error] = [r.data for r in records(repo, "agent_error")]
    assert error["iteration"] == 1
    assert stops(repo)[-1]["reason"] == "agent_error"
    assert iterations(repo) == []


def test_agent_that_exits_non_zero_is_verified_anyway(repo: Path, tmp_path: Path) -> None:
    agent = write_agent(tmp_path, "grumpy", "fix()\nsys.exit(3)\n")
    result = loop(repo, "--", sys.executable, str(agent), "{prompt_file}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agent exited 3; verifying anyway" in result.stdout
    [only] = iterations(repo)
    assert only["agent_exit"] == 3
    assert only["verdict"] == "pass"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_hanging_agent_is_killed_after_the_turn_timeout(repo: Path, tmp_path: Path) -> None:
    pids = tmp_path / "hang-pids"
    agent = write_agent(
        tmp_path,
        "hangs",
        f"""
        turn = turn_of(Path(sys.argv[1]).read_text())
        if turn == 1:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            say({str(pids)!r}, f"{{os.getpid()}} {{child.pid}}")
            time.sleep(600)
        fix()
        """,
    )
    result = loop(repo, "--turn-timeout", "2", "--", sys.executable, str(agent), "{prompt_file}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agent turn 1 timed out after 2s; verifying anyway" in result.stdout
    first, second = iterations(repo)
    assert first["agent_timed_out"] is True
    assert first["agent_exit"] is None
    assert first["verdict"] == "fail"
    assert second["agent_timed_out"] is False
    for pid in map(int, pids.read_text().split()):
        assert process_gone(pid), f"agent process {pid} survived the turn timeout"


def test_agent_reporting_an_invalid_spend_does_not_crash_the_loop(
    repo: Path, tmp_path: Path
) -> None:
    agent = write_agent(
        tmp_path,
        "bad_spend",
        """
        fix()
        print('{"type": "result", "total_cost_usd": NaN, "usage": {"input_tokens": -5}}')
        """,
    )
    result = loop(repo, "--", sys.executable, str(agent), "{prompt_file}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "spend" in result.stdout
    assert records(repo, "spend") == []
    assert stops(repo)[-1]["reason"] == "met"


def test_turn_timeout_holds_while_a_large_prompt_waits_on_stdin(
    tmp_path: Path, reaper: list[int]
) -> None:
    """An agent that never reads its stdin must not hang the loop past the turn timeout,
    however large the prompt (a pipe holds only so much)."""
    constraint = "Keep it short. " * 20_000  # a prompt far larger than a pipe buffer
    repo = make_repo(
        tmp_path, budget="{iterations: 1}", extra=f"constraints:\n  - {constraint.strip()}\n"
    )
    pid_file = tmp_path / "deaf-pid"
    agent = write_agent(tmp_path, "deaf", f"say({str(pid_file)!r}, str(os.getpid()))\n")
    with agent.open("a") as fh:
        fh.write("time.sleep(600)\n")  # never reads its stdin
    try:
        result = loop(repo, "--turn-timeout", "2", "--", sys.executable, str(agent), timeout=60)
    finally:
        if pid_file.exists():
            reaper.append(int(pid_file.read_text()))
    assert result.returncode == 23, result.stdout + result.stderr
    assert "timed out after 2s" in result.stdout
    assert iterations(repo)[0]["agent_timed_out"] is True


# --------------------------------------------------------------------------- 5. spend


def test_spend_accumulates_refuses_bad_values_and_records_the_seat(repo: Path) -> None:
    first = run_cli(repo, "spend", "--tokens", "10", "--usd", "0.5", "--json")
    assert first.returncode == 0, first.stderr
    assert first.json()["tokens"] == 10
    assert first.json()["usd"] == pytest.approx(0.5)
    second = run_cli(repo, "spend", "--tokens", "10", "--usd", "0.25", "--seat", "claude")
    assert second.returncode == 0, second.stderr
    assert "20 tokens" in second.stdout
    assert "$0.7500" in second.stdout
    for args in (["--usd", "NaN"], ["--usd", "-1"], ["--tokens", "abc"], ["--tokens", "-1"]):
        refused = run_cli(repo, "spend", *args)
        assert refused.returncode != 0, args
        assert refused.returncode not in (21,), args
        assert args[1] in refused.stderr, (args, refused.stderr)
    spends = [r.data for r in records(repo, "spend")]
    assert [(s["tokens"], s["usd"], s["seat"]) for s in spends] == [
        (10, 0.5, None),
        (10, 0.25, "claude"),
    ]
    status = run_cli(repo, "status", "--json").json()
    assert status["budget"]["tokens"]["used"] == 20
    assert status["budget"]["usd"]["used"] == pytest.approx(0.75)


def test_spend_crossing_the_cap_exits_21_and_stays_tripped(repo: Path) -> None:
    # the caps of a run come from its loop_started record: run one short loop first
    assert loop(repo, "--", *scripted("fix-on-turn-1")).returncode == 0
    assert run_cli(repo, "spend", "--usd", "0.5").returncode == 0
    crossing = run_cli(repo, "spend", "--usd", "0.6", "--json")
    assert crossing.returncode == 21, crossing.stdout + crossing.stderr
    assert crossing.json()["newly_tripped"] == ["usd"]
    later = run_cli(repo, "spend", "--tokens", "1")
    assert later.returncode == 21
    assert "tripped" in later.stdout
    assert len(records(repo, "budget_tripped")) == 1
    assert run_cli(repo, "status", "--json").json()["budget"]["tripped"] == ["usd"]


def test_spend_before_any_loop_still_honours_the_contract_caps(repo: Path) -> None:
    assert run_cli(repo, "spend", "--usd", "0.6").returncode == 0
    assert run_cli(repo, "spend", "--usd", "0.6").returncode == 21


def test_spend_with_an_empty_seat_is_refused_cleanly(repo: Path) -> None:
    result = run_cli(repo, "spend", "--usd", "0.1", "--seat", "")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- 6. checkpoints


@pytest.mark.parametrize(
    "command",
    [
        ["git", "push", "--force", "origin", "main"],
        ["bash", "-c", "rm -rf /"],
        ["env", "X=1", "/usr/bin/git", "-C", ".", "push"],
    ],
    ids=["force-push", "rm-rf-root", "env-git-push"],
)
def test_checkpoint_check_holds_dangerous_commands(repo: Path, command: list[str]) -> None:
    result = run_cli(repo, "checkpoint", "check", "--", *command)
    assert result.returncode == 24, result.stdout + result.stderr
    match = re.search(r"pending: (cp-[0-9a-f]+)", result.stdout)
    assert match, result.stdout
    assert match.group(1) in run_cli(repo, "checkpoint", "list").stdout
    as_json = run_cli(repo, "checkpoint", "check", "--json", "--", *command)
    assert as_json.returncode == 24
    assert as_json.json()["status"] == "pending"
    assert as_json.json()["id"] == match.group(1)  # asking again finds the same request


def test_checkpoint_check_lets_harmless_commands_through(repo: Path) -> None:
    result = run_cli(repo, "checkpoint", "check", "--", "ls", "-la")
    assert result.returncode == 0, result.stdout + result.stderr
    assert records(repo, "checkpoint_raised") == []


def test_cleared_command_is_single_use_and_decisions_are_made_once(repo: Path) -> None:
    push = ["git", "push", "--force", "origin", "main"]
    first = run_cli(repo, "checkpoint", "check", "--json", "--", *push).json()
    cid = first["id"]
    assert run_cli(repo, "checkpoint", "resolve", cid).returncode != 0  # --by is required
    nameless = run_cli(repo, "checkpoint", "resolve", cid, "--by", "  ")
    assert nameless.returncode != 0
    assert "named person" in nameless.stderr
    approved = run_cli(repo, "checkpoint", "resolve", cid, "--by", "bob")
    assert approved.returncode == 0, approved.stderr

    cleared = run_cli(repo, "checkpoint", "check", "--", *push)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert f"cleared: {cid}" in cleared.stdout
    again = run_cli(repo, "checkpoint", "check", "--json", "--", *push)
    assert again.returncode == 24
    assert again.json()["status"] == "pending"
    assert again.json()["id"] != cid

    twice = run_cli(repo, "checkpoint", "resolve", cid, "--by", "eve", "--deny")
    assert twice.returncode != 0
    assert "already approved by bob" in twice.stderr
    denied_id = again.json()["id"]
    assert (
        run_cli(repo, "checkpoint", "resolve", denied_id, "--by", "eve", "--deny").returncode == 0
    )
    thrice = run_cli(repo, "checkpoint", "resolve", denied_id, "--by", "bob")
    assert thrice.returncode != 0
    assert "already denied by eve" in thrice.stderr
    unknown = run_cli(repo, "checkpoint", "resolve", "cp-0000000000", "--by", "bob")
    assert unknown.returncode != 0
    assert "no checkpoint" in unknown.stderr
    decisions = [(r.data["id"], r.data["by"]) for r in records(repo, "checkpoint_resolved")]
    assert decisions == [(cid, "bob"), (denied_id, "eve")]


# --------------------------------------------------------------------------- 7. items


def test_next_claims_and_done_needs_the_verifier(tmp_path: Path, candidates: Any) -> None:
    hook = [sys.executable, "-c", f"open('{STATE}/hook-ran', 'w').write('1')"]
    repo = make_repo(tmp_path, extra=f"on_item_done: {json.dumps(hook)}\n")
    claimed = run_cli(repo, "next", "--json")
    assert claimed.returncode == 0, claimed.stderr
    assert claimed.json()["id"] == "unicode"
    assert [r.data for r in records(repo, "item_claimed")] == [{"item": "unicode"}]

    early = run_cli(repo, "done", "unicode")
    assert early.returncode == 20, early.stdout + early.stderr
    assert "NOT done" in early.stdout
    assert "test_accents_are_transliterated" in early.stdout
    assert records(repo, "item_done") == []
    assert not (repo / STATE / "hook-ran").exists()

    candidates.CANDIDATES["honest-fix"](repo)
    done = run_cli(repo, "done", "unicode")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / STATE / "hook-ran").read_text() == "1"
    [record] = [r.data for r in records(repo, "item_done")]
    assert record["item"] == "unicode"
    assert record["hook_exit"] == 0
    assert "on_item_done exited 0" in done.stdout
    status = run_cli(repo, "status", "--json").json()
    assert status["items"][0]["marked"] == "done"
    assert run_cli(repo, "next", "--json").json() is None
    unknown = run_cli(repo, "done", "no-such-item")
    assert unknown.returncode == 2
    assert "no DoD item" in unknown.stderr


def amend_empty_item(repo: Path) -> CLIResult:
    return run_cli(
        repo,
        "amend",
        "--add",
        "Empty input stays empty",
        "--tests",
        "tests/test_slug.py::test_empty_text_gives_empty_slug",
        "--by",
        "carol",
    )


def test_amend_adds_an_item_and_repins_but_a_hand_edit_is_tampering(repo: Path) -> None:
    nameless = run_cli(repo, "amend", "--add", "x", "--by", " ")
    assert nameless.returncode == 2
    result = amend_empty_item(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "empty-input-stays-empty" in result.stdout
    [amend] = [r.data for r in records(repo, "amend")]
    assert amend["by"] == "carol"
    assert amend["tests"] == ["tests/test_slug.py::test_empty_text_gives_empty_slug"]
    assert run_cli(repo, "check").returncode == 0

    verified = run_cli(repo, "verify", "--json")
    verdict = verified.json()
    assert_valid_verdict(verdict)
    items = {d["id"]: d for d in verdict["dod"]}
    assert set(items) == {"unicode", "empty-input-stays-empty"}
    assert items["empty-input-stays-empty"]["status"] == "done"
    assert items["empty-input-stays-empty"]["text"] == "Empty input stays empty"
    codes = {f["code"] for f in verdict["tamper"]["findings"]}
    assert "contract_modified" not in codes
    assert "protected_path_modified" not in codes
    status = run_cli(repo, "status", "--json").json()
    assert [i["id"] for i in status["items"]] == ["unicode", "empty-input-stays-empty"]

    # any other change to the contract is still tampering
    contract = repo / "loopcontract.yml"
    contract.write_text(contract.read_text().replace("iterations: 4", "iterations: 40"), "utf-8")
    tampered = run_cli(repo, "verify", "--json")
    assert tampered.returncode == 25
    assert "contract_modified" in {f["code"] for f in tampered.json()["tamper"]["findings"]}
    refused = amend_empty_item(repo)
    assert refused.returncode == 2
    assert "differs from its pin" in refused.stderr


def test_an_amendment_is_not_a_boundary_crossing(repo: Path) -> None:
    assert amend_empty_item(repo).returncode == 0
    verdict = run_cli(repo, "verify", "--json").json()
    assert not verdict["tamper"]["detected"], verdict["tamper"]


def test_amend_keeps_a_block_style_dod_list_valid(tmp_path: Path) -> None:
    """``dod:`` items written without indentation (PyYAML's and many editors' style)."""
    doc = yaml.safe_load(fast_contract())
    repo = make_repo(tmp_path, contract=yaml.safe_dump(doc, sort_keys=False))
    assert (repo / "loopcontract.yml").read_text().count("\n- id: unicode") == 1
    result = amend_empty_item(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    after = yaml.safe_load((repo / "loopcontract.yml").read_text())
    assert [d["id"] for d in after["dod"]] == ["unicode", "empty-input-stays-empty"]
    assert after["dod"][0]["tests"] == doc["dod"][0]["tests"]
    assert run_cli(repo, "check").returncode == 0


# --------------------------------------------------------------------------- 8. status


def test_status_after_a_short_loop(repo: Path) -> None:
    assert loop(repo, "--", *scripted("flail")).returncode == 23
    text = run_cli(repo, "status")
    assert text.returncode == 0, text.stderr
    goal = yaml.safe_load((repo / "loopcontract.yml").read_text())["goal"]
    assert goal in text.stdout
    assert "[ ] unicode" in text.stdout
    assert "iteration_cap" in text.stdout
    assert "4/4" in text.stdout
    assert "checkpoints pending: 0" in text.stdout
    assert "last verdict: fail" in text.stdout

    doc = run_cli(repo, "status", "--json").json()
    assert doc["contract"]["goal"] == goal
    assert doc["loop"]["status"] == "stopped"
    assert doc["loop"]["stop_reason"] == "iteration_cap"
    assert doc["items"] == [
        {
            "id": "unicode",
            "text": "Accented and special letters become their ASCII spelling in slugs.",
            "verified": "failed",
            "marked": None,
        }
    ]
    assert doc["budget"]["iterations"] == {"used": 4, "cap": 4}
    assert doc["budget"]["usd"] == {"used": 0.0, "cap": 1.0}
    assert doc["budget"]["tokens"]["cap"] is None
    assert doc["budget"]["tripped"] == []
    assert doc["checkpoints_pending"] == []
    assert doc["last_verdict"]["verdict"] == "fail"
    assert doc["last_verdict"]["exit_code"] == 20
    assert doc["last_verdict"]["trust"] == "isolated"
    assert doc["history"]["problems"] == []


def test_status_before_anything_ran(repo: Path) -> None:
    doc = run_cli(repo, "status", "--json").json()
    assert doc["loop"]["status"] == "idle"
    assert doc["last_verdict"] is None
    assert doc["budget"]["iterations"] == {"used": 0, "cap": 4}
    assert "last verdict: none yet" in run_cli(repo, "status").stdout


def test_history_is_a_valid_chain_after_every_kind_of_stop(repo: Path) -> None:
    """A stopped loop, a new loop over it: records of both runs, one chain."""
    assert loop(repo, "--", *scripted("cheat")).returncode == 25
    git(repo, "checkout", "--", "tests/test_slug.py")
    assert loop(repo, "--", *scripted("fix-on-turn-1")).returncode == 0
    found = History(repo / STATE).read()
    assert found.ok, found.messages()
    assert [r.kind for r in found.records if r.kind == "loop_started"] == ["loop_started"] * 2
    assert [s["reason"] for s in stops(repo)] == ["tamper", "met"]


def test_the_historys_failing_list_leaves_skipped_tests_out(tmp_path: Path) -> None:
    """A skipped test did not pass, but it did not fail: the history lists failures only."""
    skipped = "import pytest\n\n\n@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n"
    repo = make_mini(
        tmp_path / "mini",
        **{"loopcontract.yml": mini_contract() + "budget: {iterations: 1}\n"},
        **{"tests/test_later.py": skipped},
    )
    assert run_cli(repo, "baseline").returncode == 0
    agent = write_agent(tmp_path, "idle", "pass\n")
    result = loop(repo, "--", sys.executable, str(agent), "{prompt}")
    assert result.returncode == 23, result.stdout + result.stderr
    (iteration,) = [r.data for r in records(repo, "iteration")]
    assert iteration["failing"] == ["tests/test_core.py::test_triple"]
    assert "tests/test_later.py::test_later" in {
        t["nodeid"] for t in verdict_on_disk(repo)["tests"]["records"] if t["outcome"] == "skipped"
    }
