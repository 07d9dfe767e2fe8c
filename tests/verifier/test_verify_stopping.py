"""Stopping a ``loop-contract verify`` (issue 34, point 11): Ctrl-C and SIGTERM end the run at
once (exit 130 / 143), sandbox and children included, and remove its scratch folders, with no
verdict written; a verify killed outright leaves its folders, and the next verify sweeps them.

Each test runs the real launcher in a session of its own on a candidate whose acceptance test
starts a helper process and then sleeps for ten minutes. It waits until the test runs (the
test writes a marker outside the sandbox) and signals the launcher as a terminal, a CI
cancel or ``kill -9`` would. ``$LOOP_CONTRACT_SCRATCH`` points at a folder of the test's own,
so the folders can be counted.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_loopcontract.statedir import StateDir
from testing.verifier_project import (
    FIXED,
    PY,
    cli,
    kill_launched,
    make_repo,
    processes_with,
    wait_until,
)

STOP_WITHIN = 10.0  # seconds from the signal to the exit; it takes well under one
SLOW_TEST = 600  # the candidate's test sleeps this long: a run that is not stopped never ends

SLOW_CORE = (
    "import subprocess\nimport sys\nimport time\n\n\n"
    "def double(x):\n    return x + x\n\n\n"
    "def triple(x):\n"
    "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
    "    open({started!r}, 'w').close()\n"
    f"    time.sleep({SLOW_TEST})\n"
    "    return x * 3\n"
)

# ``cmd &`` in a non-interactive shell starts ``cmd`` with SIGINT ignored, and Python keeps an
# inherited SIG_IGN: that is how the issue saw Ctrl-C ignored. ``trap "" INT`` does the same.
SIGINT_IGNORED = ("sh", "-c", 'trap "" INT; exec "$@"', "sh")


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@dataclass
class SlowVerify:
    """A baselined repository whose candidate's acceptance test hangs, and how to verify it."""

    repo: Path
    scratch: Path
    started: Path
    token: str
    env: dict[str, str]
    launched: list[subprocess.Popen[str]]

    def start(self, *prefix: str) -> subprocess.Popen[str]:
        """``loop-contract verify`` in its own session, once its tests are running."""
        proc = subprocess.Popen(
            [*prefix, PY, "-m", "pytest_loopcontract", "verify"],
            cwd=self.repo,
            env=self.env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.launched.append(proc)
        running = wait_until(lambda: self.started.exists() or proc.poll() is not None, 120)
        if not running or not self.started.exists():
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the tests never started (exit {proc.returncode}): {out}{err}")
        return proc

    def folders(self, pid: int) -> list[str]:
        """The scratch folders of the launcher ``pid`` (their names carry it)."""
        return sorted(name for name in os.listdir(self.scratch) if f"-{pid}-" in name)

    @property
    def verdict(self) -> Path:
        return StateDir.of(self.repo).verdict

    def stop(self, proc: subprocess.Popen[str], sig: signal.Signals, *, group: bool) -> float:
        """Send ``sig`` (to the whole process group, as a terminal does, or to the launcher
        alone, as CI and ``timeout`` do) and wait for the exit; the seconds it took."""
        sent = time.monotonic()
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{sig.name} did not stop the verify within a minute")
        return time.monotonic() - sent

    def assert_nothing_left(self, proc: subprocess.Popen[str]) -> None:
        assert self.folders(proc.pid) == []  # removed before the exit, not after
        assert os.listdir(self.scratch) == []
        assert wait_until(lambda: processes_with(self.token) == [], 5), "the sandbox lives on"
        assert wait_until(lambda: group_gone(proc.pid), 5), "a process of its group lives on"
        assert not self.verdict.exists()  # no verdict at all, let alone a passing one


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[SlowVerify]:
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    env = {
        **os.environ,
        "LOOP_CONTRACT_SANDBOX_WRITABLE": str(out),  # where the test's marker can be written
        "LOOP_CONTRACT_SCRATCH": str(scratch),
    }
    repo = make_repo(tmp_path / "mini")
    result = cli(repo, "baseline", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.listdir(scratch) == []
    token = f"stop-{secrets.token_hex(6)}"
    started = out / "started"
    core = SLOW_CORE.format(token=token, started=str(started))
    (repo / "src/mini/core.py").write_text(core, "utf-8")
    state = SlowVerify(repo, scratch, started, token, env, [])
    try:
        yield state
    finally:
        kill_launched(state.launched, token)


@pytest.mark.parametrize("prefix", [(), SIGINT_IGNORED], ids=["sigint-default", "sigint-ignored"])
def test_ctrl_c_stops_the_run_at_once_and_leaves_nothing(
    slow: SlowVerify, prefix: tuple[str, ...]
) -> None:
    proc = slow.start(*prefix)
    kinds = {name.split("-")[1] for name in slow.folders(proc.pid)}
    assert {"scratch", "private", "run"} <= kinds  # named after their owner while it runs

    seconds = slow.stop(proc, signal.SIGINT, group=True)

    assert proc.returncode == 130, proc.stderr
    assert seconds < STOP_WITHIN
    slow.assert_nothing_left(proc)


def test_sigterm_stops_the_run_at_once_and_leaves_nothing(slow: SlowVerify) -> None:
    proc = slow.start()
    assert len(slow.folders(proc.pid)) >= 3

    seconds = slow.stop(proc, signal.SIGTERM, group=False)

    assert proc.returncode == 143
    assert seconds < STOP_WITHIN
    slow.assert_nothing_left(proc)


def test_a_verify_killed_outright_leaves_its_folders_and_the_next_verify_sweeps_them(
    slow: SlowVerify,
) -> None:
    proc = slow.start()

    slow.stop(proc, signal.SIGKILL, group=False)

    assert proc.returncode == -signal.SIGKILL
    left = slow.folders(proc.pid)
    assert {name.split("-")[1] for name in left} >= {"scratch", "private", "run"}
    # bwrap dies with its parent, and its PID namespace with it
    assert wait_until(lambda: processes_with(slow.token) == [], 5)
    assert not slow.verdict.exists()

    (slow.repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    again = cli(slow.repo, "verify", env=slow.env)

    assert again.returncode == 0, again.stdout + again.stderr  # a normal run beside the sweep
    assert wait_until(lambda: slow.folders(proc.pid) == []), slow.folders(proc.pid)
    assert wait_until(lambda: os.listdir(slow.scratch) == []), os.listdir(slow.scratch)
