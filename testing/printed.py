"""Commands the product prints for a person, run the way a person runs them: copied out of the
message (where it sits in single quotes) and pasted into a shell, with the installed
``loop-contract`` on the PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["BIN", "printed_commands", "run_printed"]

BIN = Path(sys.executable).parent  # where the environment's ``loop-contract`` script lives
_QUOTED = re.compile(r"'(loop-contract [^']*)'")


def printed_commands(text: str) -> list[str]:
    """Every ``'loop-contract ...'`` command a message prints, in order, without repeats."""
    return list(dict.fromkeys(_QUOTED.findall(text)))


def run_printed(cwd: Path, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``command`` exactly as printed, run by ``/bin/sh`` in ``cwd`` (not asserted)."""
    assert (BIN / "loop-contract").exists(), f"no loop-contract script beside {sys.executable}"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
