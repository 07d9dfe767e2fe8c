#!/usr/bin/env python
"""What ``loop-contract verify`` costs over the plain pytest run it replaces, in CPU seconds of
the whole process tree, and where that extra goes.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_verifier_cpu.py [--suites 216,2000] [--repeat 7] [--phase-runs 3]
                                            [--before DIR] [--checks-variants] [--tag X]

**Accounting.** Each run gets a cgroup of its own, created for it and removed after it: the
command is moved into it before it starts (cgroup v2: ``cpu.stat`` ``usage_usec``; v1:
``cpuacct.usage``), so every process it starts is counted, the sandboxed ones too (bubblewrap's
PID namespace hides them from ``getrusage``, and ``/usr/bin/time`` misses them). Wall time is
recorded beside it. Where no cgroup can be created the benchmark falls back to
``getrusage(RUSAGE_CHILDREN)`` and says so in its results: sandboxed children may be missed.

**As users run it.** The anchor is plain pytest the way a developer runs it: plugin autoload
on, the cache provider on, bytecode written and read (the warm-up round fills the repository's
``__pycache__`` folders, as any earlier run would have). ``verify`` runs with the same
environment; what it compiles every time (the injected plugin, the candidate's changed files,
in a fresh scratch copy with bytecode writes off) is its own cost. For comparison, "plain
pytest, no bytecode" is the old anchor (``PYTHONDONTWRITEBYTECODE=1``, autoload off).

**The suites** are generated fixtures (``--suites``, test counts): N trivially passing tests
in about N/20 files (216 tests: 12 files; 2,000: 100 files; half plain functions, half
parametrized), a conftest fixture, a fix-mode contract whose one acceptance test fails at the
base commit, the baseline taken, the one-line fix left uncommitted in the work tree.

**Rounds.** One untimed warm-up round, then ``--repeat`` rounds; in each round every variant
runs once, the starting variant rotated. Reported per variant: median, min, max, the spread
(max - min), and per round the ratio and the difference to the anchor of that round (paired),
with their median and range. A target is PASS or MISS on the medians, and "within spread"
when the range of the paired figures straddles it.

**Phases** (``--phase-runs``, per suite): ``verify`` through the benchmark's own entry (the
same clean re-exec as ``loop-contract``), which wraps the functions ``verify()`` looks up and
runs its threads' work in line, so each phase's CPU is the cgroup's usage across it (the
process tree's: git, the probe, bubblewrap, the reaper and pytest included). Inside the run's
spawn it then starts, for measurement only and not counted in the phases' total: bubblewrap
with the run's own bind mounts around ``/bin/true``; the same with the reaper; and a pytest
start (the interpreter, pytest and the allow-listed plugins, ``--version``) in the sandbox,
which is what a second pytest run costs before its first test. It also times compiling the
injected plugin's sources (they are copied fresh for every run and never cached).

Targets (issue 34): verify at most plain pytest + 0.5 s CPU on the ~200-test suite, at most
1.25x plain pytest CPU on the 2,000-test one. Results go to
``benchmarks/results/verifier-cpu-<date>[-tag].{json,txt}``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_verifier as bv

ANCHOR = "plain pytest"
NO_PYC = "plain pytest, no bytecode (old anchor)"
VERIFY = "verify (sandbox)"
PROCESS = "verify (process isolation)"
CHECKS_OFF = "verify (sandbox, checks off)"
OUTCOMES_OFF = "verify (sandbox, outcome checks off)"
BEFORE = " [before]"

TARGET_SMALL_EXTRA_S = 0.5  # the ~200-test suite: at most plain pytest + 0.5 s CPU
TARGET_LARGE_RATIO = 1.25  # the 2,000-test suite: at most 1.25x plain pytest CPU
SMALL_SUITE_MAX = 500  # suites up to this many tests are judged by the difference


# ---------------------------------------------------------------------------------------------
# CPU of a whole process tree
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    cpu: float
    user: float
    system: float
    wall: float
    code: int


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, type, options) of this process's mounts."""
    try:
        text = Path("/proc/self/mounts").read_text("utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append((parts[1], parts[2], parts[3]))
    return out


def _own_cgroup(controller: str) -> str:
    """This process's cgroup path in the hierarchy of ``controller`` ('' for cgroup v2)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text("utf-8").splitlines():
            _, names, path = line.split(":", 2)
            if names.split(",").count(controller) or (controller == "" and names == ""):
                return path
    return "/"


class CpuMeter:
    """Runs a command in a cgroup of its own and reads that cgroup's CPU time after it."""

    def __init__(self) -> None:
        self.kind, self.parent, self.note = "rusage", Path(), ""
        for kind, parent in self._candidates():
            if self._works(kind, parent):
                self.kind, self.parent = kind, parent
                break
        else:
            self.note = (
                "no cgroup could be created here: CPU is getrusage(RUSAGE_CHILDREN), which "
                "misses processes their parent does not wait for (bubblewrap's sandboxed "
                "children may be missed)"
            )
        self._serial = 0

    @staticmethod
    def _candidates() -> Iterator[tuple[str, Path]]:
        for point, fstype, _options in _mounts():
            if fstype == "cgroup2":
                yield "cgroup2", Path(point + _own_cgroup("").rstrip("/"))
        for point, fstype, options in _mounts():
            if fstype == "cgroup" and "cpuacct" in options.split(","):
                yield "cgroup1-cpuacct", Path(point + _own_cgroup("cpuacct").rstrip("/"))

    def _works(self, kind: str, parent: Path) -> bool:
        probe = parent / f"loopcontract-bench-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            return False
        try:
            wanted = "cpu.stat" if kind == "cgroup2" else "cpuacct.usage"
            return (probe / wanted).exists() and os.access(probe / "cgroup.procs", os.W_OK)
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()

    @property
    def method(self) -> str:
        if self.kind == "cgroup2":
            return f"cgroup v2 ({self.parent}/<one group per run>/cpu.stat usage_usec)"
        if self.kind == "cgroup1-cpuacct":
            return f"cgroup v1 cpuacct ({self.parent}/<one group per run>/cpuacct.usage)"
        return "getrusage(RUSAGE_CHILDREN)"

    @contextlib.contextmanager
    def group(self) -> Iterator[Path | None]:
        """A fresh cgroup (None in the rusage fallback), removed once its processes are gone."""
        if self.kind == "rusage":
            yield None
            return
        self._serial += 1
        path = self.parent / f"loopcontract-bench-{os.getpid()}-{self._serial}"
        path.mkdir()
        try:
            yield path
        finally:
            self._drain(path)
            for _ in range(200):  # a namespace's last process may take a moment to go
                try:
                    path.rmdir()
                    break
                except OSError:
                    time.sleep(0.01)

    def _drain(self, path: Path) -> None:
        """Wait (up to 2 s) until no process is left in the group."""
        for _ in range(400):
            if self.kind == "cgroup2":
                events = (path / "cgroup.events").read_text("utf-8")
                if "populated 0" in events:
                    return
            elif not (path / "cgroup.procs").read_text("utf-8").strip():
                return
            time.sleep(0.005)

    def usage_file(self, path: Path) -> Path:
        return path / ("cpu.stat" if self.kind == "cgroup2" else "cpuacct.usage")

    def read(self, path: Path) -> tuple[float, float, float]:
        """(total, user, system) CPU seconds of the group so far."""
        if self.kind == "cgroup2":
            stat = dict(
                line.split() for line in (path / "cpu.stat").read_text("utf-8").splitlines()
            )
            return (
                int(stat["usage_usec"]) / 1e6,
                int(stat["user_usec"]) / 1e6,
                int(stat["system_usec"]) / 1e6,
            )
        total = int((path / "cpuacct.usage").read_text("utf-8")) / 1e9
        ticks = dict(
            line.split() for line in (path / "cpuacct.stat").read_text("utf-8").splitlines()
        )
        hz = os.sysconf("SC_CLK_TCK")
        return total, int(ticks["user"]) / hz, int(ticks["system"]) / hz

    def run(
        self, cmd: Sequence[str], cwd: Path, env: dict[str, str], log: Path, err: Path | None = None
    ) -> Measured:
        """Run ``cmd`` in a group of its own; stdout to ``log`` (stderr too, unless ``err``)."""
        with self.group() as path, log.open("wb") as out:
            errors = err.open("wb") if err is not None else None
            try:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                proc = subprocess.run(
                    list(cmd),
                    cwd=cwd,
                    env={**env, **({"LC_BENCH_CGROUP": str(path)} if path else {})},
                    stdout=out,
                    stderr=errors if errors is not None else subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_joiner(path) if path is not None else None,
                    check=False,
                )
                wall = time.perf_counter() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
            finally:
                if errors is not None:
                    errors.close()
            if path is None:
                user = after.ru_utime - before.ru_utime
                system = after.ru_stime - before.ru_stime
                return Measured(user + system, user, system, wall, proc.returncode)
            self._drain(path)
            total, user, system = self.read(path)
            return Measured(total, user, system, wall, proc.returncode)


def _joiner(path: Path) -> Callable[[], None]:
    """Runs in the child between fork and exec: moves it into ``path`` before it starts."""
    procs = str(path / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as fh:
            fh.write(str(os.getpid()))

    return join


# ---------------------------------------------------------------------------------------------
# the suites and the variants
# ---------------------------------------------------------------------------------------------


def user_env(before: str = "") -> dict[str, str]:
    """The environment a developer runs pytest in: bytecode on, plugin autoload on."""
    env = {k: v for k, v in os.environ.items() if k not in bv._DROPPED_ENV}
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if before:
        env["PYTHONPATH"] = before
    return env


def build_suite(workdir: Path, tests: int) -> tuple[Path, dict[str, Any]]:
    """The generated suite of ``tests`` trivial tests (see the module notes), baselined."""
    test_files = max(2, round(tests / 20))
    ns = argparse.Namespace(
        tests=tests, files=9 + test_files - 1, test_files=test_files, project_venv=False
    )
    folder = workdir / f"suite-{tests}"
    folder.mkdir()
    repo, info = bv.build_repo(folder, ns)
    return repo, info


def variants(out: Path, before: str, checks: bool) -> dict[str, tuple[list[str], dict[str, str]]]:
    cli = [bv.PY, "-m", "pytest_loopcontract", "verify", "--json"]
    plain = [bv.PY, "-m", "pytest", "-q"]
    sandbox = {**user_env(), "LOOP_CONTRACT_ISOLATION": "sandbox"}
    table: dict[str, tuple[list[str], dict[str, str]]] = {
        ANCHOR: (plain, user_env()),
        NO_PYC: ([*plain, "-p", "no:cacheprovider"], bv.bench_env()),
        VERIFY: (cli, sandbox),
        PROCESS: (cli, {**user_env(), "LOOP_CONTRACT_ISOLATION": "process"}),
    }
    if checks:
        table[CHECKS_OFF] = (bv.write_checks_off(out), sandbox)
        table[OUTCOMES_OFF] = (bv.write_checks_off(out, "lc_outcomes_off"), sandbox)
    if before:
        table[VERIFY + BEFORE] = (cli, {**sandbox, "PYTHONPATH": before})
    return table


def check_verdict(name: str, log: Path, problems: list[str]) -> None:
    if not name.startswith("verify"):
        return
    try:
        doc = json.loads(log.read_text("utf-8"))
    except ValueError:
        problems.append(f"{name}: unreadable --json output ({log})")
        return
    if doc.get("verdict") != "pass":
        problems.append(f"{name}: verdict {doc.get('verdict')} {doc.get('reasons')}")
    wanted = "process" if name.startswith(PROCESS) else "sandbox"
    if doc.get("isolation") != wanted:
        problems.append(f"{name}: isolation {doc.get('isolation')}, wanted {wanted}")
    ran = {c.get("id"): c.get("status") for c in doc.get("tamper", {}).get("checks", [])}
    if name in (VERIFY, PROCESS, VERIFY + BEFORE) and ran.get("twins") != "ran":
        problems.append(f"{name}: reward checks {ran}, wanted twins ran")


def measure_rounds(
    meter: CpuMeter,
    repo: Path,
    out: Path,
    table: dict[str, tuple[list[str], dict[str, str]]],
    repeat: int,
    log: Callable[[str], None],
) -> tuple[dict[str, list[Measured]], list[str]]:
    names = list(table)
    runs: dict[str, list[Measured]] = {n: [] for n in names}
    problems: list[str] = []
    for r in range(repeat + 1):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            command, env = table[name]
            logfile = out / "run.log"
            done = meter.run(command, repo, env, logfile, out / "run.err")
            if done.code != 0:
                problems.append(f"{name}: exit {done.code}: {logfile.read_text('utf-8')[-400:]}")
            check_verdict(name, logfile, problems)
            label = "(warm-up) " if r == 0 else f"round {r}: "
            log(f"    {label}{name:40s} {done.cpu:7.3f} s cpu {done.wall:7.3f} s wall")
            if r:
                runs[name].append(done)
        if r == 0 and problems:
            raise SystemExit("warm-up round failed:\n  " + "\n  ".join(problems))
    return runs, sorted(set(problems))


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 4),
        "min": round(ordered[0], 4),
        "max": round(ordered[-1], 4),
        "spread": round(ordered[-1] - ordered[0], 4),
    }


def summarise(runs: dict[str, list[Measured]]) -> dict[str, dict[str, Any]]:
    anchor = runs[ANCHOR]
    table = {}
    for name, done in runs.items():
        cpu = [d.cpu for d in done]
        table[name] = {
            "cpu_s": _spread(cpu),
            "wall_s": _spread([d.wall for d in done]),
            "user_s": round(statistics.median(d.user for d in done), 4),
            "system_s": round(statistics.median(d.system for d in done), 4),
            "cpu_runs_s": [round(x, 4) for x in cpu],
            "wall_runs_s": [round(d.wall, 4) for d in done],
            # paired with the anchor's run of the same round
            "cpu_ratio_paired": _spread([d.cpu / a.cpu for d, a in zip(done, anchor, strict=True)]),
            "cpu_extra_paired_s": _spread(
                [d.cpu - a.cpu for d, a in zip(done, anchor, strict=True)]
            ),
            "cpu_ratio_of_medians": round(
                statistics.median(cpu) / statistics.median(a.cpu for a in anchor), 4
            ),
            "cpu_extra_of_medians_s": round(
                statistics.median(cpu) - statistics.median(a.cpu for a in anchor), 4
            ),
        }
    return table


def judge(tests: int, table: dict[str, dict[str, Any]], name: str = VERIFY) -> dict[str, Any]:
    row = table[name]
    if tests <= SMALL_SUITE_MAX:
        value, bound = row["cpu_extra_of_medians_s"], TARGET_SMALL_EXTRA_S
        paired, text = row["cpu_extra_paired_s"], f"verify <= plain pytest + {bound} s CPU"
    else:
        value, bound = row["cpu_ratio_of_medians"], TARGET_LARGE_RATIO
        paired, text = row["cpu_ratio_paired"], f"verify <= {bound}x plain pytest CPU"
    status = "PASS" if value <= bound else "MISS"
    if paired["min"] <= bound <= paired["max"]:
        status += " (within spread)"
    return {"target": text, "value": value, "paired": paired, "status": status}


# ---------------------------------------------------------------------------------------------
# phases
# ---------------------------------------------------------------------------------------------

# Imported in the clean launcher process by the benchmark's entry (see bench_verifier's
# CHECKS_OFF_ENTRY) before the CLI dispatches. Standard library and the package only.
PHASES_MODULE = r'''
"""Per-phase CPU of one verify, from the cgroup this process runs in (bench_verifier_cpu)."""
import atexit, contextlib, functools, json, os, time
from concurrent import futures
from pathlib import Path

_GROUP = Path(os.environ["LC_BENCH_CGROUP"])
_V2 = (_GROUP / "cpu.stat").exists()


def usage():
    if _V2:
        for line in (_GROUP / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
    return int((_GROUP / "cpuacct.usage").read_text()) / 1e9


STARTED = usage()  # the entry's interpreter, the clean re-exec, this module's start
ROWS = {}
ORDER = []
EXTRA = {}  # measurement-only runs: not part of verify's cost
MARKS = {}


def add(label, cpu, wall, table=ROWS):
    if label not in table:
        if table is ROWS:
            ORDER.append(label)
        table[label] = [0.0, 0.0, 0]
    row = table[label]
    row[0] += cpu
    row[1] += wall
    row[2] += 1


def wrap(owner, name, label):
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*a, **k):
        c, w = usage(), time.monotonic()
        try:
            return fn(*a, **k)
        finally:
            add(label, usage() - c, time.monotonic() - w)

    setattr(owner, name, timed)


class SerialPool:
    """verify()'s threads, run in line: each phase's CPU is then the group's across it."""

    def __init__(self, *a, **k):
        pass

    def submit(self, fn, *a, **k):
        done = futures.Future()
        try:
            done.set_result(fn(*a, **k))
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def shutdown(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


c0 = usage()
from pytest_loopcontract.verifier import runner as R
from pytest_loopcontract.verifier import verify as V
MARKS["imports: the verifier's modules"] = usage() - c0

V.ThreadPoolExecutor = SerialPool
GROUPS = {
    "read the baseline and the contract": ("sweep_scratch", "load_baseline", "pinned_contract",
                                           "load_for_verify"),
    "git: read the candidate": ("read_candidate", "stale_baseline"),
    "environment probe (interpreter, sandbox)": ("_prepare_setup",),
    "diff evidence (static rules, git blobs)": ("_gather",),
    "export the scratch tree": ("make_scratch", "export_tree", "purge_bytecode", "restore_pins",
                                "write_pinned", "write_hidden", "seal"),
    "referee plan and digests": ("_plan", "_policy", "referee_digests"),
    "the run (run_pytest)": ("run_pytest",),
    "check the run, write the verdict": ("_referee", "run_findings", "referee_changes",
                                         "_after_run", "_capabilities", "_request_checkpoints",
                                         "evaluate", "scrub_quotes", "write_json_atomic",
                                         "remove_hidden", "remove_tree", "remove_tree_later"),
}
for label, names in GROUPS.items():
    for name in names:
        if hasattr(V, name):
            wrap(V, name, label)
wrap(R, "inject_inner", "  run: copy the injected plugin")
wrap(R, "_collect_run", "  run: read the signed results")
RUNS = []
_spawn, _args_file = R._spawn_confined, R._args_file
BINDS = []


@contextlib.contextmanager
def args_file(path, args):
    BINDS.append((path, list(args)))
    with _args_file(path, args) as fd:
        yield fd


def spawn(confined, argv, *, tree, writable, binds, env, output, timeout, poll=None):
    c, w = usage(), time.monotonic()
    result = _spawn(confined, argv, tree=tree, writable=writable, binds=binds, env=env,
                    output=output, timeout=timeout, poll=poll)
    add("  run: sandbox + reaper + pytest", usage() - c, time.monotonic() - w)
    RUNS.append(len(RUNS) + 1)
    if len(RUNS) > 1:
        return result
    cut = argv.index("--")
    pytest_argv = argv[cut + 1:]
    inner = pytest_argv.index("_loopcontract_inner")
    start = [*pytest_argv[:inner - 1], *pytest_argv[inner + 1:], "--version"]
    path, args = BINDS[-1]
    for label, cmd in (
        ("sandbox alone (bwrap, the run's binds, /bin/true)", ["/bin/true"]),
        ("sandbox + reaper (/bin/true)", [*argv[:cut + 1], "/bin/true"]),
        ("sandbox + reaper + pytest start (plugins, --version)", [*argv[:cut + 1], *start]),
    ):
        for _ in range(3):
            c, w = usage(), time.monotonic()
            _spawn(confined, cmd, tree=tree, writable=writable,
                   binds=_args_file(path.with_name("again.args"), args), env=env,
                   output=output.with_name("again.log"), timeout=120)
            add(label, usage() - c, time.monotonic() - w, EXTRA)
    EXTRA["frozen bind mounts"] = [len(args) // 3, 0.0, 1]
    # bytecode: the injected plugin is copied fresh for every run and compiled in it
    inject = Path(env["PYTHONPATH"].split(os.pathsep)[0]) / "_loopcontract_inner"
    t = time.process_time()
    for source in sorted(inject.glob("*.py")):
        if source.name != "reaper.py":
            compile(source.read_bytes(), str(source), "exec")
    add("compile the injected plugin (launcher's interpreter)", time.process_time() - t, 0.0,
        EXTRA)
    return result


R._spawn_confined = spawn
R._args_file = args_file
_verify = V.verify


def verify(*a, **k):
    MARKS["at verify()"] = usage()
    try:
        return _verify(*a, **k)
    finally:
        MARKS["after verify()"] = usage()


V.verify = verify
import pytest_loopcontract.cli.commands.verify as _command
if getattr(_command, "run_verification", None) is _verify:
    _command.run_verification = verify


@atexit.register
def _dump():
    out = os.environ.get("LC_BENCH_PHASES")
    if out:
        data = {"started": STARTED, "marks": MARKS, "rows": ROWS, "order": ORDER,
                "extra": EXTRA, "runs": len(RUNS), "at_exit": usage()}
        Path(out).write_text(json.dumps(data))
'''


def write_phases_entry(out: Path, before: str = "") -> list[str]:
    name = "lc_phases_before" if before else "lc_phases"
    (out / f"{name}.py").write_text(PHASES_MODULE, "utf-8")
    entry = out / f"lc_verify_{name}.py"
    entry.write_text(bv.CHECKS_OFF_ENTRY.replace("import lc_checks_off", f"import {name}"), "utf-8")
    return [bv.PY, str(entry), "verify", "--json"]


def measure_phases(
    meter: CpuMeter,
    repo: Path,
    out: Path,
    runs: int,
    before: str,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Per-phase CPU of ``runs`` instrumented verifies (with ``before``: interleaved with the
    older package's)."""
    if meter.kind == "rusage":
        return {"note": "phases need a cgroup (not available here)"}
    sides = {"after": ""} | ({"before": before} if before else {})
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for r in range(runs):
        for side, path in sides.items():
            command = write_phases_entry(out, path)
            env = {**user_env(path), "LOOP_CONTRACT_ISOLATION": "sandbox"}
            env["LC_BENCH_PHASES"] = str(out / "phases.json")
            done = meter.run(command, repo, env, out / "phases.log", out / "phases.err")
            if done.code != 0:
                raise SystemExit(
                    f"instrumented verify ({side}) exit {done.code}: "
                    + (out / "phases.err").read_text("utf-8")[-2000:]
                )
            data = json.loads((out / "phases.json").read_text("utf-8"))
            data["total_cpu"], data["total_wall"] = done.cpu, done.wall
            samples[side].append(data)
            log(f"    phases {side} {r + 1}/{runs}: {done.cpu:.3f} s cpu (instrumented)")
    return {side: _phase_table(found) for side, found in samples.items()}


def _phase_table(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians (and ranges) per phase over the instrumented runs."""
    rows: dict[str, list[float]] = {}

    def put(label: str, value: float) -> None:
        rows.setdefault(label, []).append(value)

    for data in samples:
        marks, extra = data["marks"], data["extra"]
        extra_cpu = sum(v[0] for k, v in extra.items() if k != "frozen bind mounts")
        at_verify = marks.get("at verify()", data["started"])
        after = marks.get("after verify()", data["at_exit"])
        put("launcher start (two interpreter starts: entry, clean re-exec)", data["started"])
        put("imports and CLI dispatch before verify()", at_verify - data["started"])
        wrapped = 0.0
        for label in data["order"]:
            cpu = data["rows"][label][0]
            if label == "the run (run_pytest)":
                cpu -= extra_cpu  # its measurement-only runs
            put(label, cpu)
            wrapped += 0.0 if label.startswith("  ") else cpu
        inside = after - at_verify - extra_cpu
        put("verify(): not in a listed phase", inside - wrapped)
        put("CLI after verify() (output) and exit", data["at_exit"] - after)
        put("total (cgroup, measurement-only runs taken out)", data["total_cpu"] - extra_cpu)
        put("second pytest runs (reruns)", float(max(0, data["runs"] - 1)))
        calls = {k: v[2] for k, v in extra.items()}
        for label, (cpu, _wall, _n) in extra.items():
            put("measured apart: " + label, cpu / max(1, calls[label]))
    table = {label: _spread(values) for label, values in rows.items()}
    sandbox = "measured apart: sandbox alone (bwrap, the run's binds, /bin/true)"
    reaper = "measured apart: sandbox + reaper (/bin/true)"
    start = "measured apart: sandbox + reaper + pytest start (plugins, --version)"
    spawn = "  run: sandbox + reaper + pytest"
    if all(k in table for k in (sandbox, reaper, start, spawn)):
        s, r, p = table[sandbox]["median"], table[reaper]["median"], table[start]["median"]
        table["derived: reaper"] = {"median": round(r - s, 4)}
        table["derived: a pytest start with the plugins (what a second run costs first)"] = {
            "median": round(p - r, 4)
        }
        table["derived: pytest's own run (spawn - sandbox - reaper)"] = {
            "median": round(table[spawn]["median"] - r, 4)
        }
    return table


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"verify's CPU against plain pytest  {result['date']}  method: {result['method']}",
        *([f"NOTE: {result['method_note']}"] if result.get("method_note") else []),
        f"machine: python {result['machine']['python']}, nproc {result['machine']['nproc']}, "
        f"load {result['machine'].get('loadavg_at_start')} -> "
        f"{result['machine'].get('loadavg_at_end')}; {result['parameters']['repeat']} rounds "
        "after one warm-up, variants interleaved, start rotated",
    ]
    for suite in result["suites"]:
        lines += [
            "",
            f"suite: {suite['tests']} tests in {suite['test_files']} files "
            f"({suite['project']['pins']} pins)",
            f"{'variant':42s} {'cpu med':>8s} {'min':>7s} {'max':>7s} {'x anchor':>8s} "
            f"{'paired x (min-max)':>20s} {'+s med':>7s} {'wall med':>8s}",
        ]
        for name, row in suite["variants"].items():
            pr = row["cpu_ratio_paired"]
            lines.append(
                f"{name:42s} {row['cpu_s']['median']:8.3f} {row['cpu_s']['min']:7.3f} "
                f"{row['cpu_s']['max']:7.3f} {row['cpu_ratio_of_medians']:8.3f} "
                f"{pr['median']:6.3f} ({pr['min']:.3f}-{pr['max']:.3f}) "
                f"{row['cpu_extra_of_medians_s']:+7.3f} {row['wall_s']['median']:8.3f}"
            )
        for name, verdict in suite["targets"].items():
            lines.append(
                f"[{verdict['status']}] {name}: {verdict['target']}: {verdict['value']} "
                f"(paired {verdict['paired']['min']}..{verdict['paired']['max']})"
            )
        phases = suite.get("phases") or {}
        sides = [s for s in ("before", "after") if s in phases]
        if sides:
            lines.append(
                f"phases, CPU s (median of {result['parameters']['phase_runs']} instrumented "
                "runs; min-max)"
            )
            labels = list(dict.fromkeys(k for s in sides for k in phases[s]))
            head = "".join(f" {s:>22s}" for s in sides)
            lines.append(f"{'phase':66s}{head}")
            for label in labels:
                cells = ""
                for side in sides:
                    row = phases[side].get(label)
                    if row is None:
                        cells += f" {'-':>22s}"
                    elif "min" in row:
                        cells += f" {row['median']:7.3f} ({row['min']:.3f}-{row['max']:.3f})"
                    else:
                        cells += f" {row['median']:7.3f}{'':14s}"
                lines.append(f"{label[:66]:66s}{cells}")
    if result["problems"]:
        lines += ["", "PROBLEMS:", *(f"  {p}" for p in result["problems"])]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="216,2000", help="test counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--phase-runs", type=int, default=3)
    parser.add_argument("--before", default="", help="an older package tree to compare")
    parser.add_argument(
        "--checks-variants",
        action="store_true",
        help="also verify with all reward checks off, and with the outcome checks off",
    )
    parser.add_argument("--tag", default="")
    parser.add_argument("--results-dir", default=str(bv.HERE / "results"))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, flush=True)

    meter = CpuMeter()
    log(f"CPU accounting: {meter.method}{'; ' + meter.note if meter.note else ''}")
    machine = bv.machine_info()
    workdir = Path(tempfile.mkdtemp(prefix="loopcontract-benchcpu-"))
    out = workdir / "out"
    out.mkdir()
    before = str(Path(args.before).resolve()) if args.before else ""
    started = time.perf_counter()
    try:
        suites = []
        all_problems: list[str] = []
        for tests in (int(t) for t in args.suites.split(",") if t.strip()):
            log(f"suite of {tests} tests: generating and taking the baseline ...")
            repo, project = build_suite(workdir, tests)
            table = variants(out, before, args.checks_variants)
            runs, problems = measure_rounds(meter, repo, out, table, args.repeat, log)
            all_problems += [f"{tests} tests: {p}" for p in problems]
            summary = summarise(runs)
            targets = {VERIFY: judge(tests, summary)}
            if before:
                targets[VERIFY + BEFORE] = judge(tests, summary, VERIFY + BEFORE)
            phases = (
                measure_phases(meter, repo, out, args.phase_runs, before, log)
                if args.phase_runs
                else {}
            )
            suites.append(
                {
                    "tests": tests,
                    "test_files": project["test_files"],
                    "project": project,
                    "variants": summary,
                    "targets": targets,
                    "phases": phases,
                }
            )
        with contextlib.suppress(OSError):
            machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result = {
            "benchmark": "verifier-cpu",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "method": meter.method,
            "method_note": meter.note,
            "machine": machine,
            "parameters": {
                "repeat": args.repeat,
                "warmup_rounds": 1,
                "phase_runs": args.phase_runs,
                "before": before,
                "anchor": "python -m pytest -q: autoload on, cache provider on, bytecode "
                "written and read (warm after the warm-up round), as a developer runs it",
            },
            "suites": suites,
            "problems": all_problems,
            "elapsed_s": round(time.perf_counter() - started, 1),
        }
        stamp = dt.datetime.now().strftime("%Y-%m-%d")
        results_dir = Path(args.results_dir)
        results_dir.mkdir(parents=True, exist_ok=True)
        base = results_dir / f"verifier-cpu-{stamp}{'-' + args.tag if args.tag else ''}"
        base.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        text = "\n".join(report_lines(result)) + "\n"
        base.with_suffix(".txt").write_text(text, "utf-8")
        print(text)
        print(f"results: {base}.json / .txt")
        return 0 if not all_problems else 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
