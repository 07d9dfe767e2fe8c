"""Child processes the verifier starts: each leads its own session, so a timeout or an
interrupt can end it together with everything it spawned."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["kill_group"]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group, then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
