"""Parking on background work and the control plane, end to end: real loops driven by small
stand-in agents, real sleeping processes for ``--pid``, the real CLI in subprocesses.

What is asserted is the order of the history's records (no ``iteration`` or ``spend`` while a
barrier stands) and what the loop says; time only bounds how long a helper waits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record
from testing.loop_project import STATE, make_repo, write_agent
from testing.repos import run_cli

DEADLINE = 60.0
CLI = [sys.executable, "-m", "pytest_loopcontract"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def kinds(repo: Path) -> list[str]:
    return [r.kind for r in History(repo / STATE).read().records]


def records(repo: Path, kind: str) -> list[Record]:
    return [r for r in History(repo / STATE).read().records if r.kind == kind]


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


class LoopProcess:
    """``loop-contract loop --poll 0.1 …`` in the background, its output in a file."""

    def __init__(self, repo: Path, *args: str) -> None:
        self.out = repo.parent / f"loop-{time.monotonic_ns()}.out"
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [*CLI, "loop", "--poll", "0.1", *args],
                cwd=repo,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},  # read the output as it comes
            )

    @property
    def output(self) -> str:
        return self.out.read_text("utf-8")

    def wait(self) -> int:
        return self.proc.wait(timeout=DEADLINE)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes] | LoopProcess]]:
    """Processes a test starts; killed at the end whatever happened."""
    procs: list[subprocess.Popen[bytes] | LoopProcess] = []
    yield procs
    for p in procs:
        if isinstance(p, LoopProcess):
            p.kill()
        elif p.poll() is None:
            p.kill()
            p.wait()


def logging_agent(tmp_path: Path, body: str = "fix()") -> tuple[Path, Path]:
    """An agent that logs each turn to a file outside the repository, reports a spend (so a
    turn that ran leaves a ``spend`` record), then runs ``body`` (``turn`` is its number)."""
    log = tmp_path / "turns.log"
    agent = write_agent(
        tmp_path,
        "logger",
        f"""
        turn = turn_of(Path(sys.argv[1]).read_text())
        with open({str(log)!r}, "a") as fh:
            fh.write(f"turn {{turn}}\\n")
        CLI = [sys.executable, "-m", "pytest_loopcontract"]
        print('{{"total_cost_usd": 0.01, "usage": {{"input_tokens": 10}}}}')
"""
        + "\n".join("        " + line for line in body.strip("\n").splitlines()),
    )
    return agent, log


def agent_command(agent: Path) -> list[str]:
    return ["--", sys.executable, str(agent), "{prompt_file}"]


def test_a_pid_barrier_parks_the_loop_until_the_process_exits(
    repo: Path, tmp_path: Path, started: list[subprocess.Popen[bytes] | LoopProcess]
) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    started.append(sleeper)
    parked = run_cli(repo, "wait", "--pid", str(sleeper.pid), "--reason", "the build runs")
    assert parked.returncode == 0, parked.stderr
    assert f"w1: waiting for process {sleeper.pid} to exit - the build runs" in parked.stdout
    agent, log = logging_agent(tmp_path)
    loop = LoopProcess(repo, *agent_command(agent))
    started.append(loop)
    wait_for(lambda: "parked: w1" in loop.output, "the loop to say it is parked")
    time.sleep(1.0)  # a window in which a turn would have started
    assert not log.exists(), "an agent turn ran while the barrier stood"
    assert "iteration" not in kinds(repo) and "spend" not in kinds(repo)
    status = run_cli(repo, "status", "--json").json()
    assert [b["id"] for b in status["parked"]["barriers"]] == ["w1"]
    sleeper.kill()
    sleeper.wait()
    assert loop.wait() == 0, loop.output
    order = kinds(repo)
    assert order.index("barrier_cleared") < order.index("spend") < order.index("iteration")
    assert records(repo, "barrier_cleared")[0].data == {"id": "w1", "why": "exited"}
    assert "barrier over: w1" in loop.output
    assert log.read_text() == "turn 1\n"


def test_a_barrier_on_a_process_already_gone_clears_on_the_first_check(
    repo: Path, tmp_path: Path
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert run_cli(repo, "wait", "--pid", str(gone.pid)).returncode == 0
    agent, log = logging_agent(tmp_path)
    result = run_cli(repo, "loop", "--poll", "0.1", *agent_command(agent))
    assert result.returncode == 0, result.stdout + result.stderr
    assert records(repo, "barrier_cleared")[0].data["why"] == "exited"
    assert log.read_text() == "turn 1\n"


def test_the_agent_parks_itself_for_seconds_and_the_deadline_lets_it_go_on(
    repo: Path, tmp_path: Path
) -> None:
    body = """
if turn == 1:
    subprocess.run([*CLI, "wait", "--seconds", "1", "--reason", "indexing"], check=True)
    flail(turn)
else:
    fix()
"""
    agent, log = logging_agent(tmp_path, body)
    result = run_cli(repo, "loop", "--poll", "0.1", *agent_command(agent))
    assert result.returncode == 0, result.stdout + result.stderr
    order = kinds(repo)
    set_at, cleared_at = order.index("barrier_set"), order.index("barrier_cleared")
    iterations = [i for i, k in enumerate(order) if k == "iteration"]
    assert set_at < iterations[0] < cleared_at < iterations[1]
    assert records(repo, "barrier_cleared")[0].data == {"id": "w1", "why": "deadline"}
    assert "w1: waiting for 1.0 s to pass - indexing" in result.stdout
    assert log.read_text() == "turn 1\nturn 2\n"


def test_until_exit_waits_for_the_command_to_succeed(
    repo: Path, tmp_path: Path, started: list[subprocess.Popen[bytes] | LoopProcess]
) -> None:
    flag = tmp_path / "artifact-ready"
    assert run_cli(repo, "wait", "--until-exit", "test", "-f", str(flag)).returncode == 0
    agent, log = logging_agent(tmp_path)
    loop = LoopProcess(repo, *agent_command(agent))
    started.append(loop)
    wait_for(lambda: "to succeed" in loop.output, "the loop to park on the command")
    time.sleep(0.5)
    assert not log.exists()
    flag.write_text("done")
    assert loop.wait() == 0, loop.output
    assert records(repo, "barrier_cleared")[0].data == {"id": "w1", "why": "succeeded"}


def test_a_barrier_survives_a_killed_loop_and_unwait_drops_it(
    repo: Path, tmp_path: Path, started: list[subprocess.Popen[bytes] | LoopProcess]
) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    started.append(sleeper)
    agent, log = logging_agent(tmp_path)
    assert run_cli(repo, "wait", "--pid", str(sleeper.pid)).returncode == 0
    first = LoopProcess(repo, *agent_command(agent))
    started.append(first)
    wait_for(lambda: "parked: w1" in first.output, "the first loop to park")
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    resumed = LoopProcess(repo, "--resume")
    started.append(resumed)
    wait_for(lambda: "parked: w1" in resumed.output, "the resumed loop to park again")
    assert not log.exists()
    dropped = run_cli(repo, "unwait", "--by", "alice")
    assert dropped.returncode == 0 and "dropped w1" in dropped.stdout
    assert resumed.wait() == 0, resumed.output
    assert records(repo, "barrier_cleared")[0].data == {"id": "*", "why": "unwait", "by": "alice"}
    assert sleeper.poll() is None  # the loop went on; the process it waited for still runs
    assert log.read_text() == "turn 1\n"


def test_pause_during_a_turn_takes_effect_after_it_and_resume_goes_on(
    repo: Path, tmp_path: Path, started: list[subprocess.Popen[bytes] | LoopProcess]
) -> None:
    body = """
if turn == 1:
    subprocess.run([*CLI, "pause", "--by", "alice", "--reason", "review"], check=True)
    flail(turn)
else:
    fix()
"""
    agent, log = logging_agent(tmp_path, body)
    loop = LoopProcess(repo, *agent_command(agent))
    started.append(loop)
    wait_for(lambda: "paused by alice - review" in loop.output, "the loop to say it is paused")
    time.sleep(0.5)
    assert [r.data["n"] for r in records(repo, "iteration")] == [1]  # turn 1 was verified
    assert log.read_text() == "turn 1\n"
    go = run_cli(repo, "resume", "--by", "bob")
    assert go.returncode == 0 and "resumed" in go.stdout
    assert loop.wait() == 0, loop.output
    assert [r.data["by"] for r in records(repo, "paused")] == ["alice"]
    assert [r.data["by"] for r in records(repo, "unpaused")] == ["bob"]
    assert log.read_text() == "turn 1\nturn 2\n"
    again = run_cli(repo, "resume")
    assert again.returncode == 0 and "was not paused" in again.stdout


def test_clear_during_a_turn_stops_the_loop_before_the_next(repo: Path, tmp_path: Path) -> None:
    body = """
subprocess.run([*CLI, "clear", "--by", "carol"], check=True)
flail(turn)
"""
    agent, log = logging_agent(tmp_path, body)
    result = run_cli(repo, "loop", "--poll", "0.1", *agent_command(agent))
    assert result.returncode == 20, result.stdout + result.stderr
    [stop] = [r.data for r in records(repo, "stop")]
    assert stop["reason"] == "cleared" and stop["message"] == "cleared by carol"
    assert log.read_text() == "turn 1\n"
    assert run_cli(repo, "status", "--json").json()["loop"]["status"] == "stopped"


def test_bad_waits_say_how_to_write_them(repo: Path) -> None:
    nothing = run_cli(repo, "wait")
    assert nothing.returncode == 2 and "--pid N | --seconds S" in nothing.stderr
    missing = run_cli(repo, "wait", "--until-exit", "no-such-command-xyz")
    assert missing.returncode == 2 and "is not a command on PATH" in missing.stderr
    negative = run_cli(repo, "wait", "--seconds", "-3")
    assert negative.returncode == 2 and "--seconds" in negative.stderr
    unknown = run_cli(repo, "unwait", "w9")
    assert unknown.returncode == 2 and "no standing barrier 'w9'" in unknown.stderr
    for result in (nothing, missing, negative, unknown):
        assert "Traceback" not in result.stderr
