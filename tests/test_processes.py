"""processes: a bounded capture of a child's output and a kill that reaches its whole group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from pytest_loopcontract.processes import Capture, kill_group, spawn, start_pump


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
