"""Running a command with a deadline and an output cap.

Sensor commands and the coverage child run without a shell, in their own session, with a
deadline; on timeout the whole process group is killed. At most 1 MiB of stdout is read (more
is an error) and only the tail of stderr is kept, so a runaway command cannot exhaust the
verifier's memory.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_loopcontract.processes import Capture, kill_group, signal_group, spawn, start_pump
from pytest_loopcontract.verifier.sensors.common import clip
from pytest_loopcontract.verifier.sensors.protocol import Unavailable

__all__ = ["Finished", "exit_description", "last_line", "run_capped"]

_MAX_STDOUT_BYTES = 1 << 20
_STDERR_TAIL_BYTES = 4096
_PIPE_GRACE_SECONDS = 5.0
_PIPE_DRAIN_SECONDS = 0.5


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr_tail: bytes


def _finished_in_time(
    proc: subprocess.Popen[bytes], pumps: Sequence[threading.Thread], deadline: float
) -> bool:
    """Wait for the child and for its pipes to close; a grandchild holding them open counts."""
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    for pump in pumps:  # output written just before exit still needs a moment to drain
        pump.join(max(_PIPE_DRAIN_SECONDS, deadline - time.monotonic()))
    return not any(pump.is_alive() for pump in pumps)


def run_capped(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    label: str,
) -> Finished:
    """Run ``argv`` (no shell) within ``timeout`` seconds, reading at most 1 MiB of stdout."""
    try:
        proc = spawn(argv, cwd=cwd, env=env)
    except OSError as exc:
        raise Unavailable("error", f"cannot start {label}: {exc}") from None
    stdout = Capture(
        _MAX_STDOUT_BYTES, 0, on_overflow=lambda: signal_group(proc.pid, signal.SIGKILL)
    )
    stderr = Capture(0, _STDERR_TAIL_BYTES)
    pumps = [start_pump(proc.stdout, stdout), start_pump(proc.stderr, stderr)]
    try:
        in_time = _finished_in_time(proc, pumps, time.monotonic() + timeout)
    except BaseException:  # stopped (Ctrl-C, SIGTERM): the sensor ends with the run
        kill_group(proc)
        raise
    if not in_time:
        kill_group(proc)
        for pump in pumps:
            pump.join(_PIPE_GRACE_SECONDS)
    if stdout.overflowed:
        raise Unavailable("error", f"{label} printed more than {_MAX_STDOUT_BYTES} bytes")
    if not in_time:
        raise Unavailable("error", f"{label} timed out after {timeout:g} s (killed)")
    return Finished(proc.returncode, stdout.snapshot()[0], stderr.snapshot()[1])


def exit_description(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return clip(lines[-1]) if lines else "no error output"
