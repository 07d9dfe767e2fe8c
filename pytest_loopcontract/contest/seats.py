"""Seats: run one agent command, as a candidate's author or as a judge, and record what it did.

A seat is a program the contest does not trust and cannot fix: it may hang, print gigabytes,
spawn helpers that outlive it, refuse the task, crash, or not be installed at all. Running it
must still end with one honest record, so:

* **No shell, ever.** The command is an argument list from the contract; placeholders such as
  ``{workdir}`` are replaced inside each argument, so a path with spaces or quotes stays one
  argument and nothing is ever parsed by a shell.
* **The whole process group is the seat.** Each seat leads its own session. At its timeout the
  group gets SIGTERM, then SIGKILL after a short grace; when the seat exits on its own, helpers
  it left behind in its group are killed too, so nothing keeps editing a worktree after its
  candidate was captured. The leader is reaped only after the group was signalled, so its
  process-group id cannot be recycled under us.
* **Output costs no memory.** stdout and stderr are drained in threads; only the first and the
  last 64 KiB are kept, with the byte count, so a seat printing gigabytes is just a number.
* **Cost is reported, never estimated.** Tokens and dollars come from the seat's own report
  file or a seat adapter; when neither says, the record says ``None``.
* **One extension point decides the outcome.** The process facts (exit code, signal, timeout)
  go through the ``loopcontract_seat_result`` hook; the built-in implementation reads the
  report file, and a plugin for a given agent CLI can tell refusal from failure by its output.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_loopcontract import hooks, hookspecs
from pytest_loopcontract.contest.seat_model import (
    KEEP_BYTES,
    Seat,
    SeatRun,
    apply_report,
    expand_argv,
    read_report,
)
from pytest_loopcontract.processes import Capture, kill_group, signal_group, spawn, start_pump
from pytest_loopcontract.verifier.sandbox import (
    SANDBOX,
    Confinement,
    choose_confinement,
    extra_writable,
)

__all__ = [
    "KILL_GRACE_SECONDS",
    "RUNNER_VARS_KEPT",
    "clean_environ",
    "program_prefixes",
    "run_seat",
    "runner_folders",
    "seat_box",
    "seat_result",
]

KILL_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL at a timeout: time to flush a report, not to keep working."""

PIPE_GRACE_SECONDS = 2.0
"""How long to wait for the output pipes to close once the whole group is dead. Only a process
that escaped the group (its own ``setsid``) can hold them longer."""
# A seat's git commands must act on its own worktree, not on a repository the caller happens
# to be inside (for instance when the contest runs from a git hook).
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
# A seat or a judge is untrusted code reading candidate diffs; in the publish job it would
# otherwise inherit the write token and the runner's own credentials (ACTIONS_RUNTIME_TOKEN,
# ACTIONS_ID_TOKEN_REQUEST_TOKEN, ...). None of these reaches it; a seat's own secret is given
# through ``env_extra`` by whoever dispatches it.
_TOKEN_VARS = frozenset(
    {"LOOP_CONTRACT_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}
)
_RUNNER_PREFIXES = ("GITHUB_", "ACTIONS_", "RUNNER_")
#: The only runner variables a seat sees: that it runs in Actions, and on which platform.
RUNNER_VARS_KEPT = frozenset({"GITHUB_ACTIONS", "RUNNER_OS", "RUNNER_ARCH"})


def run_seat(
    seat: Seat,
    role: str,
    *,
    cwd: Path,
    values: Mapping[str, str],
    report_file: Path,
    env_extra: Mapping[str, str] | None = None,
    confinement: Confinement | None = None,
) -> SeatRun:
    """Run ``seat`` as ``role`` (``candidate`` runs its ``generate`` command, ``judge`` its
    ``judge`` command) in ``cwd`` and return what happened. Never raises for anything the seat
    does; raises ``ValueError`` for a caller's mistake (no such command, no such ``cwd``).

    ``values`` fills the placeholders; ``{report_file}`` is always ``report_file`` (made
    absolute; a stale one from an earlier run is deleted first). The seat's environment is this
    process's through :func:`clean_environ` (no token, no runner credentials, nothing that
    points git elsewhere), plus
    ``LOOP_CONTRACT_REPORT``, ``LOOP_CONTRACT_ROLE``, ``LOOP_CONTRACT_SEAT`` and ``env_extra``.
    stdin is ``/dev/null``. The outcome goes through the ``loopcontract_seat_result`` hook.
    ``confinement``: where the command runs (:func:`seat_box`); None runs it unconfined.
    """
    template = seat.command(role)
    cwd = Path(cwd)
    if not cwd.is_dir():
        raise ValueError(f"seat {seat.name!r}: working directory {cwd} does not exist")
    report_file = Path(report_file).absolute()
    report_file.parent.mkdir(parents=True, exist_ok=True)
    report_file.unlink(missing_ok=True)  # a report left by an earlier run must not count
    command = tuple(expand_argv(template, _with_folders(values, report_file)))
    env = _seat_env(seat, role, report_file, env_extra)
    base = SeatRun(
        seat=seat.name, family=seat.family, role=role, status="ok", command=command,
        exit_code=None, seconds=0.0,
    )  # fmt: skip
    problem = _program_problem(command[0], cwd, env.get("PATH"))
    if problem is not None:
        raw = replace(base, status="unavailable", reason=problem)
    else:
        argv = command
        if confinement is not None and confinement.mode == SANDBOX:
            env.update(private_home(seat, report_file.parent / f"{role}-home", env))
        if confinement is not None:
            named = _named_paths(command, (Path.home(), *confinement.hidden))
            shown = replace(confinement, readable=(*confinement.readable, *named))
            argv = tuple(shown.command(command, tree=cwd, writable=[report_file.parent]))
        raw = _execute(base, argv, cwd=cwd, env=env, timeout=seat.timeout)
    return seat_result(seat, raw, report_file)


def seat_box(
    seat: Seat,
    role: str,
    *,
    required: bool,
    hidden: Sequence[Path] = (),
    readable: Sequence[Path] = (),
) -> Confinement:
    """The sandbox ``seat`` runs in as ``role`` (bubblewrap, as for verification): its own PID
    namespace that dies with it, so no process of the job (nor its environment in ``/proc``)
    is in sight; an empty, private home and ``/tmp``; the file system read-only but its
    working folder and its report folder; ``hidden`` behind empty folders, ``readable`` and the
    program's installation (:func:`program_prefixes`) shown again inside them, and
    ``$LOOP_CONTRACT_SANDBOX_WRITABLE`` writable as for a verified run. The network stays: the
    seat talks to its model. ``required``: no sandbox is an error
    (:class:`.SandboxUnavailable`), else the seat runs unconfined."""
    program = seat.command(role)[0]
    shown = [*readable, *program_prefixes(program, os.environ.get("PATH"))]
    return choose_confinement(
        SANDBOX if required else "auto",
        network=True,
        hidden=hidden,
        readable=[path.resolve() for path in shown],
        writable=extra_writable(),
    )


def _named_paths(command: Sequence[str], hidden: Sequence[Path]) -> list[Path]:
    """The folders of the absolute paths a seat's command names (its script, its prompt): the
    contract chose them, so the sandbox shows them (read-only); never one that holds a hidden
    folder (``/``, the home), which would show that folder again."""
    found = []
    for word in command[1:]:
        path = Path(word)
        if not (path.is_absolute() and path.exists()):
            continue
        folder = (path if path.is_dir() else path.parent).resolve()
        if not any(h.resolve().is_relative_to(folder) for h in hidden):
            found.append(folder)
    return found


def runner_folders(environ: Mapping[str, str]) -> list[Path]:
    """A runner's folders a seat or a judge has no business seeing: the job's temporary folder
    (the action's venv, artifacts, other steps' files) and the workspace (the home, where the
    runner keeps its credentials, is hidden anyway)."""
    names = ("RUNNER_TEMP", "GITHUB_WORKSPACE")
    return [Path(environ[name]) for name in names if environ.get(name)]


def program_prefixes(program: str, path: str | None) -> list[Path]:
    """The installations a seat's program needs: the one it lives in (two levels above it,
    before and after following links: a venv's or npm's ``bin`` folder and what it belongs
    to), its script interpreter's (``#!``), and this Python's (seat scripts often run it)."""
    places = {Path(sys.prefix), Path(sys.base_prefix)}
    found = shutil.which(program, path=path) if "/" not in program else program
    if found and "{" not in program:  # a placeholder: the folder it names is shown anyway
        for step in (Path(found), _interpreter(Path(found))):
            if step is not None:
                places |= {step.absolute().parent.parent, step.resolve().parent.parent}
    return sorted(place for place in places if place != Path("/"))


def _interpreter(program: Path) -> Path | None:
    """The interpreter a ``#!`` line names (``/usr/bin/env X``: X on PATH), or None."""
    try:
        with program.open("rb") as fh:
            line = fh.readline(512)
    except OSError:
        return None
    if not line.startswith(b"#!"):
        return None
    words = line[2:].decode("utf-8", "replace").split()
    if words and words[0].endswith("/env") and len(words) > 1:
        words = [shutil.which(words[1]) or words[1]]
    return Path(words[0]) if words and words[0].startswith("/") else None


_CLI_CONFIG: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "claude-code": ("HOME", "", (".claude.json", ".claude/settings.json",
                                 ".claude/.credentials.json")),
    "codex": ("CODEX_HOME", ".codex", ("config.toml", "auth.json")),
    "gemini": ("HOME", "", (".gemini/settings.json", ".gemini/oauth_creds.json",
                            ".gemini/google_accounts.json")),
}  # fmt: skip
"""Per preset: the variable naming the CLI's configuration folder, its default under the
home, and the few files (settings, the seat's own credentials) a headless run needs."""


def private_home(seat: Seat, folder: Path, env: Mapping[str, str]) -> dict[str, str]:
    """A writable home of the seat's own for a run in the sandbox, which hides the user's home
    and ``/tmp``: without it an agent CLI loses its settings and its login (Gemini CLI exits 41
    with no auth type, Codex forgets its provider). Only the CLI's configuration files are
    copied in, never its history; returns the variables that point the CLI there."""
    folder.mkdir(parents=True, exist_ok=True)
    chosen = {"HOME": str(folder)}
    spec = _CLI_CONFIG.get(seat.agent or "")
    if spec is None:
        return chosen
    variable, default, files = spec
    home = Path(env.get("HOME") or Path.home())
    source = home if variable == "HOME" else Path(env.get(variable) or home / default)
    target = folder if variable == "HOME" else folder / default
    for name in files:
        found = source / name
        if found.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found, target / name)
            (target / name).chmod(0o600)
    if variable != "HOME":
        target.mkdir(parents=True, exist_ok=True)
        chosen[variable] = str(target)
    return chosen


def _with_folders(values: Mapping[str, str], report_file: Path) -> dict[str, str]:
    """The placeholder values plus ``{prompt_dir}``/``{packet_dir}``: an agent CLI whose file
    tools only reach named folders (Gemini's ``--include-directories``) is given the folder."""
    filled = {**values, "report_file": str(report_file)}
    for name in ("prompt", "packet"):
        path = values.get(f"{name}_file")
        if path and f"{name}_dir" not in values:
            filled[f"{name}_dir"] = str(Path(path).absolute().parent)
    return filled


def _seat_env(
    seat: Seat, role: str, report_file: Path, env_extra: Mapping[str, str] | None
) -> dict[str, str]:
    env = clean_environ(os.environ)
    env.update(
        LOOP_CONTRACT_REPORT=str(report_file),
        LOOP_CONTRACT_ROLE=role,
        LOOP_CONTRACT_SEAT=seat.name,
    )
    env.update(env_extra or {})
    return env


def clean_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without tokens, the runner's ``GITHUB_*``/``ACTIONS_*``/``RUNNER_*``
    variables (except :data:`RUNNER_VARS_KEPT`) and the variables that point git elsewhere."""
    return {
        key: value
        for key, value in environ.items()
        if key not in _TOKEN_VARS
        and key not in _GIT_LOCATION_VARS
        and (key in RUNNER_VARS_KEPT or not key.startswith(_RUNNER_PREFIXES))
    }


def _program_problem(program: str, cwd: Path, path: str | None) -> str | None:
    """Why ``program`` cannot be started, or ``None`` if it looks startable."""
    if not program:
        return "the command's program is empty"
    if "/" in program:
        target = Path(program) if os.path.isabs(program) else cwd / program
        if not target.exists():
            return f"program {program!r} not found"
        if target.is_dir() or not os.access(target, os.X_OK):
            return f"program {program!r} is not executable"
        return None
    search = path if path is not None else os.defpath
    if shutil.which(program, path=search) is not None:
        return None
    for folder in search.split(os.pathsep):
        if os.path.isfile(os.path.join(folder or ".", program)):
            return f"program {program!r} is on PATH but not executable"
    return f"program {program!r} not found on PATH"


def _start_thread(target: Any, *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def _await_exit(pid: int, done: threading.Event) -> None:
    """Block until the child exits without reaping it (``WNOWAIT``): while it is an unreaped
    zombie its pid, and so its process-group id, cannot be reused by an unrelated process."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    done.set()


def _reap(proc: subprocess.Popen[bytes], done: threading.Event) -> None:
    proc.wait()
    done.set()


def _execute(
    base: SeatRun, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> SeatRun:
    started = time.monotonic()
    try:
        proc = spawn(argv, cwd=cwd, env=env)
    except OSError as exc:
        detail = exc.strerror or str(exc)
        return replace(
            base, status="unavailable", reason=f"cannot start {base.command[0]!r}: {detail}"
        )
    out = Capture(KEEP_BYTES, KEEP_BYTES)
    err = Capture(0, KEEP_BYTES)
    pumps = [start_pump(proc.stdout, out), start_pump(proc.stderr, err)]
    exited = threading.Event()
    if hasattr(os, "waitid"):
        waiter = _start_thread(_await_exit, proc.pid, exited)
    else:  # pragma: no cover - platforms without waitid reap at once and accept the pid race
        waiter = _start_thread(_reap, proc, exited)
    timed_out = False
    try:
        if not exited.wait(timeout):
            timed_out = True
            signal_group(proc.pid, signal.SIGTERM)
            exited.wait(KILL_GRACE_SECONDS)
        seconds = time.monotonic() - started
    finally:
        # SIGKILL whatever is left of the group (helpers the seat left behind, or everything
        # at a timeout or an interrupt), then reap the leader.
        kill_group(proc)
    waiter.join()
    notes: list[str] = []
    for pump in pumps:
        pump.join(PIPE_GRACE_SECONDS)
    if any(pump.is_alive() for pump in pumps):
        notes.append("output pipes held open by a process outside the seat's group")
    code = proc.returncode
    head, tail, total = out.snapshot()
    _, err_tail, err_total = err.snapshot()
    if timed_out:
        status, reason = "timeout", f"timed out after {timeout:g}s; process group killed"
    elif code < 0:
        status, reason = "error", f"killed by signal {_signal_name(-code)}"
    elif code != 0:
        status, reason = "error", f"exited {code}"
    else:
        status, reason = "ok", ""
    return replace(
        base,
        status=status,
        reason=reason,
        exit_code=code if code >= 0 else None,
        seconds=round(seconds, 3),
        stdout_head=_decode(head, cut_before=False, cut_after=total > len(head)),
        stdout_tail=_decode(tail, cut_before=total > len(head) + len(tail), cut_after=False),
        stdout_bytes=total,
        stderr_tail=_decode(err_tail, cut_before=err_total > len(err_tail), cut_after=False),
        notes=tuple(notes),
    )


def _signal_name(number: int) -> str:
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def _decode(data: bytes, *, cut_before: bool, cut_after: bool) -> str:
    """UTF-8 with replacement; a character split by a cut is dropped rather than mangled."""
    if cut_before:
        skip = 0
        while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
            skip += 1
        data = data[skip:]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return decoder.decode(data, final=not cut_after)


class _ReportReading:
    """The built-in reading of a run: the seat's own report file folded into the record."""

    @hookspecs.hookimpl(trylast=True)
    def loopcontract_seat_result(self, run: SeatRun, report_file: Path) -> SeatRun:
        return apply_report(run, read_report(report_file))


class _Presets:
    """The agent presets' seat adapter, imported when a seat's run is first read: the plugin
    manager also serves the verdict hook of every ``pytest --loop-contract`` run, which must
    not load five agent presets to call it. Registered before the report reading: pluggy asks
    the ``trylast`` implementations last-registered last, so the presets answer first."""

    @hookspecs.hookimpl(trylast=True)
    def loopcontract_seat_result(
        self, seat: Seat, run: SeatRun, report_file: Path
    ) -> SeatRun | None:
        from pytest_loopcontract.contest.presets.adapter import PresetAdapter

        return PresetAdapter().loopcontract_seat_result(seat, run, report_file)


def seat_result(seat: Seat, run: SeatRun, report_file: Path) -> SeatRun:
    """The classified run: the first seat adapter's answer, else the built-in report reading.
    A contest must not crash because an adapter did: if one raises or answers with something
    that is not a ``SeatRun``, the built-in reading is used and a note says why.
    """
    hooks.with_builtin(_Presets(), "presets")
    hook = hooks.with_builtin(_ReportReading(), "report-reading").hook.loopcontract_seat_result
    try:
        result = hook(seat=seat, run=run, report_file=report_file)
    except Exception as exc:
        problem = f"seat adapter failed ({type(exc).__name__}: {exc})"
    else:
        if isinstance(result, SeatRun):
            return result
        if result is None:
            return run
        problem = f"seat adapter answered {type(result).__name__}, not a SeatRun"
    fallback = apply_report(run, read_report(report_file))
    return replace(fallback, notes=(*fallback.notes, f"{problem}; built-in reading used"))
