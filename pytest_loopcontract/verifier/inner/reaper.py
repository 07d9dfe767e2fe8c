"""Run one command, then end and name every process it left behind.

Started by the launcher as ``python -I -S reaper.py REPORT -- COMMAND...`` (inside the sandbox
when there is one). It makes itself the child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a
process that forks twice and calls ``setsid`` to escape its group is still re-parented here when
its parent exits. When the command ends (or on SIGTERM, the launcher's timeout), every process
still re-parented to the reaper is recorded and killed, round after round, before the report is
written; the launcher writes the verdict only after this process is gone. Standard library
only: it runs under the project's interpreter in isolated mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
SWEEP_ROUNDS = 200
FILE_SIZE_LIMIT = 4 << 30  # one file larger than this ends the writer with SIGXFSZ


def _become_subreaper() -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _limit_resources() -> None:
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        cap = FILE_SIZE_LIMIT if hard == resource.RLIM_INFINITY else min(hard, FILE_SIZE_LIMIT)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def _stat(pid: str) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(2048)
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def _adopted() -> list[tuple[int, str]]:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := _stat(entry)) is not None and info[0] == me:
            found.append((int(entry), info[1]))
    return found


def _reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep() -> tuple[list[dict[str, Any]], bool]:
    """Kill whatever is still adopted here; returns what was alive and whether none is left."""
    seen: dict[int, dict[str, Any]] = {}
    for _ in range(SWEEP_ROUNDS):
        _reap_zombies()
        alive = [(pid, state) for pid, state in _adopted() if state != "Z"]
        if not alive:
            return list(seen.values()), True
        for pid, _state in alive:
            seen.setdefault(pid, {"pid": pid, "cmdline": _cmdline(pid)})
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return list(seen.values()), False


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: reaper.py REPORT -- COMMAND...", file=sys.stderr)
        return 2
    report, command = argv[0], argv[2:]
    subreaper = _become_subreaper()
    _limit_resources()
    child = subprocess.Popen(command, start_new_session=True)
    terminated = []

    def on_term(signum: int, frame: object) -> None:
        terminated.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)

    signal.signal(signal.SIGTERM, on_term)
    code = child.wait()
    # What the command left (its group included) is now re-parented here: record, then kill.
    leftovers, complete = sweep()
    data = {
        "exit_code": code,
        "terminated": bool(terminated),
        "subreaper": subreaper,
        "leftovers": leftovers,
        "sweep_complete": complete,
    }
    tmp = report + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, report)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
