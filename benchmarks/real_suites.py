"""Honest upstream bug fixes on real PyPI test suites must pass ``loop-contract verify``.

For every entry of ``SUITES`` (a package, an old and a new release with a bug fix), this script:

1. downloads both source distributions (``pip download --no-deps --no-binary :all:``) into
   ``/tmp/real-suites/cache`` and unpacks them;
2. makes a virtualenv ``/tmp/real-suites/<pkg>/venv`` with pytest, the entry's test
   dependencies and the repository below installed in editable mode;
3. builds a git repository ``/tmp/real-suites/<pkg>/repo`` from the OLD release's tree with the
   NEW release's test folder (the referee); runs the new tests with plain pytest against the old
   and the new code, each in a copy of its own, and takes the ids that fail with the old code
   and pass with the new one as the acceptance tests (at most ``--max-ids``, changed behaviour
   before a name the old release lacks); commits them in a ``mode: fix`` contract (``loop-contract
   check`` validates it), leaving out test modules the old code cannot even import;
4. runs ``loop-contract baseline``, puts the NEW release's source (not its tests; with its
   ``PKG-INFO``/``*.egg-info``, the version the suite may read) in the work tree and runs
   ``loop-contract verify --json``; when that reports a finding or a checkpoint, verifies the
   unchanged old release (``--candidate HEAD``) as a control;
5. prints one line per package (then its acceptance ids, findings, checkpoints, twins check,
   ``suite_writes`` and ``capability_profile``) and writes everything to
   ``results/real_suites.json`` (after every package).

It is a measurement: a finding or a checkpoint on an honest fix is the result, not a failure
of the script. Standard library only; run it with the project's virtualenv::

    .venv/bin/python benchmarks/real_suites.py [--only NAME ...] [--discover] [--fresh]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
LOOP_CONTRACT = PROJECT / ".venv" / "bin" / "loop-contract"
RESULTS = HERE / "results" / "real_suites.json"
WORK = Path("/tmp/real-suites")
CACHE = WORK / "cache"
TEST_DIRS = ("tests", "test", "testing")
NOT_SOURCE = {"setup.py", "ez_setup.py", "conftest.py", "noxfile.py", "tasks.py", "docs", "doc"}
RUN_TIMEOUT = 600
# pytest 9 turns deprecations that older suites still use into collection errors.
PYTEST = "pytest>=8,<9"

# Loaded with ``-p`` into the plain pytest runs that find the acceptance tests: one outcome per
# node id (a failure in any phase wins), written as JSON when the session ends.
COLLECTOR = """\
import json
import os

_OUTCOMES = {}
_MESSAGES = {}
_ERRORS = []


def pytest_collectreport(report):
    if report.failed:
        _ERRORS.append(report.nodeid)


def pytest_runtest_logreport(report):
    if _OUTCOMES.get(report.nodeid) == "failed":
        return
    if report.failed:
        _OUTCOMES[report.nodeid] = "failed"
        crash = getattr(report.longrepr, "reprcrash", None)
        _MESSAGES[report.nodeid] = str(getattr(crash, "message", report.longrepr))[:300]
    elif report.skipped:
        _OUTCOMES[report.nodeid] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call":
        _OUTCOMES[report.nodeid] = "xpassed" if hasattr(report, "wasxfail") else "passed"


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["REAL_SUITES_OUT"], "w", encoding="utf-8") as out:
        data = {"outcomes": _OUTCOMES, "messages": _MESSAGES, "collection_errors": _ERRORS}
        json.dump(data, out)
"""


@dataclass(frozen=True)
class Suite:
    """One package and a release pair whose newer release fixes a bug with a test."""

    name: str  # the PyPI name
    old: str
    new: str
    fix: str  # what the new release fixes (from its changelog)
    deps: tuple[str, ...] = ()  # test requirements besides pytest
    args: tuple[str, ...] = ()  # pytest arguments (also the contract's pytest.args)
    tests: str = ""  # the test folder, relative to the sdist's root (default: found)
    source: tuple[str, ...] = ()  # the package's source paths (default: found)
    writes: str = ""  # what the suite writes under its own test folder, if anything


SUITES: tuple[Suite, ...] = (
    Suite(
        "more-itertools",
        "11.0.2",
        "11.1.0",
        "numeric_range's empty ranges; peekable/seekable/serialize fixes",
    ),
    Suite("cachetools", "7.0.3", "7.0.4", "@cachedmethod.cache_key behaviour"),
    Suite("parse", "1.20.1", "1.20.2", "a hyphen inside a field name"),
    Suite("boltons", "23.0.0", "23.1.0", "fixes in cacheutils, dictutils, iterutils, tbutils"),
    Suite(
        "jinja2",
        "3.1.2",
        "3.1.3",
        "xmlattr rejects keys with spaces (GHSA-h5c8-rqwp-cp95); required-block check",
        writes="tests/res/templates/test.html: os.utime (test_caches_template_based_on_mtime)",
    ),
    Suite("xmltodict", "0.13.0", "0.14.0", "whitespace handling, streaming attributes, indent"),
    Suite("pathspec", "0.12.0", "0.12.1", "PathSpec.match_file() returned None (issue #84)"),
    Suite(
        "tomlkit",
        "0.13.0",
        "0.13.2",
        "super-table check; deleting keys from an out-of-order table (#374, #379)",
        deps=("pyyaml",),
        writes="tests/examples/example.toml: written back through TOMLFile (test_toml_file)",
    ),
    Suite(
        "mako",
        "1.3.6",
        "1.3.8",
        "dictionary literals in function calls, nested braces (#400, #401)",
        writes="test/templates/modules/**: compiled template modules (module_directory tests)",
    ),
    Suite("humanize", "4.9.0", "4.10.0", "metric() formatting", deps=("freezegun", "coverage")),
    Suite("wcwidth", "0.2.12", "0.2.13", "Korean Jamo widths", args=("-o", "addopts=")),
    Suite("semver", "3.0.1", "3.0.2", "replace() from a subclass", args=("-o", "addopts=")),
    # Its fix (CVE-2024-3651, quadratic time on crafted input) adds no failing test: dropped.
    Suite("idna", "3.6", "3.7", "quadratic-time encode() on crafted input (CVE-2024-3651)"),
)


@dataclass
class Result:
    """What one package measured; ``asdict``-like via ``vars``."""

    name: str
    old: str
    new: str
    fix: str
    writes: str
    status: str = "pending"  # ok | dropped | discovered | error | baseline_refused
    note: str = ""
    tests_dir: str = ""
    source: list[str] = field(default_factory=list)
    metadata: list[str] = field(default_factory=list)  # swapped with the source
    changed_files: list[str] = field(default_factory=list)  # the candidate: old -> new
    tests_total: int = 0
    old_run: dict[str, int] = field(default_factory=dict)
    new_run: dict[str, int] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)  # passed with old, not with new
    acceptance: list[str] = field(default_factory=list)
    acceptance_found: int = 0
    old_failures: dict[str, str] = field(default_factory=dict)
    check_exit: int | None = None
    baseline_exit: int | None = None
    baseline_output: str = ""
    verify_exit: int | None = None
    verdict: str = ""
    reasons: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    twins: dict[str, Any] | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    isolation: str = ""
    suite_writes: dict[str, Any] = field(default_factory=dict)
    capability_profile: Any = None
    control: dict[str, Any] = field(default_factory=dict)  # HEAD verified, when a finding fired
    seconds: dict[str, float] = field(default_factory=dict)


class StepError(RuntimeError):
    """A step that could not be done; its message goes in the result."""


def run(
    cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def must(proc: subprocess.CompletedProcess[str], what: str) -> str:
    if proc.returncode != 0:
        raise StepError(f"{what} exited {proc.returncode}: {tail(proc.stdout + proc.stderr)}")
    return proc.stdout


def tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that points Python somewhere else."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "PYTEST_", "VIRTUAL_ENV", "LOOP_CONTRACT"))
    }
    env.update(extra)
    return env


# -- sources ---------------------------------------------------------------------------------


def download(name: str, version: str) -> Path:
    """The sdist of ``name==version`` in the cache (downloaded once)."""
    folder = CACHE / f"{name}-{version}"
    found = sorted(p for p in folder.glob("*") if p.suffix in (".gz", ".zip", ".bz2"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
    must(run([*cmd, "-d", str(folder), f"{name}=={version}"], env=clean_env()), "pip download")
    found = sorted(p for p in folder.glob("*") if p.suffix in (".gz", ".zip", ".bz2"))
    if not found:
        raise StepError(f"pip download left no sdist for {name}=={version}")
    return found[0]


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack an sdist into an empty ``dest``; its one top-level folder."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(dest, filter="data")
    tops = list(dest.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise StepError(f"{archive.name}: expected one top-level folder, got {len(tops)}")
    return tops[0]


def find_tests(root: Path, suite: Suite) -> str:
    if suite.tests:
        return suite.tests
    for name in (*TEST_DIRS, *(f"src/{d}" for d in TEST_DIRS)):
        if (root / name).is_dir():
            return name
    raise StepError(f"no test folder in {root.name}; name it in the table")


def find_source(root: Path, suite: Suite, tests: str) -> list[str]:
    """The package's source paths: ``src/``, else top-level packages and modules."""
    if suite.source:
        return list(suite.source)
    if (root / "src").is_dir():
        return ["src"]
    found = []
    for path in sorted(root.iterdir()):
        if path.name in NOT_SOURCE or path.name == tests or path.name.startswith((".", "test")):
            continue
        if (path.is_dir() and (path / "__init__.py").is_file()) or path.suffix == ".py":
            found.append(path.name)
    if not found:
        raise StepError(f"no source package in {root.name}; name it in the table")
    return found


def is_metadata(name: str) -> bool:
    """The sdist's own metadata (the release's version for ``importlib.metadata``)."""
    return name == "PKG-INFO" or name.endswith(".egg-info")


def copy_path(src_root: Path, dest_root: Path, rel: str, skip: str = "") -> None:
    """Copy ``rel`` from one tree to the other, leaving out ``skip`` (a nested test folder)."""
    src, dest = src_root / rel, dest_root / rel
    if not src.exists():
        return
    if src.is_dir():
        ignore_dir = (src_root / skip).resolve() if skip else None

        def ignore(folder: str, names: list[str]) -> list[str]:
            out = [n for n in names if n == "__pycache__"]
            if ignore_dir is not None:
                out += [n for n in names if (Path(folder) / n).resolve() == ignore_dir]
            return out

        shutil.copytree(src, dest, ignore=ignore, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def remove_path(root: Path, rel: str, keep: str = "") -> None:
    """Remove ``rel`` from a tree, keeping ``keep`` (a test folder nested inside it)."""
    target = root / rel
    if not target.exists():
        return
    if target.is_file():
        target.unlink()
        return
    keep_path = (root / keep).resolve() if keep else None
    for child in target.iterdir():
        resolved = child.resolve()
        if keep_path is not None and (resolved == keep_path or keep_path.is_relative_to(resolved)):
            if resolved != keep_path:
                remove_path(root, str(child.relative_to(root)), keep)
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def referee_tree(old: Path, new: Path, dest: Path, tests: str) -> None:
    """``dest``: the old release with the new release's test folder."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(old, dest, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    shutil.rmtree(dest / tests, ignore_errors=True)
    copy_path(new, dest, tests)


def put_new_source(repo: Path, new: Path, source: list[str], tests: str) -> None:
    for rel in source:
        remove_path(repo, rel, keep=tests)
        copy_path(new, repo, rel, skip=tests)


# -- environment -----------------------------------------------------------------------------


def make_venv(suite: Suite, base: Path, repo: Path) -> Path:
    """The package's virtualenv: pytest, the entry's test deps, the repository (editable)."""
    venv = base / "venv"
    python = venv / "bin" / "python"
    wanted = json.dumps([PYTEST, *suite.deps, str(repo)])
    marker = venv / "real-suites.json"
    if python.exists() and marker.exists() and marker.read_text("utf-8") == wanted:
        return python
    shutil.rmtree(venv, ignore_errors=True)
    must(run(["python3", "-m", "venv", str(venv)], env=clean_env()), "python3 -m venv")
    pinned = any(d.lower().startswith("pytest") and d[6:7] in "<>=!~ " for d in suite.deps)
    pip = [str(python), "-m", "pip", "install", "-q"]
    reqs = [*([] if pinned else [PYTEST]), *suite.deps]
    must(run([*pip, *reqs], env=clean_env()), "pip install test deps")
    must(run([*pip, "-e", str(repo)], env=clean_env()), "pip install -e repo")
    marker.write_text(wanted, "utf-8")
    return python


def import_root(tree: Path) -> Path:
    return tree / "src" if (tree / "src").is_dir() else tree


# -- acceptance tests ------------------------------------------------------------------------


def plain_pytest(python: Path, tree: Path, suite: Suite, tests: str, out: Path) -> dict[str, Any]:
    """Run the tree's test folder with plain pytest; outcomes by node id."""
    plugin_dir = WORK / "_collector"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    (plugin_dir / "real_suites_collector.py").write_text(COLLECTOR, "utf-8")
    paths = os.pathsep.join([str(import_root(tree)), str(plugin_dir)])
    env = clean_env(
        PYTHONPATH=paths, REAL_SUITES_OUT=str(out), PYTHONDONTWRITEBYTECODE="1", TZ="UTC"
    )
    out.unlink(missing_ok=True)
    cmd = [str(python), "-m", "pytest", "-q", "-p", "real_suites_collector", "-p"]
    cmd += ["no:cacheprovider", "--continue-on-collection-errors", *suite.args, tests]
    proc = run(cmd, cwd=tree, env=env, timeout=RUN_TIMEOUT)
    if not out.exists():
        output = tail(proc.stdout + proc.stderr)
        raise StepError(f"plain pytest in {tree.name} wrote no results: {output}")
    data: dict[str, Any] = json.loads(out.read_text("utf-8"))
    data["exit"] = proc.returncode
    return data


def new_api(message: str) -> bool:
    """Whether an old-release failure only says that a name or parameter is missing."""
    missing = ("AttributeError", "ImportError", "ModuleNotFoundError", "NameError")
    return message.startswith(missing) or (
        message.startswith("TypeError") and "argument" in message
    )


def counts(outcomes: dict[str, str]) -> dict[str, int]:
    tally: dict[str, int] = {}
    for outcome in outcomes.values():
        tally[outcome] = tally.get(outcome, 0) + 1
    return dict(sorted(tally.items()))


def contract_text(suite: Suite, ids: list[str], args: list[str]) -> str:
    def q(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    lines = [
        "version: 1",
        f"id: {suite.name}-{suite.old}-to-{suite.new}",
        f"goal: {q(f'{suite.name} {suite.new}: {suite.fix}')}",
        "mode: fix",
        "dod:",
        "  - id: upstream-fix",
        f"    text: {q(f'The tests {suite.new} added or changed pass against the fixed code.')}",
        "    tests:",
        *(f"      - {q(i)}" for i in ids),
        "pytest:",
        f"  args: [{', '.join(q(a) for a in args)}]",
        "  timeout: 900",
        "  env: {TZ: UTC}",
    ]
    return "\n".join(lines) + "\n"


def git(repo: Path, *args: str) -> str:
    return must(run(["git", *args], cwd=repo, env=clean_env()), f"git {args[0]}")


def loop_contract(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(LOOP_CONTRACT), *args], cwd=repo, env=clean_env(), timeout=1800)


# -- one package -----------------------------------------------------------------------------


def measure(suite: Suite, res: Result, discover_only: bool, max_ids: int) -> None:
    """Fill ``res`` step by step (what a failing step leaves stays measured)."""
    base = WORK / suite.name
    clock = time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        res.seconds[step] = round(now - clock, 1)
        clock = now

    old = unpack(download(suite.name, suite.old), base / "old")
    new = unpack(download(suite.name, suite.new), base / "new")
    tests = res.tests_dir = find_tests(new, suite)
    res.source = find_source(new, suite, tests)
    res.metadata = sorted(
        {m.name for tree in (old, new) for m in tree.iterdir() if is_metadata(m.name)}
    )
    repo = base / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    referee_tree(old, new, repo, tests)
    lap("download")
    python = make_venv(suite, base, repo)
    lap("venv")

    # The new tests against the old and the new code, each in a throwaway copy (some suites
    # write into their own folder).
    referee_tree(old, new, base / "run-old", tests)
    shutil.rmtree(base / "run-new", ignore_errors=True)
    shutil.copytree(new, base / "run-new", symlinks=True)
    before = plain_pytest(python, base / "run-old", suite, tests, base / "old.json")
    after = plain_pytest(python, base / "run-new", suite, tests, base / "new.json")
    lap("discover")
    b_out, a_out = before["outcomes"], after["outcomes"]
    res.old_run, res.new_run = counts(b_out), counts(a_out)
    res.tests_total = len(a_out)
    found = [i for i, o in a_out.items() if o == "passed" and b_out.get(i) == "failed"]
    res.acceptance_found = len(found)
    # Behaviour the fix changed first; a test of an API the old release lacks after it.
    found.sort(key=lambda i: (new_api(before["messages"].get(i, "")), i))
    res.acceptance = found[:max_ids]
    res.old_failures = {i: before["messages"].get(i, "") for i in res.acceptance}
    res.regressions = sorted(i for i, o in b_out.items() if o == "passed" and a_out.get(i) != o)
    # A test module the old code cannot import stops the baseline's collection: leave it out.
    res.ignored = sorted(e for e in before["collection_errors"] if e.endswith(".py"))
    if not res.acceptance:
        res.status = "dropped"
        res.note = "no test fails with the old release and passes with the new one"
        return
    if discover_only:
        res.status = "discovered"
        return

    args = [*suite.args, *(f"--ignore={e}" for e in res.ignored)]
    (repo / "loopcontract.yml").write_text(contract_text(suite, res.acceptance, args), "utf-8")
    with (repo / ".gitignore").open("a", encoding="utf-8") as gi:
        gi.write("\n.loop-contract/\n__pycache__/\n.pytest_cache/\n")
    check = loop_contract(repo, "check")
    res.check_exit = check.returncode
    if check.returncode != 0:
        raise StepError(f"loop-contract check exited {check.returncode}: {tail(check.stdout)}")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "real-suites@example.invalid")
    git(repo, "config", "user.name", "real-suites")
    # -f: the whole release, also what its own .gitignore names (a generated _version.py);
    # not the bytecode a build backend left while the venv installed the tree.
    for cache in sorted(repo.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache)
    git(repo, "add", "-A", "-f", ".")
    git(repo, "commit", "-q", "-m", f"{suite.name} {suite.old} with the {suite.new} tests")

    py = str(python)
    baseline = loop_contract(repo, "baseline", "--json", "-q", "--python", py)
    lap("baseline")
    res.baseline_exit = baseline.returncode
    if baseline.returncode != 0:
        res.status = "baseline_refused"
        res.baseline_output = tail(baseline.stdout + baseline.stderr, 30)
        return
    recorded = json.loads((repo / ".loop-contract" / "baseline.json").read_text("utf-8"))
    extra = recorded.get("extra") or {}
    res.suite_writes = extra.get("suite_writes") or {}
    res.capability_profile = extra.get("capability_profile")

    put_new_source(repo, new, [*res.source, *res.metadata], tests)
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    res.changed_files = sorted(row[3:] for row in status.splitlines())
    verify = loop_contract(repo, "verify", "--json", "-q", "--python", py)
    lap("verify")
    res.verify_exit = verify.returncode
    verdict_file = repo / ".loop-contract" / "verdict.json"
    if not verdict_file.exists():
        raise StepError(f"verify wrote no verdict: {tail(verify.stdout + verify.stderr)}")
    verdict = json.loads(verdict_file.read_text("utf-8"))
    tamper = verdict.get("tamper") or {}
    res.verdict = verdict.get("verdict", "")
    res.reasons = verdict.get("reasons") or []
    res.findings = tamper.get("findings") or []
    res.checks = tamper.get("checks") or []
    res.twins = next((c for c in res.checks if c.get("id") == "twins"), None)
    res.checkpoints = [r["message"] for r in res.reasons if r.get("code") == "checkpoint_pending"]
    res.summary = verdict.get("summary") or {}
    res.isolation = verdict.get("isolation", "")
    res.status = "ok"
    if res.findings or res.checkpoints:
        res.control = control_run(repo, base / "control-verdict.json", py)
        lap("control")


def control_run(repo: Path, verdict_file: Path, python: str) -> dict[str, Any]:
    """The unchanged old release (HEAD) verified the same way: the same finding there means
    the suite itself raises it, whatever the candidate does."""
    verdict_file.unlink(missing_ok=True)
    args = ["--candidate", "HEAD", "--verdict", str(verdict_file), "-q", "--python", python]
    proc = loop_contract(repo, "verify", *args)
    if not verdict_file.exists():
        return {"exit": proc.returncode, "output": tail(proc.stdout + proc.stderr)}
    seen = json.loads(verdict_file.read_text("utf-8"))
    findings = (seen.get("tamper") or {}).get("findings") or []
    reasons = seen.get("reasons") or []
    return {
        "exit": proc.returncode,
        "findings": sorted({f.get("code", "?") for f in findings}),
        "count": len(findings),
        "checkpoints": sum(r.get("code") == "checkpoint_pending" for r in reasons),
    }


def report(res: Result) -> list[str]:
    """The package's summary line, then what it consists of, indented."""
    codes = ",".join(sorted({f.get("code", "?") for f in res.findings})) or "-"
    profile = res.capability_profile if isinstance(res.capability_profile, list) else []
    lines = [
        f"{res.name:15} {res.old:>7} -> {res.new:<7} tests={res.tests_total:<4} "
        f"acceptance={len(res.acceptance)}/{res.acceptance_found:<3} "
        f"verify={'-' if res.verify_exit is None else res.verify_exit:<3} findings={codes} "
        f"checkpoints={len(res.checkpoints)} suite_writes={len(res.suite_writes)} "
        f"capability_profile={len(profile)} [{res.status}]"
    ]
    lines += [f"    acceptance {nodeid}" for nodeid in res.acceptance]
    lines += [f"    finding {text}" for text in finding_lines(res.findings)]
    lines += [f"    checkpoint {message}" for message in res.checkpoints]
    if res.control:
        lines.append(f"    control (unchanged old release verified): {res.control}")
    if res.twins:
        lines.append(f"    twins {res.twins.get('status')}: {res.twins.get('message')}")
    lines += [f"    suite_writes {path}: {kind}" for path, kind in res.suite_writes.items()]
    if profile:
        pairs = ", ".join(":".join(map(str, entry)) for entry in profile)
        lines.append(f"    capability_profile {pairs}")
    if res.note or res.baseline_output:
        lines.append(f"    note {res.note or res.baseline_output}")
    return lines


def finding_lines(findings: list[dict[str, Any]]) -> list[str]:
    """One line per (code, path, line), with the first message verbatim and a count."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for f in findings:
        key = (str(f.get("code")), str(f.get("path", "")), str(f.get("line", "")))
        groups.setdefault(key, []).append(f)
    out = []
    for (code, path, lineno), group in groups.items():
        more = f" (x{len(group)})" if len(group) > 1 else ""
        out.append(f"{code} {path}:{lineno}{more}: {group[0].get('message', '')}")
    return out


def project_state() -> str:
    """The verifier's commit, with ``+dirty`` when its package has uncommitted changes (the
    editable install runs whatever the work tree holds at each launch)."""
    head = run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT).stdout.strip()
    dirty = run(["git", "status", "--porcelain", "--", "pytest_loopcontract"], cwd=PROJECT)
    return head + ("+dirty" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="package names to run")
    parser.add_argument("--discover", action="store_true", help="stop after the acceptance ids")
    parser.add_argument("--fresh", action="store_true", help="rebuild the venvs")
    parser.add_argument("--max-ids", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    opts = parser.parse_args()
    if opts.fresh:
        for suite in SUITES:
            shutil.rmtree(WORK / suite.name / "venv", ignore_errors=True)
    chosen = [s for s in SUITES if not opts.only or s.name in opts.only]
    started = time.perf_counter()
    total = 0.0
    verifier = project_state()
    results = []
    for suite in chosen:
        t0 = time.perf_counter()
        res = Result(suite.name, suite.old, suite.new, suite.fix, suite.writes)
        try:
            measure(suite, res, opts.discover, opts.max_ids)
        except (StepError, subprocess.TimeoutExpired, OSError, ValueError) as exc:
            res.status, res.note = "error", f"{type(exc).__name__}: {exc}"
        res.seconds["total"] = round(time.perf_counter() - t0, 1)
        results.append(res)
        print("\n".join(report(res)), flush=True)
        total = round(time.perf_counter() - started, 1)
        if not opts.discover:  # after every package: an interrupted run keeps what it measured
            opts.out.parent.mkdir(parents=True, exist_ok=True)
            payload = {
                "verifier": verifier,
                "verifier_at_end": project_state(),
                "seconds": total,
                "pytest": PYTEST,
                "results": [vars(r) for r in results],
            }
            text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
            opts.out.write_text(text, "utf-8")
    ok = sum(r.status == "ok" for r in results)
    clean = sum(r.verify_exit == 0 and not r.findings and not r.checkpoints for r in results)
    print(f"{len(results)} packages, {ok} verified, {clean} passed clean, in {total} s")
    if project_state() != verifier:
        print(f"note: the verifier changed during the run ({verifier} -> {project_state()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
