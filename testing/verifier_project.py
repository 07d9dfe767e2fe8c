"""A small project with a bug, its tests and contract, and the real CLI over it: the
verifier tests build on it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from testing.repos import CLIResult, assert_valid_verdict, git

BUGGY = "def double(x):\n    return x + x\n\n\ndef triple(x):\n    return x * 2\n"


FIXED = "def double(x):\n    return x + x\n\n\ndef triple(x):\n    return x * 3\n"


PYPROJECT = """\
[project]
name = "mini"
version = "0.1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
"""


TESTS = """\
from mini.core import double, triple


def test_double(two):
    assert double(two) == 4


def test_triple():
    assert triple(2) == 6
"""


CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"


CONTRACT = """\
version: 1
id: mini
goal: triple() multiplies by three.
mode: {mode}
dod:
  - id: triple
    text: triple(x) is three times x.
    tests:
{tests}
"""


def contract(
    mode: str = "fix", tests: tuple[str, ...] = ("tests/test_core.py::test_triple",)
) -> str:
    return CONTRACT.format(mode=mode, tests="".join(f"      - {t}\n" for t in tests))


def project_files(**overrides: str) -> dict[str, str]:
    files = {
        ".gitignore": ".loop-contract/\n__pycache__/\n",
        "pyproject.toml": PYPROJECT,
        "src/mini/__init__.py": "",
        "src/mini/core.py": BUGGY,
        "tests/conftest.py": CONFTEST,
        "tests/test_core.py": TESTS,
        "loopcontract.yml": contract(),
    }
    files.update(overrides)
    return files


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


def make_repo(root: Path, *, commit: bool = True, **overrides: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_files(root, project_files(**overrides))
    git(root, "init", "-q", "-b", "main")
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
    return root


def cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> CLIResult:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return CLIResult(proc)


def no_traceback(result: CLIResult) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


def read_baseline(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / ".loop-contract/baseline.json").read_text("utf-8"))
    return data


PY = sys.executable


# A test every project below carries: it appends what the run looked like from inside (plugin
# autoload, xdist worker, registered plugins, files of the scratch copy) to a file outside the
# repository, so the tests can see what the launcher really ran.
PROBE_TEST = """\
import json
import os


def test_probe(request):
    root = str(request.config.rootpath)
    files = []
    for folder, dirs, names in os.walk(root):
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in names + links:
            files.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    pm = request.config.pluginmanager
    record = {{
        "autoload": os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"),
        "worker": os.environ.get("PYTEST_XDIST_WORKER"),
        "plugins": sorted(name for name, plugin in pm.list_name_plugin() if plugin is not None),
        "files": sorted(files),
    }}
    with open({path!r}, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\\n")
"""


def probed_repo(tmp_path: Path, **overrides: str) -> tuple[Path, Path]:
    probe = tmp_path / "out" / "probe.jsonl"
    files = {"tests/test_probe.py": PROBE_TEST.format(path=str(probe)), **overrides}
    return make_repo(tmp_path / "mini", commit=True, **files), probe


def probes(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def baseline_ok(repo: Path) -> None:
    result = cli(repo, "baseline")
    assert result.returncode == 0, result.stdout + result.stderr


def verify_json(repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli(repo, "verify", "--json", *args)
    no_traceback(result)
    verdict: dict[str, Any] = result.json()
    assert_valid_verdict(verdict)
    assert verdict["exit_code"] == result.returncode
    return result.returncode, verdict


def reason_codes(verdict: dict[str, Any]) -> set[str]:
    return {r["code"] for r in verdict["reasons"]}


def finding_codes(verdict: dict[str, Any]) -> set[str]:
    return {f["code"] for f in verdict["tamper"]["findings"]}


def with_pytest_settings(text: str, settings: str) -> str:
    return text + "pytest:\n" + "".join(f"  {line}\n" for line in settings.splitlines())


def process_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_until(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``check`` came true within ``seconds`` (asked every 50 ms)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def processes_with(token: str) -> list[int]:
    """Host pids whose command line carries ``token`` (pids seen inside a sandbox belong to
    its own PID namespace, so the tests find the candidate's processes by a marker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if token.encode() in (entry / "cmdline").read_bytes() and not process_gone(
                int(entry.name)
            ):
                found.append(int(entry.name))
    return found


def kill_launched(launched: Sequence[subprocess.Popen[str]], token: str) -> None:
    """Kill what a stopping test left running: each launcher's session still alive, and every
    process whose command line carries ``token`` (the candidate's, inside a sandbox)."""
    for proc in launched:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    for pid in processes_with(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
