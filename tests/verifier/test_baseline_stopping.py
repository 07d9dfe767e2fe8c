"""Stopping a ``loop-contract baseline`` as a terminal or a CI cancel does: the base commit's
suite may hang as well as a candidate's, and Ctrl-C and SIGTERM stop the baseline at once
(exit 130 / 143), its sandboxed run included, with its scratch folders removed and no
``baseline.json`` written.

The base commit's test starts a helper process and sleeps for ten minutes; the test waits for
its marker (written outside the sandbox) and then signals the launcher."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pytest_loopcontract.statedir import StateDir
from testing.verifier_project import PY, kill_launched, make_repo, processes_with, wait_until

HANGING_CORE = (
    "import subprocess\nimport sys\nimport time\n\n\n"
    "def double(x):\n    return x + x\n\n\n"
    "def triple(x):\n"
    "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {token!r}])\n"
    "    open({started!r}, 'w').close()\n"
    "    time.sleep(600)\n"
    "    return x * 3\n"
)


@pytest.mark.parametrize(
    ("sig", "group", "code"),
    [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
    ids=["ctrl-c", "sigterm"],
)
def test_a_hanging_baseline_stops_at_once_and_leaves_nothing(
    tmp_path: Path, sig: signal.Signals, group: bool, code: int
) -> None:
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    token, started = f"stop-{secrets.token_hex(6)}", out / "started"
    core = HANGING_CORE.format(token=token, started=str(started))
    repo = make_repo(tmp_path / "mini", **{"src/mini/core.py": core})
    env = {
        **os.environ,
        "LOOP_CONTRACT_SANDBOX_WRITABLE": str(out),
        "LOOP_CONTRACT_SCRATCH": str(scratch),
    }
    proc = subprocess.Popen(
        [PY, "-m", "pytest_loopcontract", "baseline"],
        cwd=repo,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(lambda: started.exists() or proc.poll() is not None, 120)
        assert started.exists(), proc.communicate()
        assert any(f"-{proc.pid}-" in name for name in os.listdir(scratch))

        sent = time.monotonic()
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        proc.communicate(timeout=60)

        assert proc.returncode == code
        assert time.monotonic() - sent < 10
        assert os.listdir(scratch) == []  # removed before the exit
        assert wait_until(lambda: processes_with(token) == [], 5), "the sandbox lives on"
        assert not StateDir.of(repo).baseline.exists()
    finally:
        kill_launched([proc], token)
