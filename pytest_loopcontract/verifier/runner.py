"""Run pytest in a subprocess the verifier controls, and read back what the plugin recorded.

The child runs under the project's interpreter, confined (see :mod:`sandbox`) and under the
reaper (``inner/reaper.py``), which ends every process the run left behind before this module
reads anything. It gets a cleaned environment (no PYTEST_ADDOPTS, no injected plugins, no
bytecode writes, ``PYTHONPATH`` only from the contract), the stdlib-only result collector
injected with ``-p``, and its output goes to a file rather than a pipe (so many megabytes
cannot deadlock or exhaust memory).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_loopcontract.processes import STOP_GRACE, kill_group, read_tail, spawn
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import phases
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.sandbox import (
    PROCESS,
    Confinement,
    choose_confinement,
    extra_writable,
)
from pytest_loopcontract.verifier.testenv import TestEnv, probe_test_env, resolve_python
from pytest_loopcontract.workspace import scratch_folder

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract

__all__ = [
    "INNER_NAME",
    "PytestRun",
    "RunSetup",
    "child_env",
    "clean_env",
    "prepare_run",
    "run_pytest",
]

INNER_NAME = "_loopcontract_inner"
# The variable naming the injected plugin's settings file; ``inner/__init__.py`` reads it. Not
# imported from there: importing that package imports pytest, which the launcher never needs.
CONFIG_ENV = "LOOP_CONTRACT_INNER"
# The folder holding this package, readable in the sandbox: where pytest-loopcontract is also
# installed in the test environment (editable, from a checkout under /tmp or $HOME), its
# pytest11 entry point loads at baseline (plugin autoload on) and must find its files.
VERIFIER_HOME = Path(__file__).resolve().parents[2]
TERM_GRACE = 10.0

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
    isolation: str = PROCESS
    leftovers: tuple[dict[str, Any], ...] = ()
    key: bytes = b""  # this run's secret: it signs the results and names the referee's items
    forged: bool = False  # a results file was there but its signature was not this run's
    raw: RunResults | None = None  # as the process reported them, before the referee's fold


def clean_env(
    autoload: bool, base: Mapping[str, str] | None = None, *, write_bytecode: bool = False
) -> dict[str, str]:
    env = {k: v for k, v in (base or os.environ).items() if k not in _DROPPED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if write_bytecode:  # the baseline run only: see verifier/bytecode.py
        del env["PYTHONDONTWRITEBYTECODE"]
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def child_env(
    autoload: bool,
    testenv: TestEnv | None,
    tree: Path,
    first: Sequence[Path] = (),
    *,
    write_bytecode: bool = False,
) -> dict[str, str]:
    """The test process's environment: cleaned, ``PYTHONPATH`` only from the contract (and the
    verifier's injected folder), the contract's variables on top."""
    env = clean_env(autoload, write_bytecode=write_bytecode)
    env.pop("PYTHONPATH", None)
    env["PYTHONNOUSERSITE"] = "1"
    if testenv is not None:
        env.update(testenv.env)
        path = testenv.child_pythonpath(tree, first)
    else:
        path = os.pathsep.join(str(p) for p in first)
    if path:
        env["PYTHONPATH"] = path
    return env


def inject_inner(folder: Path) -> Path:
    """Copy the in-test-process package into ``folder`` as ``_loopcontract_inner``; returns
    the folder to put on the child's path. A copy, so the test environment needs no install
    of pytest-loopcontract and nothing of the verifier beyond these stdlib-only files."""
    source = Path(__file__).with_name("inner")
    target = folder / INNER_NAME
    target.mkdir(parents=True)
    for module in source.glob("*.py"):
        shutil.copyfile(module, target / module.name)
    return folder


FORGED = "the results file is not signed with this run's key (written by something else)"


def _read_results(path: Path, key: bytes) -> tuple[RunResults | None, str]:
    """The results the injected collector signed with ``key``; a file that is there but not
    signed with it is :data:`FORGED` (the code under test wrote it)."""
    if not path.exists():
        return None, "the plugin wrote no results (the process died or the plugin never loaded)"
    if path.stat().st_size > RESULTS_LIMIT:
        return None, f"results file larger than {RESULTS_LIMIT} bytes"
    signature, _, body = path.read_bytes().partition(b"\n")
    expected = hmac.new(key, body, sha256).hexdigest().encode("ascii")
    if not hmac.compare_digest(signature, expected):
        return None, FORGED
    try:
        return RunResults.from_json(json.loads(body.decode("utf-8"))), ""
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"results file unreadable: {exc}"


def _read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _pytest_argv(
    python: str,
    workdir: Path,
    *,
    autoload: bool,
    plugins: Sequence[str],
    extra_args: Sequence[str],
    coverage_data: Path | None,
) -> list[str]:
    argv = [python]
    if coverage_data is not None:
        argv += ["-m", "coverage", "run", f"--data-file={coverage_data}"]
    argv += ["-m", "pytest", "-p", INNER_NAME]
    if not autoload:
        for name in plugins:
            argv += ["-p", name]
    return [
        *argv,
        "-p",
        "no:cacheprovider",
        # A candidate that breaks one module's import still gets every other test run;
        # the broken file's tests count as errors, not as an interrupted run.
        "--continue-on-collection-errors",
        f"--rootdir={workdir}",
        f"--confcutdir={workdir}",
        *extra_args,
    ]


@contextlib.contextmanager
def _args_file(path: Path, args: Sequence[str]) -> Iterator[int | None]:
    """An open descriptor on ``args`` for bwrap's ``--args`` (NUL-separated; thousands of
    binds would not fit on a command line), or None when there are none."""
    if not args:
        yield None
        return
    path.write_bytes(b"".join(a.encode() + b"\0" for a in args))
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def _wait_watched(
    proc: subprocess.Popen[bytes], timeout: float, poll: Callable[[], None] | None
) -> int:
    """``proc.wait(timeout)``, calling ``poll`` every :data:`phases.COUNT_INTERVAL` seconds
    meanwhile when someone watches (without, one plain wait: nothing changes)."""
    if poll is None:
        return proc.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            return proc.wait(timeout=max(0.0, min(phases.COUNT_INTERVAL, left)))
        except subprocess.TimeoutExpired:
            if left <= phases.COUNT_INTERVAL:
                raise
        poll()


def _wait(
    proc: subprocess.Popen[bytes], timeout: float, poll: Callable[[], None] | None = None
) -> tuple[int | None, bool]:
    """Wait for the confined run; on timeout ask the reaper to end it, then kill the group.
    Stopped (Ctrl-C, SIGTERM) or failed while waiting, the run is ended the same way, with a
    shorter grace, before the exception goes on: nothing of it outlives this call."""
    try:
        return _wait_watched(proc, timeout, poll), False
    except subprocess.TimeoutExpired:
        pass
    except BaseException:
        _end(proc, STOP_GRACE)
        raise
    _end(proc, TERM_GRACE)
    return None, True


def _end(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the run's leader (the reaper kills what it holds; bwrap takes its PID
    namespace down with it), then SIGKILL to its group after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        kill_group(proc)


def _spawn_confined(
    confined: Confinement,
    argv: list[str],
    *,
    tree: Path,
    writable: Sequence[Path],
    binds: contextlib.AbstractContextManager[int | None],
    env: Mapping[str, str],
    output: Path,
    timeout: float,
    poll: Callable[[], None] | None = None,
) -> tuple[int | None, bool]:
    """Start ``argv`` confined (the frozen binds passed to bwrap on a descriptor), its output
    to ``output``, and wait for it (calling ``poll`` meanwhile, if given)."""
    with binds as fd, output.open("wb") as out:
        command = confined.command(argv, tree=tree, writable=writable, args_fd=fd)
        proc = spawn(
            command,
            cwd=tree,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            pass_fds=() if fd is None else (fd,),
        )
        return _wait(proc, timeout, poll)


def _inner_settings(
    private: Path,
    raw: Path,
    nonce: str,
    egress: Sequence[str] | None,
    aliases: Sequence[Path],
    count: Path | None = None,
    *,
    key: bytes,
    referee: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, str]:
    """The variables that tell the injected collector where its settings file is (written
    here: results path, nonce, the signing key, the referee's plan, egress policy, the live
    count's file, the node ids a rerun is limited to; the collector deletes it once read) and
    where else the tree is seen."""
    settings = private / "inner.json"
    data: dict[str, Any] = {"raw": str(raw), "nonce": nonce, "egress": egress, "key": key.hex()}
    if only is not None:
        data["only"] = list(only)
    if count is not None:
        data["count"] = str(count)
    if referee is not None:
        data["referee"] = dict(referee)
    if policy is not None:
        data["policy"] = dict(policy)
    settings.write_text(json.dumps(data), "utf-8")
    env = {CONFIG_ENV: str(settings)}
    if aliases:
        env["LOOP_CONTRACT_ROOT_ALIASES"] = os.pathsep.join(map(str, aliases))
    return env


def run_pytest(
    workdir: Path,
    *,
    nonce: str,
    autoload: bool,
    plugins: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    timeout: float = 1800.0,
    coverage_data: Path | None = None,
    testenv: TestEnv | None = None,
    confinement: Confinement | None = None,
    egress: Sequence[str] | None = None,
    frozen: Sequence[str] = (),
    write_bytecode: bool = False,
    count_tests: bool = False,
    referee: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
) -> PytestRun:
    """Run the suite in ``workdir`` under the reaper, confined; nothing it started survives
    this call. Results and output land in a private temp folder. In the sandbox the
    ``frozen`` paths (the referee's files, relative to ``workdir``) are read-only. With
    ``count_tests`` and a listener (:mod:`.phases`), the live test count goes to it;
    ``referee`` is the plan of copies, twins and canaries (:mod:`tamper.twins`); ``policy``
    the capability policy's settings (:mod:`tamper.capabilities`). ``only`` limits the run to
    those node ids, whatever paths ``extra_args`` names (pytest decides which of its
    arguments are paths; the injected plugin replaces them)."""
    python = testenv.python if testenv is not None else sys.executable
    confined = confinement or Confinement(PROCESS)
    with scratch_folder("loopcontract-run-") as private:
        injected = inject_inner(private / "inject")
        raw, output, report = private / "results.json", private / "output.log", private / "reaper"
        env = child_env(autoload, testenv, workdir, [injected], write_bytecode=write_bytecode)
        listener = phases.active() if count_tests else None
        count = private / "count" if listener is not None else None
        key = secrets.token_bytes(32)
        env.update(
            _inner_settings(
                private,
                raw,
                nonce,
                egress,
                confined.aliases,
                count,
                key=key,
                referee=referee,
                policy=policy,
                only=only,
            )
        )
        poll = _count_poller(count, listener) if count and listener else None
        argv = _pytest_argv(
            python,
            workdir,
            autoload=autoload,
            plugins=plugins,
            extra_args=extra_args,
            coverage_data=coverage_data,
        )
        reaper = [python, "-I", "-S", str(injected / INNER_NAME / "reaper.py"), str(report), "--"]
        writable = [private, *([coverage_data.parent] if coverage_data else [])]
        started = time.monotonic()
        code, timed_out = _spawn_confined(
            confined,
            [*reaper, *argv],
            tree=workdir,
            writable=writable,
            binds=_args_file(private / "frozen.args", confined.frozen_binds(workdir, frozen)),
            env=env,
            output=output,
            timeout=timeout,
            poll=poll,
        )
        duration = time.monotonic() - started
        if poll is not None:
            poll()  # the last count the run wrote
        return _collect_run(private, code, timed_out, duration, confined.mode, key)


def _collect_run(
    private: Path, code: int | None, timed_out: bool, duration: float, isolation: str, key: bytes
) -> PytestRun:
    """The run as its private folder tells it: the reaper's report (what it swept), the
    signed results and the output's tail. The exit code is the one this process waited for
    (the sandbox and the reaper pass the test process's own on); the reaper's report only
    explains a signal (its exit code is 128 plus the signal's number)."""
    swept = _read_report(private / "reaper")
    reported = swept.get("exit_code")
    if isinstance(reported, int) and code == (reported if reported >= 0 else 128 - reported):
        code = reported
    results, error = _read_results(private / "results.json", key)
    return PytestRun(
        code,
        results,
        error,
        read_tail(private / "output.log", TAIL_BYTES),
        duration,
        timed_out,
        isolation=isolation,
        leftovers=tuple(swept.get("leftovers") or ()),
        key=key,
        forged=error == FORGED,
    )


def _count_poller(path: Path, listener: phases.Listener) -> Callable[[], None]:
    """Read the collector's count file and pass a changed count on (display only)."""
    last: list[tuple[int, int | None] | None] = [None]

    def poll() -> None:
        now = phases.read_count(path)
        if now is not None and now != last[0]:
            last[0] = now
            listener.tests(*now)

    return poll


@dataclass(frozen=True)
class RunSetup:
    """The test environment and the confinement every run of one contract uses."""

    testenv: TestEnv
    confinement: Confinement

    def confine_command(self, tree: Path) -> Callable[[list[str]], list[str]]:
        """For a contract's own commands (gates, sensors): same sandbox, no extra mounts."""
        return lambda argv: self.confinement.command(argv, tree=tree, writable=())

    def command_env(self, tree: Path) -> dict[str, str]:
        return child_env(True, self.testenv, tree)

    def describe(self, run: PytestRun) -> dict[str, Any]:
        return {
            "mode": run.isolation,
            "note": self.confinement.note,
            "leftovers": [dict(p) for p in run.leftovers],
        }


def prepare_run(
    root: Path,
    contract: Contract,
    *,
    python: str | None = None,
    verdict_path: Path | None = None,
) -> RunSetup:
    """Probe the project's interpreter and choose the confinement (raises
    :class:`SandboxUnavailable` when the contract requires a sandbox that cannot start)."""
    settings = contract.pytest
    testenv = probe_test_env(
        resolve_python(root, python, settings.python), settings.pythonpath, settings.env
    )
    hidden = [StateDir.of(root).folder]
    if verdict_path is not None:
        hidden.append(verdict_path.resolve().parent)
    confinement = choose_confinement(
        contract.isolation,
        network=contract.egress_allow is None or bool(contract.egress_allow),
        hidden=hidden,
        aliases=[root.resolve()],
        readable=(*testenv.readable, VERIFIER_HOME),
        writable=extra_writable(),
    )
    return RunSetup(testenv, confinement)
