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
import cProfile
import contextlib
import datetime as dt
import functools
import io
import json
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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
VERIFY_CLI = "loop-contract verify (CLI)"
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

CORE_BASE = 'def answer() -> int:\n    return 41\n'
CORE_FIXED = 'def answer() -> int:\n    return 42\n'

CONFTEST = '''\
import pytest


@pytest.fixture
def small_number():
    return 7
'''

ACCEPTANCE = '''\
from benchpkg.core import answer


def test_answer_is_42():
    assert answer() == 42
'''


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


def generate_project(
    repo: Path, n_tests: int, n_files: int, n_test_files: int
) -> dict[str, int]:
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
            files[f"{folder}/item_{d:04d}.json"] = json.dumps(
                {"id": d, "name": f"item-{d}", "tags": ["a", "b"]}
            ) + "\n"
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


def build_repo(workdir: Path, args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    repo = workdir / "repo"
    repo.mkdir(parents=True)
    counts = generate_project(repo, args.tests, args.files, args.test_files)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "bench@example.invalid")
    _git(repo, "config", "user.name", "bench")
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
        raise SystemExit(f"loop-contract baseline failed ({proc.returncode}):\n{proc.stdout}\n"
                         f"{proc.stderr}")
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


def bench_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def pytest_variants(out: Path) -> dict[str, list[str]]:
    base = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return {
        ANCHOR: base,
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


def run_cmd(cmd: list[str], cwd: Path, log: Path) -> tuple[float, int]:
    with log.open("wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.run(
            cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=bench_env(), check=False,
        )
        elapsed = time.perf_counter() - t0
    return elapsed, proc.returncode


# Launcher phases: the names verify() looks up in its module namespace. Wrapping them (here, at
# run time; the package is not edited) gives a per-phase breakdown of one verify() call.
PHASES = (
    "load_baseline",
    "_pinned_contract",
    "snapshot_worktree",
    "resolve_commit",
    "is_dirty",
    "tree_of",
    "list_tree",
    "changed_paths",
    "diff_text",
    "pin_findings",
    "boundary_findings",
    "harness_findings",
    "make_scratch",
    "export_tree",
    "purge_bytecode",
    "_restore_pins",
    "run_pytest",
    "crosscheck_findings",
    "added_lines_from_diff",
    "evaluate",
    "remove_tree",
    "write_json_atomic",
)


@contextlib.contextmanager
def phase_timer() -> Iterator[dict[str, float]]:
    import pytest_loopcontract.verify as vmod

    spent: dict[str, float] = {}
    originals: dict[str, Callable[..., Any]] = {}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

        return timed

    for name in PHASES:
        fn = getattr(vmod, name, None)
        if callable(fn):
            originals[name] = fn
            setattr(vmod, name, wrap(name, fn))
    try:
        yield spent
    finally:
        for name, fn in originals.items():
            setattr(vmod, name, fn)


def run_verify_api(repo: Path, out: Path) -> dict[str, Any]:
    from pytest_loopcontract.verify import verify

    with phase_timer() as spent:
        t0 = time.perf_counter()
        outcome = verify(repo, verdict_path=out / "verdict-api.json")
        wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "launcher_seconds": outcome.launcher_seconds,
        "pytest_seconds": outcome.pytest_seconds,
        "verdict": outcome.verdict.get("verdict"),
        "exit_code": outcome.verdict.get("exit_code"),
        "phases": dict(spent),
    }


def measure(repo: Path, out: Path, repeat: int, log: Callable[[str], None]) -> dict[str, Any]:
    pyvariants = pytest_variants(out)
    cli = [PY, "-m", "pytest_loopcontract", "verify", "--json"]
    names = [*pyvariants, VERIFY_CLI, VERIFY_API]
    times: dict[str, list[float]] = {n: [] for n in names}
    api_runs: list[dict[str, Any]] = []
    problems: list[str] = []

    def one(name: str, timed: bool) -> None:
        logfile = out / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".log")
        if name in pyvariants:
            elapsed, code = run_cmd(pyvariants[name], repo, logfile)
            if code != 0:
                problems.append(f"{name}: exit {code} (see {logfile})")
            if name == LOOP:
                verdict = json.loads((repo / ".loop-contract/verdict.json").read_text("utf-8"))
                if verdict.get("verdict") != "pass":
                    problems.append(f"{name}: verdict {verdict.get('verdict')}")
        elif name == VERIFY_CLI:
            elapsed, code = run_cmd(cli, repo, logfile)
            if code != 0:
                problems.append(f"{name}: exit {code} (see {logfile})")
            try:
                doc = json.loads(logfile.read_text("utf-8"))
            except ValueError:
                doc = {"verdict": "unreadable --json output"}
            if doc.get("verdict") != "pass":
                problems.append(f"{name}: verdict {doc.get('verdict')}")
        else:
            result = run_verify_api(repo, out)
            elapsed = result["wall"]
            if result["verdict"] != "pass":
                problems.append(f"{name}: verdict {result['verdict']}")
            if timed:
                api_runs.append(result)
        if timed:
            times[name].append(elapsed)
        log(f"    {'' if timed else '(warm-up) '}{name:30s} {elapsed:7.3f} s")

    log("  warm-up round")
    for name in names:
        one(name, timed=False)
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]
        log(f"  round {r + 1}/{repeat}")
        for name in order:
            one(name, timed=True)
    return {"times": times, "api_runs": api_runs, "problems": sorted(set(problems))}


# ---------------------------------------------------------------------------------------------
# profiling (when a target is missed, or on request)
# ---------------------------------------------------------------------------------------------


def _top(stats_path: Path, match: str, limit: int) -> list[dict[str, Any]]:
    stats = pstats.Stats(str(stats_path), stream=io.StringIO())
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if match in file or match in func:
            rows.append({
                "function": f"{Path(file).name}:{line}({func})",
                "calls": nc,
                "tottime_s": round(tt, 4),
                "cumtime_s": round(ct, 4),
            })
    rows.sort(key=lambda r: -r["cumtime_s"])
    return rows[:limit]


def profile_plugin(repo: Path, out: Path) -> dict[str, Any]:
    """cProfile the plain and the --loop-contract runs; attribute the plugin's own time."""
    report: dict[str, Any] = {}
    variants = pytest_variants(out)
    for name in (ANCHOR, LOOP):
        prof = out / f"profile-{'loop' if name == LOOP else 'plain'}.prof"
        cmd = [PY, "-m", "cProfile", "-o", str(prof), *variants[name][1:]]
        elapsed, code = run_cmd(cmd, repo, out / "profile.log")
        stats = pstats.Stats(str(prof), stream=io.StringIO())
        report[name] = {"wall_s": round(elapsed, 3), "exit": code,
                        "total_tt_s": round(stats.total_tt, 3)}  # type: ignore[attr-defined]
        if name == LOOP:
            report["plugin_functions"] = _top(prof, "pytest_loopcontract", 25)
            report["subprocess_waits"] = _top(prof, "subprocess.py", 5)
        report[name]["profile"] = str(prof)
    return report


def profile_launcher(repo: Path, out: Path) -> dict[str, Any]:
    """cProfile one verify() call in this process (the launcher side only; the child pytest
    shows up as a wait inside run_pytest)."""
    from pytest_loopcontract.verify import verify

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


def summarise(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    anchor = statistics.median(times[ANCHOR])
    out = {}
    for name, values in times.items():
        med = statistics.median(values)
        out[name] = {
            "median_s": round(med, 4),
            "min_s": round(min(values), 4),
            "max_s": round(max(values), 4),
            "ratio_to_anchor": round(med / anchor, 4),
            "runs_s": [round(v, 4) for v in values],
        }
    return out


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "sched_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    with contextlib.suppress(OSError):
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    with contextlib.suppress(OSError, StopIteration):
        text = Path("/proc/cpuinfo").read_text()
        info["cpu"] = next(
            line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")
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
    parser.add_argument("--files", type=int, default=2000,
                        help="files in the repository, tests included (default 2000)")
    parser.add_argument("--test-files", type=int, default=100, help="test modules (default 100)")
    parser.add_argument("--repeat", type=int, default=7,
                        help="timed rounds per variant, after one warm-up round (default 7)")
    parser.add_argument("--profile", choices=("auto", "always", "never"), default="auto",
                        help="cProfile the side that misses its target (default auto)")
    parser.add_argument("--results-dir", default=str(HERE / "results"))
    parser.add_argument("--keep", action="store_true", help="keep the generated repository")
    parser.add_argument("--quiet", action="store_true", help="only print the final report")
    args = parser.parse_args()

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, flush=True)

    started = time.perf_counter()
    machine = machine_info()
    workdir = Path(tempfile.mkdtemp(prefix="loopcontract-bench-"))
    out = workdir / "out"
    out.mkdir()
    try:
        log(f"generating {args.tests} tests / {args.files} files in {workdir} ...")
        repo, project = build_repo(workdir, args)
        log(f"  baseline took {project['baseline_seconds']} s; allowed plugins recorded: "
            f"{', '.join(project['allowed_plugins']) or '(none)'}")
        log(f"measuring ({args.repeat} interleaved rounds + 1 warm-up) ...")
        measured = measure(repo, out, args.repeat, log)
        table = summarise(measured["times"])
        api = measured["api_runs"]
        launcher = [r["launcher_seconds"] for r in api]
        inner = [r["pytest_seconds"] for r in api]
        phases: dict[str, dict[str, float]] = {}
        for name in PHASES:
            vals = [r["phases"].get(name, 0.0) for r in api]
            if any(vals):
                phases[name] = {"median_s": round(statistics.median(vals), 4),
                                "min_s": round(min(vals), 4)}
        med = {k: v["median_s"] for k, v in table.items()}
        overhead_plain = med[LOOP] / med[ANCHOR] - 1
        overhead_reportlog = med[LOOP] / med[REPORTLOG] - 1
        launcher_med = statistics.median(launcher)
        cli_fixed = med[VERIFY_CLI] - statistics.median(inner)
        targets = {
            "inprocess_overhead_vs_plain_le_5pct": overhead_plain <= TARGET_INPROCESS_OVERHEAD,
            "inprocess_no_worse_than_reportlog": med[LOOP] <= med[REPORTLOG],
            "launcher_fixed_cost_lt_1s": launcher_med < TARGET_LAUNCHER_FIXED_S,
        }
        profiles: dict[str, Any] = {}
        want_plugin = args.profile == "always" or (
            args.profile == "auto"
            and not (targets["inprocess_overhead_vs_plain_le_5pct"]
                     and targets["inprocess_no_worse_than_reportlog"])
        )
        want_launcher = args.profile == "always" or (
            args.profile == "auto" and not targets["launcher_fixed_cost_lt_1s"]
        )
        if want_plugin:
            log("profiling the in-process plugin (cProfile) ...")
            profiles["in_process_plugin"] = profile_plugin(repo, out)
        if want_launcher:
            log("profiling the launcher (cProfile) ...")
            profiles["launcher"] = profile_launcher(repo, out)

        result = {
            "benchmark": "verifier",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine,
            "parameters": {"tests": args.tests, "files": args.files,
                           "test_files": args.test_files, "repeat": args.repeat,
                           "warmup_rounds": 1, "order": "round-robin, rotated each round"},
            "project": project,
            "variants": table,
            "commands": {k: " ".join(Path(v[0]).name if i == 0 else v[i] for i in range(len(v)))
                         for k, v in pytest_variants(Path("OUT")).items()}
            | {VERIFY_CLI: "python -m pytest_loopcontract verify --json",
               VERIFY_API: "pytest_loopcontract.verify.verify(repo)"},
            "overhead": {
                "inprocess_vs_plain_pct": round(100 * overhead_plain, 2),
                "inprocess_vs_reportlog_pct": round(100 * overhead_reportlog, 2),
                "jsonreport_vs_plain_pct": round(100 * (med[JSONREPORT] / med[ANCHOR] - 1), 2),
                "reportlog_vs_plain_pct": round(100 * (med[REPORTLOG] / med[ANCHOR] - 1), 2),
            },
            "launcher": {
                "fixed_cost_median_s": round(launcher_med, 4),
                "fixed_cost_min_s": round(min(launcher), 4),
                "inner_pytest_median_s": round(statistics.median(inner), 4),
                "inner_pytest_vs_plain_pct": round(
                    100 * (statistics.median(inner) / med[ANCHOR] - 1), 2),
                "cli_wall_median_s": med[VERIFY_CLI],
                "cli_wall_minus_inner_pytest_s": round(cli_fixed, 4),
                "phases": phases,
                "note": "fixed cost = VerifyOutcome.launcher_seconds (verify wall minus the "
                        "inner pytest subprocess; excludes scratch removal and verdict write, "
                        "which are listed under phases). CLI figure also includes interpreter "
                        "start-up and imports.",
            },
            "targets": {k: verdict_line(v) for k, v in targets.items()},
            "problems": measured["problems"],
            "profiles": profiles,
            "elapsed_s": round(time.perf_counter() - started, 1),
        }
        with contextlib.suppress(OSError):
            result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        results_dir = Path(args.results_dir)
        results_dir.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y-%m-%d")
        path = results_dir / f"verifier-{stamp}.json"
        # Profiles live in the temp dir; keep only their summaries unless --keep.
        if not args.keep:
            for prof in profiles.values():
                for part in prof.values():
                    if isinstance(part, dict):
                        part.pop("profile", None)
                prof.pop("profile", None)
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
    print(f"verifier benchmark  {result['date']}  python {m['python']}  nproc {m['nproc']}  "
          f"load {m.get('loadavg_at_start')} -> {m.get('loadavg_at_end')}")
    print(f"project: {p['tests']} tests in {p['test_files']} files, {p['tracked_files']} tracked "
          f"files, {p['pins']} pins; {result['parameters']['repeat']} interleaved rounds")
    print()
    print(f"{'variant':32s} {'median s':>9s} {'min s':>8s} {'ratio':>7s}")
    print("-" * 59)
    for name, row in result["variants"].items():
        print(f"{name:32s} {row['median_s']:9.3f} {row['min_s']:8.3f} "
              f"{row['ratio_to_anchor']:7.3f}")
    o, la = result["overhead"], result["launcher"]
    print()
    print(f"in-process overhead vs plain pytest : {o['inprocess_vs_plain_pct']:+.1f} %")
    print(f"in-process overhead vs reportlog    : {o['inprocess_vs_reportlog_pct']:+.1f} %")
    print(f"(reportlog vs plain {o['reportlog_vs_plain_pct']:+.1f} %, "
          f"json-report vs plain {o['jsonreport_vs_plain_pct']:+.1f} %)")
    print(f"launcher fixed cost (launcher_seconds): median {la['fixed_cost_median_s']:.3f} s, "
          f"min {la['fixed_cost_min_s']:.3f} s")
    print(f"inner pytest subprocess             : median {la['inner_pytest_median_s']:.3f} s "
          f"({la['inner_pytest_vs_plain_pct']:+.1f} % vs plain pytest)")
    print(f"CLI wall minus inner pytest         : {la['cli_wall_minus_inner_pytest_s']:.3f} s")
    print("launcher phases (median s per verify() call):")
    for name, row in sorted(la["phases"].items(), key=lambda kv: -kv[1]["median_s"]):
        print(f"  {name:24s} {row['median_s']:8.4f}")
    print()
    labels = {
        "inprocess_overhead_vs_plain_le_5pct": "in-process overhead <= 5 % over plain pytest",
        "inprocess_no_worse_than_reportlog": "in-process no worse than pytest-reportlog",
        "launcher_fixed_cost_lt_1s": "launcher fixed cost < 1 s",
    }
    for key, status in result["targets"].items():
        print(f"  [{status}] {labels[key]}")
    if result["problems"]:
        print("\nPROBLEMS:")
        for line in result["problems"]:
            print(f"  {line}")
    for side, prof in result["profiles"].items():
        print(f"\nprofile: {side}")
        for key in ("plugin_functions", "package_functions"):
            for row in prof.get(key, [])[:15]:
                print(f"  {row['cumtime_s']:8.4f} cum {row['tottime_s']:8.4f} own "
                      f"{row['calls']:7d}x  {row['function']}")
    print(f"\nresults: {path}  (run took {result['elapsed_s']} s)")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
