"""processes: a bounded capture of a child's output, a kill that reaches its whole group, and a
command that stops (children and all) when SIGINT or SIGTERM asks it to."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_loopcontract.processes import Capture, kill_group, spawn, start_pump
from testing.verifier_project import process_gone


def test_capture_keeps_head_and_tail_and_calls_overflow_once() -> None:
    calls: list[int] = []
    capture = Capture(4, 3, on_overflow=lambda: calls.append(1))
    for chunk in (b"abcdef", b"g", b"hij", b"klm" * 10):
        capture.add(chunk)
    head, tail, total = capture.snapshot()
    assert (head, tail, total) == (b"abcd", b"klm", 40)
    assert capture.overflowed and calls == [1]
    small = Capture(4, 3)
    small.add(b"abcdefg")
    assert small.snapshot() == (b"abcd", b"efg", 7) and not small.overflowed


def test_kill_group_ends_a_grandchild_and_pumps_drain(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    script = (
        "import os, subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('x' * 100000, flush=True)\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    proc = spawn([sys.executable, "-c", script], cwd=tmp_path)
    out, err = Capture(10, 10), Capture(0, 100)
    pumps = [start_pump(proc.stdout, out), start_pump(proc.stderr, err)]
    deadline = time.monotonic() + 30
    while (not marker.exists() or not marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(marker.read_text())
    kill_group(proc)
    for pump in pumps:
        pump.join(10)
    assert not any(p.is_alive() for p in pumps), "the group's death closed every pipe"
    assert out.snapshot()[2] == 100_001 and proc.returncode < 0
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{grandchild}/stat") as fh:  # a zombie awaiting its reaper is dead
            if fh.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild outlived the group kill")


# A command inside ``stopping_on_signals`` with a child whose group holds a grandchild; its
# cleanup takes a second, long enough for a second signal to arrive in the middle of it.
STOPPING = """\
import sys, time
from pathlib import Path
from pytest_loopcontract.processes import Stopped, spawn, stopping_on_signals

here = Path.cwd()
try:
    with stopping_on_signals():
        child = spawn(["sh", "-c", "sleep 600 & echo $! > grandchild; wait"], cwd=here)
        try:
            (here / "ready").write_text(str(child.pid))
            time.sleep(600)
        finally:
            (here / "cleaning").touch()
            time.sleep(1)
            (here / "cleaned").touch()
except Stopped as exc:
    sys.exit(exc.exit_code)
"""


def _wait_for(path: Path, proc: subprocess.Popen[bytes], *, filled: bool = True) -> None:
    """Until ``path`` exists (and, when ``filled``, holds something) while ``proc`` runs."""
    deadline = time.monotonic() + 30
    while not (path.exists() and (not filled or path.read_text("utf-8").strip())):
        assert proc.poll() is None, f"exited with {proc.returncode} before {path.name} appeared"
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("sig", "prefix"),
    [
        # started as a non-interactive shell starts ``cmd &``: SIGINT inherited ignored
        (signal.SIGINT, ("sh", "-c", 'trap "" INT; exec "$@"', "sh")),
        (signal.SIGTERM, ()),
    ],
    ids=["sigint-inherited-ignored", "sigterm"],
)
def test_a_signal_stops_the_command_ends_its_children_and_lets_the_cleanup_finish(
    tmp_path: Path, sig: signal.Signals, prefix: tuple[str, ...]
) -> None:
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-c", STOPPING], cwd=tmp_path, start_new_session=True
    )
    try:
        for name in ("ready", "grandchild"):
            _wait_for(tmp_path / name, proc)
        child, grandchild = (int((tmp_path / n).read_text()) for n in ("ready", "grandchild"))

        os.killpg(proc.pid, sig)  # the whole group, as a terminal sends Ctrl-C
        _wait_for(tmp_path / "cleaning", proc, filled=False)
        for pid in (child, grandchild):  # ended at the signal, not at the exit
            deadline = time.monotonic() + 5
            while not process_gone(pid):
                assert time.monotonic() < deadline, f"{pid} outlived the stop"
                time.sleep(0.02)
        os.killpg(proc.pid, sig)  # a second one, during the cleanup
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    assert code == 128 + sig
    assert (tmp_path / "cleaned").exists()  # the second signal did not cut the cleanup short
