"""Run pytest in a subprocess the verifier controls, and read back what the plugin recorded.

The child gets a cleaned environment (no PYTEST_ADDOPTS, no injected plugins, no bytecode
writes), its output goes to a file rather than a pipe (so many megabytes cannot deadlock or
exhaust memory), and a timeout kills its whole process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .processes import kill_group, read_tail
from .results import RunResults

__all__ = ["PytestRun", "clean_env", "run_pytest"]

TAIL_BYTES = 8192
RESULTS_LIMIT = 256 * 1024 * 1024

_DROPPED_ENV = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTEST_CURRENT_TEST",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "COVERAGE_PROCESS_START",
    "COVERAGE_FILE",
    "COVERAGE_RCFILE",
    "COV_CORE_SOURCE",
    "COV_CORE_CONFIG",
    "COV_CORE_DATAFILE",
)


@dataclass(frozen=True)
class PytestRun:
    exit_code: int | None  # None when the run was killed for its timeout
    results: RunResults | None
    results_error: str
    output_tail: str
    duration: float
    timed_out: bool


def clean_env(autoload: bool, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (base or os.environ).items() if k not in _DROPPED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _read_results(path: Path) -> tuple[RunResults | None, str]:
    if not path.exists():
        return None, "the plugin wrote no results (the process died or the plugin never loaded)"
    if path.stat().st_size > RESULTS_LIMIT:
        return None, f"results file larger than {RESULTS_LIMIT} bytes"
    try:
        return RunResults.from_json(json.loads(path.read_text("utf-8"))), ""
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"results file unreadable: {exc}"


def run_pytest(
    workdir: Path,
    *,
    nonce: str,
    autoload: bool,
    plugins: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    timeout: float = 1800.0,
    coverage_data: Path | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> PytestRun:
    """Run the suite in ``workdir``; results and output land in a private temp folder."""
    with tempfile.TemporaryDirectory(prefix="loopcontract-run-") as tmp:
        raw = Path(tmp) / "results.json"
        output = Path(tmp) / "output.log"
        argv = [python]
        if coverage_data is not None:
            argv += ["-m", "coverage", "run", f"--data-file={coverage_data}"]
        argv += ["-m", "pytest"]
        if not autoload:
            argv += ["-p", "pytest_loopcontract.plugin"]
            for name in plugins:
                argv += ["-p", name]
        argv += [
            f"--loop-contract-raw={raw}",
            f"--loop-contract-nonce={nonce}",
            "-p",
            "no:cacheprovider",
            # A candidate that breaks one module's import still gets every other test run;
            # the broken file's tests count as errors, not as an interrupted run.
            "--continue-on-collection-errors",
            f"--rootdir={workdir}",
            f"--confcutdir={workdir}",
            *extra_args,
        ]
        started = time.monotonic()
        timed_out = False
        with output.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                cwd=workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env if env is not None else clean_env(autoload),
                start_new_session=True,
            )
            try:
                code: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc)
                code = None
        duration = time.monotonic() - started
        results, error = _read_results(raw)
        return PytestRun(code, results, error, read_tail(output, TAIL_BYTES), duration, timed_out)
