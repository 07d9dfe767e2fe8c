"""Child processes the verifier starts: each leads its own session, so a timeout or an
interrupt can end it together with everything it spawned."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

__all__ = ["kill_group", "read_tail"]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group, then reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of a child's output file, decoded leniently: a child can print
    gigabytes, and only the end says why it failed."""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - limit))
        return fh.read().decode("utf-8", "replace")
