#!/usr/bin/env python
"""Benchmark the verifier: the in-process plugin against plain pytest and two reporting plugins,
and the isolated launcher's fixed cost on a 2,000-file repository.

Usage (from the repository root, with the project's virtualenv)::

    python benchmarks/bench_verifier.py [--tests 2000] [--files 2000] [--repeat 5]

What it does:

1. Generates, in a temp dir, a git repository with ``--tests`` trivially passing tests (spread
   over ``--test-files`` files, some parametrized), filler source/data files up to ``--files``
   files in total, a ``pyproject.toml`` with ``[tool.pytest.ini_options]`` and a
   ``loopcontract.yml`` (fix mode, one DoD item whose acceptance test fails at the base
   commit). Commits it, runs ``loop-contract baseline``, then applies the one-line fix in the
   work tree (not committed: the candidate is the dirty work tree).
2. Runs every variant ``--repeat`` times, interleaved (round-robin, order rotated each round,
   after one untimed warm-up round), timing each run with ``time.perf_counter``. The pytest
   variants share one environment (``PYTHONDONTWRITEBYTECODE=1``,
   ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``) and ``-p no:cacheprovider``; each loads only the plugin
   under test with ``-p``.
3. Prints a table (median, min, ratio to the "plain pytest" anchor), the overheads, the
   launcher's fixed cost with a per-phase breakdown, and PASS/MISS against the targets, and
   writes everything to ``benchmarks/results/verifier-<date>.json``.

When a target is missed (or with ``--profile always``) it also profiles the missed side with
cProfile and prints where the time goes.

Only the standard library and the packages of the project's virtualenv are used.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import functools
import io
import json
import os
import platform
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable

# Environment variables that would change what pytest loads or how it runs; dropped for all runs.
_DROPPED_ENV = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_CURRENT_TEST",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "COVERAGE_PROCESS_START",
    "COVERAGE_FILE",
    "COVERAGE_RCFILE",
)

TARGET_INPROCESS_OVERHEAD = 0.05  # <= 5 % over plain pytest
TARGET_LAUNCHER_FIXED_S = 1.0  # < 1 s

ANCHOR = "plain pytest"
LOOP = "pytest --loop-contract"
REPORTLOG = "pytest --report-log"
JSONREPORT = "pytest --json-report"
VERIFY_CLI = "loop-contract verify (CLI, sandbox)"
VERIFY_PROCESS = "loop-contract verify (CLI, process isolation)"
VERIFY_CHECKS_OFF = "loop-contract verify (CLI, sandbox, checks off)"
ANCHOR_PLUGINS = "plain pytest (verify's plugins)"
# The anchor for verify's targets: plain pytest in the project's own environment (a .venv in
# the repository holding pytest alone, which verify picks by default), so that the referee is
# compared with the run it replaces, plugins and all.
ANCHOR_PROJECT = "plain pytest (project .venv)"
TARGET_SANDBOX_RATIO = 1.15  # verify in the sandbox: at most 1.15x plain pytest ...
TARGET_SANDBOX_EXTRA_S = 0.5  # ... and at most 0.5 s over it
TARGET_CHECKS_RATIO = 1.10  # the reward checks: at most 1.10x verify without them
VERIFY_API = "verify() in-process call"


# ---------------------------------------------------------------------------------------------
# the generated project
# ---------------------------------------------------------------------------------------------

CONTRACT = """\
version: 1
id: bench-answer
goal: core.answer() returns the right answer.
mode: fix
dod:
  - id: answer
    text: answer() returns 42.
    tests:
      - tests/test_acceptance.py::test_answer_is_42
gates:
  hard:
    - {id: acceptance, kind: acceptance}
    - {id: no-regressions, kind: pass_to_pass}
boundaries:
  allow: ["src/**"]
budget:
  iterations: 5
"""

PYPROJECT = """\
[project]
name = "benchpkg"
version = "0.1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
markers = ["dod(item): ties a test to a Definition-of-Done item"]
"""

CORE_BASE = "def answer() -> int:\n    return 41\n"
CORE_FIXED = "def answer() -> int:\n    return 42\n"

CONFTEST = """\
import pytest


@pytest.fixture
def small_number():
    return 7
"""

ACCEPTANCE = """\
from benchpkg.core import answer


def test_answer_is_42():
    assert answer() == 42
"""


def _test_file(index: int, count: int, n_modules: int) -> str:
    """A test module with ``count`` tests: about half plain functions, the rest parametrized."""
    module = f"mod_{index % max(n_modules, 1):04d}"
    params = count // 2
    plain = count - params
    lines = [
        "import pytest",
        "",
        f"from benchpkg.{module} import VALUE, double" if n_modules else "VALUE, double = 1, None",
        "",
    ]
    for i in range(plain):
        if i % 3 == 0:
            lines += [f"def test_plain_{i}(small_number):", "    assert small_number == 7", ""]
        elif i % 3 == 1 and n_modules:
            lines += [f"def test_plain_{i}():", f"    assert double({i}) == {2 * i}", ""]
        else:
            lines += [f"def test_plain_{i}():", f"    assert {i} + VALUE - VALUE == {i}", ""]
    if params:
        values = ", ".join(str(v) for v in range(params))
        lines += [
            f"@pytest.mark.parametrize('n', [{values}])",
            "def test_param(n):",
            "    assert n >= 0",
            "",
        ]
    return "\n".join(lines)


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def generate_project(repo: Path, n_tests: int, n_files: int, n_test_files: int) -> dict[str, int]:
    """Write the project; return counts of what was written."""
    if n_tests < 2 or n_test_files < 2:
        raise SystemExit("need at least 2 tests and 2 test files")
    files: dict[str, str] = {
        "pyproject.toml": PYPROJECT,
        "loopcontract.yml": CONTRACT,
        ".gitignore": ".loop-contract/\n__pycache__/\n.pytest_cache/\n",
        "README.md": "# benchpkg\n\nGenerated by benchmarks/bench_verifier.py.\n",
        "src/benchpkg/__init__.py": "",
        "src/benchpkg/core.py": CORE_BASE,
        "tests/__init__.py": "",
        "tests/conftest.py": CONFTEST,
        "tests/test_acceptance.py": ACCEPTANCE,
    }
    regular_files = n_test_files - 1  # the acceptance file is one of the test files
    regular_tests = n_tests - 1
    # Filler budget: whatever is left after test files; split between modules and data files.
    filler = n_files - len(files) - regular_files
    if filler < 0:
        raise SystemExit(f"--files {n_files} is too small for {n_test_files} test files")
    n_modules = min(filler // 2, 500)
    n_data = filler - n_modules
    for m in range(n_modules):
        files[f"src/benchpkg/mod_{m:04d}.py"] = (
            f'"""Filler module {m}."""\n\nVALUE = {m}\n\n\n'
            "def double(x: int) -> int:\n    return 2 * x\n"
        )
    base, extra = divmod(regular_tests, regular_files)
    for t in range(regular_files):
        count = base + (1 if t < extra else 0)
        files[f"tests/test_mod_{t:04d}.py"] = _test_file(t, count, n_modules)
    for d in range(n_data):
        folder = f"data/set_{d // 50:03d}"
        if d % 5 == 4:
            files[f"docs/page_{d:04d}.md"] = f"# Page {d}\n\nSome prose for page {d}.\n"
        else:
            files[f"{folder}/item_{d:04d}.json"] = (
                json.dumps({"id": d, "name": f"item-{d}", "tags": ["a", "b"]}) + "\n"
            )
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    assert len(files) == n_files, (len(files), n_files)
    return {
        "files": len(files),
        "test_files": n_test_files,
        "tests": n_tests,
        "source_modules": n_modules + 2,
        "data_files": n_data,
    }


def project_python(repo: Path) -> Path:
    return repo / ".venv" / "bin" / "python"


def make_project_venv(repo: Path) -> None:
    """``repo/.venv`` with the tool's pytest version and nothing else (not tracked)."""
    import pytest

    subprocess.run([PY, "-m", "venv", str(repo / ".venv")], check=True)
    subprocess.run(
        [str(project_python(repo)), "-m", "pip", "install", "-q", f"pytest=={pytest.__version__}"],
        check=True,
        capture_output=True,
    )
    (repo / ".git/info").mkdir(parents=True, exist_ok=True)
    with (repo / ".git/info/exclude").open("a", encoding="utf-8") as fh:
        fh.write(".venv/\n")


def build_repo(workdir: Path, args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    repo = workdir / "repo"
    repo.mkdir(parents=True)
    counts = generate_project(repo, args.tests, args.files, args.test_files)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "bench@example.invalid")
    _git(repo, "config", "user.name", "bench")
    if args.project_venv:
        make_project_venv(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: acceptance test fails")
    tracked = len(_git(repo, "ls-files").splitlines())
    t0 = time.perf_counter()
    proc = subprocess.run(
        [PY, "-m", "pytest_loopcontract", "baseline", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=bench_env(),
        check=False,
    )
    baseline_s = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"loop-contract baseline failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    # The candidate: a one-line fix in the work tree, left uncommitted.
    (repo / "src/benchpkg/core.py").write_text(CORE_FIXED, "utf-8")
    record = json.loads((repo / ".loop-contract/baseline.json").read_text("utf-8"))
    info = {
        **counts,
        "tracked_files": tracked,
        "baseline_seconds": round(baseline_s, 3),
        "fail_to_pass": record["fail_to_pass"],
        "pass_to_pass_count": len(record["pass_to_pass"]),
        "pins": len(record["pins"]),
        "allowed_plugins": record["plugins"],
    }
    return repo, info


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def bench_env(pycache: Path | None = None, write_bytecode: bool = False) -> dict[str, str]:
    """The one environment every timed run uses. ``pycache`` adds a benchmark-owned
    PYTHONPYCACHEPREFIX (the warm-bytecode variants); ``write_bytecode`` is only for priming it."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        if write_bytecode:
            del env["PYTHONDONTWRITEBYTECODE"]
    return env


def pytest_variants(
    out: Path, plugins: Sequence[str] = (), project: Path | None = None
) -> dict[str, list[str]]:
    """The pytest command lines; ``plugins`` (the baseline's allow-list, which verify's inner
    run loads with ``-p``) gives the second anchor: plain pytest with the same plugins;
    ``project`` (the project's interpreter) the third, verify's own."""
    base = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    own = {ANCHOR_PROJECT: [str(project), *base[1:]]} if project is not None else {}
    return {
        **own,
        ANCHOR: base,
        ANCHOR_PLUGINS: [*base, *(arg for name in plugins for arg in ("-p", name))],
        LOOP: [*base, "-p", "pytest_loopcontract.plugin", "--loop-contract"],
        REPORTLOG: [*base, "-p", "pytest_reportlog.plugin", f"--report-log={out / 'log.jsonl'}"],
        JSONREPORT: [
            *base,
            "-p",
            "pytest_jsonreport.plugin",
            "--json-report",
            f"--json-report-file={out / 'report.json'}",
        ],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cmd(
    cmd: list[str],
    cwd: Path,
    log: Path,
    env: dict[str, str] | None = None,
    err_log: Path | None = None,
) -> tuple[float, float, int]:
    """Wall time (perf_counter) and CPU time (user+sys of the child and everything it waited
    for) of one run. CPU time is the noise-robust figure on a shared machine. With
    ``err_log``, stderr goes there (``verify --json``'s live progress is not part of its JSON)."""
    with log.open("wb") as fh, (err_log or Path(os.devnull)).open("wb") as eh:
        c0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            stdout=fh,
            stderr=eh if err_log is not None else subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env if env is not None else bench_env(),
            check=False,
        )
        elapsed = time.perf_counter() - t0
        cpu = _children_cpu() - c0
    return elapsed, cpu, proc.returncode


# Launcher phases: the names verify() looks up in its module namespace. Wrapping them (here, at
# run time; the package is not edited) gives a per-phase breakdown of one verify() call.
# read_candidate and diff_evidence run on threads, beside _prepare_setup and the main run:
# their time overlaps the others' and is not on the critical path.
PHASES = (
    "load_baseline",
    "pinned_contract",
    "load_for_verify",
    "_prepare_setup",
    "read_candidate",
    "diff_evidence",
    "make_scratch",
    "export_tree",
    "purge_bytecode",
    "restore_pins",
    "seal",
    "referee_digests",
    "referee_changes",
    "run_pytest",
    "run_pytest: main run",
    "run_pytest: reruns",
    "crosscheck_findings",
    "added_lines_from_diff",
    "evaluate",
    "remove_tree",
    "write_json_atomic",
)


@contextlib.contextmanager
def phase_timer() -> Iterator[dict[str, float]]:
    import pytest_loopcontract.verifier.verify as vmod

    spent: dict[str, float] = {}
    calls: list[int] = []
    originals: dict[str, Callable[..., Any]] = {}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                took = time.perf_counter() - t0
                spent[name] = spent.get(name, 0.0) + took
                if name == "run_pytest":  # the first call is the main run (twins inside it)
                    calls.append(1)
                    part = "main run" if len(calls) == 1 else "reruns"
                    spent[f"run_pytest: {part}"] = spent.get(f"run_pytest: {part}", 0.0) + took

        return timed

    for name in PHASES:
        fn = getattr(vmod, name, None) if ":" not in name else None
        if callable(fn):
            originals[name] = fn
            setattr(vmod, name, wrap(name, fn))
    try:
        yield spent
    finally:
        for name, fn in originals.items():
            setattr(vmod, name, fn)


def run_verify_api(repo: Path, out: Path) -> dict[str, Any]:
    from pytest_loopcontract.verifier.verify import verify

    with phase_timer() as spent:
        c0 = _children_cpu() + time.process_time()
        t0 = time.perf_counter()
        outcome = verify(repo, verdict_path=out / "verdict-api.json")
        wall = time.perf_counter() - t0
        cpu = _children_cpu() + time.process_time() - c0
    return {
        "wall": wall,
        "cpu": cpu,
        "launcher_seconds": outcome.launcher_seconds,
        "pytest_seconds": outcome.pytest_seconds,
        "verdict": outcome.verdict.get("verdict"),
        "exit_code": outcome.verdict.get("exit_code"),
        "phases": dict(spent),
    }


PYC = " [warm pyc]"

# The reward checks switched off for one variant, by the benchmark alone (the package has no
# such switch): the same single re-exec as ``loop-contract``'s own entry, then, in the clean
# process, the static rules and the referee's twins and canaries replaced by nothing and the
# injected plugin's copy told to skip the runtime-patch watch and the module-origin record.
CHECKS_OFF_ENTRY = r"""
import json, os, sys
from pytest_loopcontract import launcher

HERE = os.path.dirname(os.path.abspath(__file__))
BOOT = (
    "import json, sys; boot = json.loads(sys.argv[1]); sys.path.extend(boot['path']); "
    "sys.argv = ['loop-contract', *sys.argv[2:]]; import lc_checks_off; "
    "from pytest_loopcontract.launcher import run_clean; sys.exit(run_clean(boot))"
)
repo = os.path.realpath(launcher._repository(os.getcwd()))
boot = {"path": [HERE, *launcher.clean_path(repo)], "contaminated": [], "repo": repo}
os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", BOOT, json.dumps(boot), *sys.argv[1:]])
"""

CHECKS_OFF = r'''
"""Imported by lc_verify_checks_off.py in the clean launcher process (written by the benchmark)."""
from pytest_loopcontract.verifier import diff_evidence as _diff
from pytest_loopcontract.verifier import runner as _runner
from pytest_loopcontract.verifier import verify as _verify
from pytest_loopcontract.verifier.tamper.checks import RewardChecks

_diff.launcher_static_checks = lambda *a, **k: RewardChecks()
_verify._plan = lambda *a, **k: None
_verify._policy = lambda *a, **k: None
_inject = _runner.inject_inner
_WATCH_OFF = (
    "\nPatchWatch.check = lambda self, when: None\n"
    "del PatchWatch.pytest_runtest_teardown\ndel PatchWatch.pytest_collection_finish\n"
)
_ORIGINS_OFF = "\ndef module_origins(root):\n    return {}\n"


def _inject_without_checks(folder):
    injected = _inject(folder)
    package = injected / _runner.INNER_NAME
    for name, tail in (("watch.py", _WATCH_OFF), ("collector.py", _ORIGINS_OFF)):
        path = package / name
        path.write_text(path.read_text("utf-8") + tail, "utf-8")
    return injected


_runner.inject_inner = _inject_without_checks
'''


# Only the outcome checks off: no twins, canaries or namespace check, no capability policy
# (its hook still installed, but told nothing, so every event returns at once).
OUTCOMES_OFF = r'''
"""Imported by lc_verify_outcomes_off.py in the clean launcher process."""
from pytest_loopcontract.verifier import verify as _verify

_verify._plan = lambda *a, **k: None
_verify._policy = lambda *a, **k: None
'''


def write_checks_off(out: Path, module: str = "lc_checks_off") -> list[str]:
    """The checks-off command line (files in ``out``); ``module`` names which checks."""
    text = CHECKS_OFF if module == "lc_checks_off" else OUTCOMES_OFF
    (out / f"{module}.py").write_text(text, "utf-8")
    entry = out / f"lc_verify_{module}.py"
    entry.write_text(CHECKS_OFF_ENTRY.replace("import lc_checks_off", f"import {module}"), "utf-8")
    return [PY, str(entry), "verify", "--json"]


def measure(
    repo: Path,
    out: Path,
    repeat: int,
    pyc: bool,
    log: Callable[[str], None],
    plugins: Sequence[str] = (),
    project: Path | None = None,
) -> dict[str, Any]:
    pyvariants = pytest_variants(out, plugins, project)
    pycache = out.parent / "pycache"
    cli = [PY, "-m", "pytest_loopcontract", "verify", "--json"]
    checks_off = write_checks_off(out)
    names = [*pyvariants, VERIFY_CLI, VERIFY_CHECKS_OFF, VERIFY_PROCESS, VERIFY_API]
    if pyc:
        names += [ANCHOR + PYC, LOOP + PYC, REPORTLOG + PYC]
    times: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    api_runs: list[dict[str, Any]] = []
    problems: list[str] = []

    def one(name: str, timed: bool) -> None:
        logfile = out / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".log")
        base = name.removesuffix(PYC)
        if base in pyvariants:
            env = bench_env(pycache, write_bytecode=not timed) if name.endswith(PYC) else None
            elapsed, cpu, code = run_cmd(pyvariants[base], repo, logfile, env)
            if code != 0:
                problems.append(f"{name}: exit {code} (see {logfile})")
            if base == LOOP:
                verdict = json.loads((repo / ".loop-contract/verdict.json").read_text("utf-8"))
                if verdict.get("verdict") != "pass":
                    problems.append(f"{name}: verdict {verdict.get('verdict')}")
        elif name in (VERIFY_CLI, VERIFY_PROCESS, VERIFY_CHECKS_OFF):
            mode = "process" if name == VERIFY_PROCESS else "sandbox"
            env = {**bench_env(), "LOOP_CONTRACT_ISOLATION": mode}
            command = checks_off if name == VERIFY_CHECKS_OFF else cli
            elapsed, cpu, code = run_cmd(
                command, repo, logfile, env, err_log=logfile.with_suffix(".err")
            )
            if code != 0:
                problems.append(f"{name}: exit {code} (see {logfile})")
            try:
                doc = json.loads(logfile.read_text("utf-8"))
            except ValueError:
                doc = {"verdict": "unreadable --json output"}
            if doc.get("verdict") != "pass":
                problems.append(f"{name}: verdict {doc.get('verdict')}")
            if doc.get("isolation") != mode:
                problems.append(f"{name}: isolation {doc.get('isolation')}, wanted {mode}")
            ran = {c.get("id"): c.get("status") for c in doc.get("tamper", {}).get("checks", [])}
            wanted = (
                {"twins": "skipped"}
                if name == VERIFY_CHECKS_OFF
                else {"reward_rules": "ran", "twins": "ran"}
            )
            if ran != wanted:
                problems.append(f"{name}: reward checks {ran}, wanted {wanted}")
        else:
            result = run_verify_api(repo, out)
            elapsed, cpu = result["wall"], result["cpu"]
            if result["verdict"] != "pass":
                problems.append(f"{name}: verdict {result['verdict']}")
            if timed:
                api_runs.append(result)
        if timed:
            times[name].append(elapsed)
            cpus[name].append(cpu)
        label = "" if timed else ("(priming) " if name.endswith(PYC) else "(warm-up) ")
        log(f"    {label}{name:38s} {elapsed:7.3f} s wall {cpu:7.3f} s cpu")

    log("  warm-up round (untimed; primes the warm-pyc cache)")
    for name in names:
        one(name, timed=False)
    if problems:  # a broken variant makes every number meaningless: stop early
        raise SystemExit("warm-up round failed:\n  " + "\n  ".join(sorted(set(problems))))
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]
        log(f"  round {r + 1}/{repeat}")
        for name in order:
            one(name, timed=True)
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    if status.strip() != "M src/benchpkg/core.py":
        problems.append(f"the work tree changed during the benchmark: {status.strip()!r}")
    return {
        "times": times,
        "cpus": cpus,
        "api_runs": api_runs,
        "problems": sorted(set(problems)),
    }


def fs_probe(count: int = 2000) -> float:
    """Seconds to create and delete ``count`` small files under the temp dir: the floor of the
    launcher's scratch export, and a measure of how busy the disk is."""
    root = Path(tempfile.mkdtemp(prefix="loopcontract-fsprobe-"))
    t0 = time.perf_counter()
    for i in range(count):
        folder = root / f"d{i // 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.py").write_bytes(b"x = 1\n" * 10)
    shutil.rmtree(root)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# profiling (when a target is missed, or on request)
# ---------------------------------------------------------------------------------------------


def _top(stats_path: Path, match: str, limit: int) -> list[dict[str, Any]]:
    stats = pstats.Stats(str(stats_path), stream=io.StringIO())
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if match in file or match in func:
            rows.append(
                {
                    "function": f"{Path(file).name}:{line}({func})",
                    "calls": nc,
                    "tottime_s": round(tt, 4),
                    "cumtime_s": round(ct, 4),
                }
            )
    rows.sort(key=lambda r: -r["cumtime_s"])
    return rows[:limit]


HOOK_TIMER = r'''
"""Wall-clock timers around pytest_loopcontract's hooks and helpers (written by the benchmark).

Load it with ``-p lc_hooktimer`` before ``-p pytest_loopcontract.plugin``; it wraps functions
in memory (the package is not modified) and dumps the totals as JSON at exit. The modules the
plugin imports lazily are imported here up front and timed separately, so their cost is not
lost from the total.
"""
import atexit, functools, json, os, time

_T0 = time.perf_counter()
import pytest_loopcontract.plugin as _plugin

SPENT = {"import pytest_loopcontract.plugin": time.perf_counter() - _T0}
_T1 = time.perf_counter()
import pytest_loopcontract.contract.model as _contract
import pytest_loopcontract.verifier.inner.collector as _collector
import pytest_loopcontract.verifier.inprocess as _ip
import pytest_loopcontract.verifier.inprocess_writer as _writer
import pytest_loopcontract.fsio as _vd

SPENT["import inprocess, evaluate, baseline, ... (lazy imports)"] = time.perf_counter() - _T1
CALLS = {}
ORDER = list(SPENT)


def _wrap(owner, name, label):
    fn = getattr(owner, name, None)
    if fn is None:
        return
    ORDER.append(label)

    @functools.wraps(fn)
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            SPENT[label] = SPENT.get(label, 0.0) + time.perf_counter() - t
            CALLS[label] = CALLS.get(label, 0) + 1

    setattr(owner, name, timed)


_wrap(_plugin, "pytest_configure", "hook pytest_configure")
_wrap(_contract, "parse_contract", "  parse_contract (yaml + jsonschema import, validate)")
_wrap(_writer.VerdictWriter, "pytest_sessionstart", "hook pytest_sessionstart")
_wrap(_ip, "incomplete_verdict", "  incomplete_verdict (provisional verdict)")
for _m in ("pytest_collection_modifyitems", "pytest_deselected", "pytest_collectreport",
           "pytest_runtest_logreport"):
    _wrap(_collector.ResultCollector, _m, f"hook {_m}")
_wrap(_writer.VerdictWriter, "pytest_sessionfinish", "hook pytest_sessionfinish")
_wrap(_collector.ResultCollector, "results", "  build RunResults")
_wrap(_ip, "verdict_in_process", "  verdict_in_process")
_wrap(_ip, "_repo_evidence", "    _repo_evidence (git)")
for _n in ("load_baseline", "find_repo", "resolve_commit", "is_dirty", "snapshot_worktree",
           "list_tree", "pin_findings", "diff_text"):
    _wrap(_ip, _n, f"      {_n}")
_wrap(_ip, "evaluate", "  evaluate (provisional + final)")
_wrap(_vd, "write_json_atomic", "  write_json_atomic (provisional + final)")
_wrap(_writer.VerdictWriter, "pytest_terminal_summary", "hook pytest_terminal_summary")


@atexit.register
def _dump():
    path = os.environ.get("LC_HOOKTIMER_OUT")
    if path:
        with open(path, "w") as fh:
            json.dump({"spent": SPENT, "calls": CALLS, "order": ORDER,
                       "since_import": time.perf_counter() - _T0}, fh)
'''


def time_plugin_hooks(repo: Path, out: Path, runs: int = 3) -> dict[str, Any]:
    """Wall-clock time spent in the plugin's hooks during ``pytest --loop-contract``."""
    (out / "lc_hooktimer.py").write_text(HOOK_TIMER, "utf-8")
    base = pytest_variants(out)[LOOP]
    i = base.index("pytest_loopcontract.plugin") - 1
    cmd = [*base[:i], "-p", "lc_hooktimer", *base[i:]]
    samples: list[dict[str, Any]] = []
    for n in range(runs):
        env = bench_env()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(out), env.get("PYTHONPATH")]))
        env["LC_HOOKTIMER_OUT"] = str(out / f"hooktimer-{n}.json")
        elapsed, _cpu, _code = run_cmd(cmd, repo, out / "hooktimer.log", env)
        data = json.loads(Path(env["LC_HOOKTIMER_OUT"]).read_text("utf-8"))
        data["wall"] = elapsed
        samples.append(data)
    labels = [k for k in samples[0]["order"] if any(k in x["spent"] for x in samples)]
    rows = {
        label: {
            "median_ms": round(
                1000 * statistics.median(x["spent"].get(label, 0) for x in samples), 1
            ),
            "calls": samples[0]["calls"].get(label, 1),
        }
        for label in labels
    }
    top = [k for k in rows if k.startswith(("hook ", "import "))]
    return {
        "runs": runs,
        "wall_median_s": round(statistics.median(x["wall"] for x in samples), 3),
        "plugin_total_ms": round(sum(rows[k]["median_ms"] for k in top), 1),
        "rows": rows,
    }


def profile_plugin(repo: Path, out: Path) -> dict[str, Any]:
    """cProfile one ``--loop-contract`` run; list the package's functions by cumulative time."""
    prof = out / "profile-loop.prof"
    cmd = [PY, "-m", "cProfile", "-o", str(prof), *pytest_variants(out)[LOOP][1:]]
    elapsed, _cpu, code = run_cmd(cmd, repo, out / "profile.log")
    stats: Any = pstats.Stats(str(prof), stream=io.StringIO())
    return {
        "wall_s": round(elapsed, 3),
        "exit": code,
        "profiled_total_s": round(stats.total_tt, 3),
        "plugin_functions": _top(prof, "pytest_loopcontract", 25),
        "subprocess_waits": _top(prof, "subprocess.py", 5),
        "profile": str(prof),
    }


def profile_launcher(repo: Path, out: Path) -> dict[str, Any]:
    """cProfile one verify() call in this process (the launcher side only; the child pytest
    shows up as a wait inside run_pytest)."""
    from pytest_loopcontract.verifier.verify import verify

    prof = out / "profile-verify.prof"
    profiler = cProfile.Profile()
    profiler.enable()
    verify(repo, verdict_path=out / "verdict-prof.json")
    profiler.disable()
    profiler.dump_stats(str(prof))
    return {
        "profile": str(prof),
        "package_functions": _top(prof, "pytest_loopcontract", 25),
        "subprocess_waits": _top(prof, "subprocess.py", 5),
    }


# ---------------------------------------------------------------------------------------------
# reporting
# ---------------------------------------------------------------------------------------------


def summarise(
    times: dict[str, list[float]], cpus: dict[str, list[float]]
) -> dict[str, dict[str, Any]]:
    anchor = statistics.median(times[ANCHOR])
    anchor_cpu = statistics.median(cpus[ANCHOR])
    out = {}
    for name, values in times.items():
        med = statistics.median(values)
        cpu = statistics.median(cpus[name])
        out[name] = {
            "median_s": round(med, 4),
            "min_s": round(min(values), 4),
            "max_s": round(max(values), 4),
            "ratio_to_anchor": round(med / anchor, 4),
            "cpu_median_s": round(cpu, 4),
            "cpu_min_s": round(min(cpus[name]), 4),
            "cpu_ratio_to_anchor": round(cpu / anchor_cpu, 4),
            "runs_s": [round(v, 4) for v in values],
            "runs_cpu_s": [round(v, 4) for v in cpus[name]],
        }
    return out


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "sched_affinity": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
    }
    with contextlib.suppress(OSError):
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    with contextlib.suppress(OSError, StopIteration):
        text = Path("/proc/cpuinfo").read_text()
        info["cpu"] = next(
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.startswith("model name")
        )
    import pytest

    info["pytest"] = pytest.__version__
    with contextlib.suppress(Exception):
        from importlib.metadata import version

        info["pytest_loopcontract"] = version("pytest-loopcontract")
        info["pytest_reportlog"] = version("pytest-reportlog")
        info["pytest_json_report"] = version("pytest-json-report")
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        info["git"] = subprocess.run(
            ["git", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    return info


def verdict_line(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=2000, help="number of tests (default 2000)")
    parser.add_argument(
        "--files",
        type=int,
        default=2000,
        help="files in the repository, tests included (default 2000)",
    )
    parser.add_argument("--test-files", type=int, default=100, help="test modules (default 100)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="timed rounds per variant, after one untimed warm-up round (default 5)",
    )
    parser.add_argument(
        "--no-pyc",
        action="store_true",
        help="skip the warm-bytecode variants (plain / --loop-contract / --report-log with a "
        "primed PYTHONPYCACHEPREFIX)",
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="time the plugin's hooks / the launcher's phases and cProfile the side that "
        "misses its target (default auto: only on a MISS)",
    )
    parser.add_argument(
        "--no-project-venv",
        dest="project_venv",
        action="store_false",
        help="run the project's tests with this interpreter instead of a repo/.venv holding "
        "pytest alone (then verify's targets are judged against 'plain pytest')",
    )
    parser.add_argument("--results-dir", default=str(HERE / "results"))
    parser.add_argument(
        "--tag", default="", help="suffix of the results file: verifier-<date>-<tag>.json"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated repository")
    parser.add_argument("--quiet", action="store_true", help="only print the final report")
    args = parser.parse_args()

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, flush=True)

    started = time.perf_counter()
    machine = machine_info()
    machine["fs_probe_2000_files_s_at_start"] = round(fs_probe(), 3)
    workdir = Path(tempfile.mkdtemp(prefix="loopcontract-bench-"))
    out = workdir / "out"
    out.mkdir()
    try:
        log(f"generating {args.tests} tests / {args.files} files in {workdir} ...")
        repo, project = build_repo(workdir, args)
        log(
            f"  baseline took {project['baseline_seconds']} s; allowed plugins recorded: "
            f"{', '.join(project['allowed_plugins']) or '(none)'}"
        )
        log(f"measuring ({args.repeat} interleaved rounds + 1 warm-up) ...")
        own = project_python(repo) if args.project_venv else None
        measured = measure(
            repo, out, args.repeat, not args.no_pyc, log, project["allowed_plugins"], own
        )
        machine["fs_probe_2000_files_s_at_end"] = round(fs_probe(), 3)
        table = summarise(measured["times"], measured["cpus"])
        api = measured["api_runs"]
        launcher = [r["launcher_seconds"] for r in api]
        inner = [r["pytest_seconds"] for r in api]
        phases: dict[str, dict[str, float]] = {}
        for name in PHASES:
            vals = [r["phases"].get(name, 0.0) for r in api]
            if any(vals):
                phases[name] = {
                    "median_s": round(statistics.median(vals), 4),
                    "min_s": round(min(vals), 4),
                }
        med = {k: v["median_s"] for k, v in table.items()}
        cpu = {k: v["cpu_median_s"] for k, v in table.items()}

        def pct(a: float, b: float) -> float:
            return round(100 * (a / b - 1), 2)

        overhead = {
            "inprocess_vs_plain_pct": pct(med[LOOP], med[ANCHOR]),
            "inprocess_vs_reportlog_pct": pct(med[LOOP], med[REPORTLOG]),
            "reportlog_vs_plain_pct": pct(med[REPORTLOG], med[ANCHOR]),
            "jsonreport_vs_plain_pct": pct(med[JSONREPORT], med[ANCHOR]),
            "inprocess_minus_plain_s": round(med[LOOP] - med[ANCHOR], 3),
            "cpu_inprocess_vs_plain_pct": pct(cpu[LOOP], cpu[ANCHOR]),
            "cpu_inprocess_vs_reportlog_pct": pct(cpu[LOOP], cpu[REPORTLOG]),
            "cpu_reportlog_vs_plain_pct": pct(cpu[REPORTLOG], cpu[ANCHOR]),
            "cpu_jsonreport_vs_plain_pct": pct(cpu[JSONREPORT], cpu[ANCHOR]),
            "cpu_inprocess_minus_plain_s": round(cpu[LOOP] - cpu[ANCHOR], 3),
        }
        if not args.no_pyc:
            overhead |= {
                "pyc_inprocess_vs_plain_pct": pct(med[LOOP + PYC], med[ANCHOR + PYC]),
                "pyc_inprocess_vs_reportlog_pct": pct(med[LOOP + PYC], med[REPORTLOG + PYC]),
                "pyc_cpu_inprocess_vs_plain_pct": pct(cpu[LOOP + PYC], cpu[ANCHOR + PYC]),
                "pyc_cpu_inprocess_vs_reportlog_pct": pct(cpu[LOOP + PYC], cpu[REPORTLOG + PYC]),
            }
        overhead["note"] = (
            "targets are judged on the wall-clock medians of the default variants (as "
            "specified: PYTHONDONTWRITEBYTECODE=1, no bytecode cache for this editable package); "
            "cpu_* = user+sys of the child, less sensitive to other load; pyc_* = the same runs "
            "with a primed benchmark-owned PYTHONPYCACHEPREFIX (what a developer with a warm "
            "__pycache__ sees)"
        )
        verify_anchor = ANCHOR_PROJECT if args.project_venv else ANCHOR
        launcher_med = statistics.median(launcher)
        cli_fixed = med[VERIFY_CLI] - statistics.median(inner)
        targets = {
            "inprocess_overhead_vs_plain_le_5pct": med[LOOP] / med[ANCHOR] - 1
            <= TARGET_INPROCESS_OVERHEAD,
            "inprocess_no_worse_than_reportlog": med[LOOP] <= med[REPORTLOG],
            "launcher_fixed_cost_lt_1s": launcher_med < TARGET_LAUNCHER_FIXED_S,
            "sandbox_verify_le_1_15x_plain": med[VERIFY_CLI] / med[verify_anchor]
            <= TARGET_SANDBOX_RATIO,
            "sandbox_verify_le_0_5s_over_plain": med[VERIFY_CLI] - med[verify_anchor]
            <= TARGET_SANDBOX_EXTRA_S,
            "reward_checks_le_1_10x_verify_without": med[VERIFY_CLI] / med[VERIFY_CHECKS_OFF]
            <= TARGET_CHECKS_RATIO,
        }
        overhead |= {
            "verify_anchor": verify_anchor,
            "sandbox_verify_vs_anchor_ratio": round(med[VERIFY_CLI] / med[verify_anchor], 3),
            "sandbox_verify_minus_anchor_s": round(med[VERIFY_CLI] - med[verify_anchor], 3),
            "process_verify_vs_anchor_ratio": round(med[VERIFY_PROCESS] / med[verify_anchor], 3),
            "sandbox_verify_vs_plain_ratio": round(med[VERIFY_CLI] / med[ANCHOR], 3),
            "sandbox_verify_minus_plain_s": round(med[VERIFY_CLI] - med[ANCHOR], 3),
            "process_verify_vs_plain_ratio": round(med[VERIFY_PROCESS] / med[ANCHOR], 3),
            "sandbox_minus_process_verify_s": round(med[VERIFY_CLI] - med[VERIFY_PROCESS], 3),
            "sandbox_verify_vs_plain_with_plugins_ratio": round(
                med[VERIFY_CLI] / med[ANCHOR_PLUGINS], 3
            ),
            "sandbox_verify_minus_plain_with_plugins_s": round(
                med[VERIFY_CLI] - med[ANCHOR_PLUGINS], 3
            ),
            "plain_with_plugins_minus_plain_s": round(med[ANCHOR_PLUGINS] - med[ANCHOR], 3),
            "checks_off_vs_plain_ratio": round(med[VERIFY_CHECKS_OFF] / med[ANCHOR], 3),
            "checks_off_minus_plain_s": round(med[VERIFY_CHECKS_OFF] - med[ANCHOR], 3),
            "reward_checks_ratio": round(med[VERIFY_CLI] / med[VERIFY_CHECKS_OFF], 3),
            "reward_checks_s": round(med[VERIFY_CLI] - med[VERIFY_CHECKS_OFF], 3),
        }
        profiles: dict[str, Any] = {}
        want_plugin = args.profile == "always" or (
            args.profile == "auto"
            and not (
                targets["inprocess_overhead_vs_plain_le_5pct"]
                and targets["inprocess_no_worse_than_reportlog"]
            )
        )
        want_launcher = args.profile == "always" or (
            args.profile == "auto" and not targets["launcher_fixed_cost_lt_1s"]
        )
        if want_plugin:
            log("timing the in-process plugin's hooks (wall clock, 3 runs) ...")
            profiles["in_process_hooks"] = time_plugin_hooks(repo, out)
            log("profiling the in-process plugin (cProfile) ...")
            profiles["in_process_cprofile"] = profile_plugin(repo, out)
        if want_launcher:
            log("profiling the launcher (cProfile) ...")
            profiles["launcher_cprofile"] = profile_launcher(repo, out)

        commands = {
            k: " ".join(["python", *v[1:]])
            for k, v in pytest_variants(Path("$OUT"), project["allowed_plugins"]).items()
        }
        commands[VERIFY_CHECKS_OFF] = (
            "LOOP_CONTRACT_ISOLATION=sandbox python $OUT/lc_verify_checks_off.py verify --json "
            "(the benchmark's own entry: static rules, twins and canaries, runtime-patch watch and "
            "module-origin record replaced by nothing)"
        )
        commands[VERIFY_CLI] = (
            "LOOP_CONTRACT_ISOLATION=sandbox python -m pytest_loopcontract verify --json"
        )
        commands[VERIFY_PROCESS] = (
            "LOOP_CONTRACT_ISOLATION=process python -m pytest_loopcontract verify --json"
        )
        commands[VERIFY_API] = "pytest_loopcontract.verifier.verify.verify(repo)"
        result = {
            "benchmark": "verifier",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine,
            "parameters": {
                "tests": args.tests,
                "files": args.files,
                "test_files": args.test_files,
                "repeat": args.repeat,
                "warmup_rounds": 1,
                "order": "round-robin, start rotated each round",
                "env": "PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 for all runs",
            },
            "project": project,
            "commands": commands,
            "variants": table,
            "overhead": overhead,
            "launcher": {
                "fixed_cost_median_s": round(launcher_med, 4),
                "fixed_cost_min_s": round(min(launcher), 4),
                "inner_pytest_median_s": round(statistics.median(inner), 4),
                "inner_pytest_vs_plain_pct": pct(statistics.median(inner), med[ANCHOR]),
                "inner_pytest_plugins": project["allowed_plugins"],
                "cli_wall_median_s": med[VERIFY_CLI],
                "cli_wall_minus_inner_pytest_s": round(cli_fixed, 4),
                "phases": phases,
                "note": "fixed cost = VerifyOutcome.launcher_seconds (verify() wall minus the "
                "inner pytest subprocess; it excludes the scratch removal and the verdict "
                "write, which are listed under phases). The CLI figure adds interpreter "
                "start-up and imports. The inner pytest loads every plugin the baseline "
                "recorded (the baseline runs with autoload on).",
            },
            "targets": {k: verdict_line(v) for k, v in targets.items()},
            "problems": measured["problems"],
            "profiles": profiles,
        }
        with contextlib.suppress(OSError):
            result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result["elapsed_s"] = round(time.perf_counter() - started, 1)
        results_dir = Path(args.results_dir)
        results_dir.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%d")
        path = results_dir / f"verifier-{stamp}{'-' + args.tag if args.tag else ''}.json"
        if not args.keep:  # the .prof files live in the temp dir
            for prof in profiles.values():
                prof.pop("profile", None)
                for part in prof.values():
                    if isinstance(part, dict):
                        part.pop("profile", None)
        path.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
        print_report(result, path)
        return 0 if not measured["problems"] else 1
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def print_report(result: dict[str, Any], path: Path) -> None:
    m, p = result["machine"], result["project"]
    print()
    print(
        f"verifier benchmark  {result['date']}  python {m['python']}  nproc {m['nproc']}  "
        f"loadavg {m.get('loadavg_at_start')} -> {m.get('loadavg_at_end')}"
    )
    print(
        f"project: {p['tests']} tests in {p['test_files']} files, {p['tracked_files']} tracked "
        f"files, {p['pins']} pins; {result['parameters']['repeat']} interleaved rounds; "
        f"fs probe (2000 small files) {m.get('fs_probe_2000_files_s_at_start')} s -> "
        f"{m.get('fs_probe_2000_files_s_at_end')} s"
    )
    print()
    print(
        f"{'variant':38s} {'median s':>8s} {'min s':>7s} {'ratio':>6s}  "
        f"{'cpu med s':>9s} {'cpu ratio':>9s}"
    )
    print("-" * 83)
    for name, row in result["variants"].items():
        print(
            f"{name:38s} {row['median_s']:8.3f} {row['min_s']:7.3f} "
            f"{row['ratio_to_anchor']:6.3f}  {row['cpu_median_s']:9.3f} "
            f"{row['cpu_ratio_to_anchor']:9.3f}"
        )
    o, la = result["overhead"], result["launcher"]
    print("(ratio = median / median of 'plain pytest'; cpu = user+sys of the child processes)")
    print()
    print(
        f"in-process overhead vs plain pytest : {o['inprocess_vs_plain_pct']:+6.1f} % wall "
        f"({o['inprocess_minus_plain_s']:+.3f} s), {o['cpu_inprocess_vs_plain_pct']:+6.1f} % cpu"
    )
    print(
        f"in-process overhead vs reportlog    : {o['inprocess_vs_reportlog_pct']:+6.1f} % wall, "
        f"{o['cpu_inprocess_vs_reportlog_pct']:+6.1f} % cpu"
    )
    print(
        f"reportlog / json-report vs plain    : {o['reportlog_vs_plain_pct']:+6.1f} % / "
        f"{o['jsonreport_vs_plain_pct']:+.1f} % wall"
    )
    if "pyc_inprocess_vs_plain_pct" in o:
        print(
            f"with warm bytecode (pyc variants)   : {o['pyc_inprocess_vs_plain_pct']:+6.1f} % vs "
            f"plain, {o['pyc_inprocess_vs_reportlog_pct']:+.1f} % vs reportlog (wall); "
            f"{o['pyc_cpu_inprocess_vs_plain_pct']:+.1f} % / "
            f"{o['pyc_cpu_inprocess_vs_reportlog_pct']:+.1f} % cpu"
        )
    print(
        f"verify in the sandbox vs {o['verify_anchor']} (the targets' anchor): "
        f"{o['sandbox_verify_vs_anchor_ratio']:.3f}x, {o['sandbox_verify_minus_anchor_s']:+.3f} s;"
        f" process isolation {o['process_verify_vs_anchor_ratio']:.3f}x"
    )
    print(
        f"verify in the sandbox vs plain pytest : {o['sandbox_verify_vs_plain_ratio']:.3f}x, "
        f"{o['sandbox_verify_minus_plain_s']:+.3f} s; vs plain pytest with verify's plugins "
        f"{o['sandbox_verify_vs_plain_with_plugins_ratio']:.3f}x, "
        f"{o['sandbox_verify_minus_plain_with_plugins_s']:+.3f} s (the plugins alone "
        f"{o['plain_with_plugins_minus_plain_s']:+.3f} s)"
    )
    print(
        f"verify, checks off vs plain pytest  : {o['checks_off_vs_plain_ratio']:.3f}x, "
        f"{o['checks_off_minus_plain_s']:+.3f} s; reward checks cost "
        f"{o['reward_checks_ratio']:.3f}x ({o['reward_checks_s']:+.3f} s)"
    )
    print(
        f"process isolation vs plain pytest   : {o['process_verify_vs_plain_ratio']:.3f}x; "
        f"sandbox minus process {o['sandbox_minus_process_verify_s']:+.3f} s"
    )
    print(
        f"launcher fixed cost (launcher_seconds): median {la['fixed_cost_median_s']:.3f} s, "
        f"min {la['fixed_cost_min_s']:.3f} s"
    )
    print(
        f"inner pytest subprocess             : median {la['inner_pytest_median_s']:.3f} s "
        f"({la['inner_pytest_vs_plain_pct']:+.1f} % vs plain pytest; loads "
        f"{len(la['inner_pytest_plugins'])} allow-listed plugins)"
    )
    print(f"CLI wall minus inner pytest         : {la['cli_wall_minus_inner_pytest_s']:.3f} s")
    print("launcher phases (median s per verify() call, > 1 ms):")
    for name, row in sorted(la["phases"].items(), key=lambda kv: -kv[1]["median_s"]):
        if row["median_s"] >= 0.001:
            print(f"  {name:24s} {row['median_s']:8.3f}")
    print()
    labels = {
        "inprocess_overhead_vs_plain_le_5pct": "in-process overhead <= 5 % over plain pytest",
        "inprocess_no_worse_than_reportlog": "in-process no worse than pytest-reportlog",
        "launcher_fixed_cost_lt_1s": "launcher fixed cost < 1 s",
        "sandbox_verify_le_1_15x_plain": "verify in the sandbox <= 1.15x plain pytest",
        "sandbox_verify_le_0_5s_over_plain": "verify in the sandbox <= 0.5 s over plain pytest",
        "reward_checks_le_1_10x_verify_without": "reward checks <= 1.10x verify without them",
    }
    for key, status in result["targets"].items():
        print(f"  [{status}] {labels[key]}")
    if result["problems"]:
        print("\nPROBLEMS:")
        for line in result["problems"]:
            print(f"  {line}")
    hooks = result["profiles"].get("in_process_hooks")
    if hooks:
        print(
            f"\nin-process plugin, wall ms per run (median of {hooks['runs']}; plugin total "
            f"{hooks['plugin_total_ms']} ms of a {hooks['wall_median_s']} s run):"
        )
        for label, row in hooks["rows"].items():
            print(f"  {row['median_ms']:8.1f} ms {row['calls']:6d}x  {label}")
    for side in ("in_process_cprofile", "launcher_cprofile"):
        prof = result["profiles"].get(side)
        if not prof:
            continue
        print(f"\ncProfile: {side} (cumulative s; cProfile inflates call-heavy code)")
        for key in ("plugin_functions", "package_functions"):
            for row in prof.get(key, [])[:12]:
                print(
                    f"  {row['cumtime_s']:8.4f} cum {row['tottime_s']:8.4f} own "
                    f"{row['calls']:7d}x  {row['function']}"
                )
    shown = path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path
    print(f"\nresults: {shown}  (run took {result['elapsed_s']} s)")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
