"""The project's test environment: which interpreter runs the tests, with what path and variables.

The referee and the player must not share an environment: the verifier's own dependencies
(PyYAML, jsonschema and attrs, PyGithub and requests) could be the very packages under test.
So the tests run under the project's interpreter, chosen in this order: ``--python``, the
contract's ``pytest.python``, the repository's ``.venv``, the active virtual environment, and
last the launcher's own interpreter. ``pytest.pythonpath`` (relative to the tree) and
``pytest.env`` reach the test process only. The baseline records all of it, and a verification
refuses to compare against a baseline taken in another environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.workspace import WorkspaceError

__all__ = [
    "TestEnv",
    "environment_differences",
    "probe_test_env",
    "require_same_environment",
    "resolve_python",
]

# Run with -I -S: the interpreter's own startup only, no site-packages, no .pth file.
_PROBE = (
    "import json, sys, platform; print(json.dumps({'executable': sys.executable, "
    "'version': platform.python_version(), 'implementation': sys.implementation.name, "
    "'base_prefix': sys.base_prefix}))"
)

_FIND_MODULES = (
    "import importlib.util, sys; "
    "print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))"
)


@dataclass(frozen=True)
class TestEnv:
    """What the test process runs with; :meth:`describe` is what the baseline records."""

    __test__ = False  # not a pytest test class

    python: str
    version: str
    implementation: str
    readable: tuple[Path, ...] = ()
    pythonpath: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    startup: str = ""
    home: str = ""  # the virtual environment, else the resolved interpreter: its identity
    startup_files: Mapping[str, str] = field(default_factory=dict)  # path -> content hash

    def describe(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "home": self.home,
            "version": self.version,
            "implementation": self.implementation,
            "pythonpath": list(self.pythonpath),
            "env": dict(sorted(self.env.items())),
            "startup": self.startup,
            "startup_files": dict(sorted(self.startup_files.items())),
        }

    def missing_modules(self, names: Sequence[str]) -> list[str]:
        """Which of ``names`` the interpreter cannot import from its own installation (``-I``:
        neither the working folder nor ``PYTHON*`` variables count); an interpreter that does
        not answer leaves it to the run to say what is wrong."""
        try:
            done = subprocess.run(
                [self.python, "-I", "-c", _FIND_MODULES, *names],
                capture_output=True,
                timeout=60,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
        return done.stdout.decode("utf-8", "replace").split() if done.returncode == 0 else []

    def child_pythonpath(self, tree: Path, first: Sequence[Path] = ()) -> str:
        """``PYTHONPATH`` for the child: the verifier's injected folder, then the contract's
        entries resolved inside the tree (never the launcher's own ``PYTHONPATH``)."""
        entries = [str(p) for p in first] + [str(tree / p) for p in self.pythonpath]
        return os.pathsep.join(entries)


def resolve_python(root: Path, option: str | None, configured: str | None) -> str:
    """The interpreter the tests run with (see the module docstring for the order)."""
    for chosen in (option, configured):
        if chosen:
            path = Path(chosen).expanduser()
            return str(path if path.is_absolute() or os.sep not in chosen else root / path)
    for candidate in (root / ".venv" / "bin" / "python", _active_venv_python()):
        if candidate is not None and candidate.exists():
            return str(candidate)
    return sys.executable


def _active_venv_python() -> Path | None:
    venv = os.environ.get("VIRTUAL_ENV")
    return Path(venv) / "bin" / "python" if venv else None


def _link_folders(path: Path, limit: int = 16) -> list[Path]:
    """Every folder on the way from ``path`` through its chain of symlinks: a venv's python
    links to another link (a tool cache), and each must stay visible in the sandbox."""
    folders = [path.parent]
    for _ in range(limit):
        if not path.is_symlink():
            break
        target = Path(os.readlink(path))
        path = target if target.is_absolute() else path.parent / target
        folders.append(path.parent)
    return folders


def _venv_dir(python: Path) -> Path | None:
    """The virtual environment an interpreter path belongs to (``bin/..`` with pyvenv.cfg)."""
    folder = python.parent.parent
    return folder if (folder / "pyvenv.cfg").is_file() else None


def probe_test_env(
    python: str, pythonpath: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> TestEnv:
    """Ask the interpreter what it is; a missing or broken one is a clear error."""
    if os.sep not in python:
        python = _which(python)
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", _PROBE],
            capture_output=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(
            f"the test interpreter {python} cannot run ({exc}): pass --python PATH or set "
            "pytest.python in the contract to the project's interpreter"
        ) from None
    try:
        info = json.loads(done.stdout)
    except ValueError:
        said = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise WorkspaceError(
            f"the test interpreter {python} did not start (exit {done.returncode}: {said}): "
            "pass --python PATH or set pytest.python in the contract"
        ) from None
    exe = Path(python)
    readable = {Path(info["base_prefix"]), exe.resolve().parent.parent, *_link_folders(exe)}
    venv = _venv_dir(exe)
    if venv is not None:
        readable.add(venv)
    prefixes = [p for p in (venv, Path(info["base_prefix"])) if p is not None]
    files = startup_files(prefixes, str(info["version"]))
    return TestEnv(
        python=python,
        version=str(info["version"]),
        implementation=str(info["implementation"]),
        readable=tuple(sorted(readable)),
        pythonpath=tuple(pythonpath),
        env=dict(env or {}),
        startup=startup_digest(files),
        home=str(venv if venv is not None else exe.resolve()),
        startup_files=files,
    )


STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")


def startup_files(prefixes: Sequence[Path], version: str) -> dict[str, str]:
    """The files an interpreter runs at start-up from its site folders (``*.pth``,
    ``sitecustomize.py``), each with a hash of its bytes: a line planted in one after the
    baseline runs code in every test process, so a change means another environment."""
    major_minor = ".".join(version.split(".")[:2])
    found: dict[str, str] = {}
    for prefix in prefixes:
        for site in (f"lib/python{major_minor}/site-packages", "lib/python3/dist-packages"):
            folder = prefix / site
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if path.suffix == ".pth" or path.name in STARTUP_FILES:
                    try:
                        found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
                    except OSError:
                        found[str(path)] = "unreadable"
    return found


def startup_digest(files: Mapping[str, str]) -> str:
    """One hash over :func:`startup_files`, what a baseline compares first."""
    digest = hashlib.sha256()
    for path, content in sorted(files.items()):
        digest.update(f"{path}\0{content}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:16]


def installed_by(path: Path) -> str | None:
    """The distribution whose RECORD lists ``path`` (``coverage 7.13.1``), if any: what a
    person recognises as "I installed that"."""
    for record in path.parent.glob("*.dist-info/RECORD"):
        try:
            text = record.read_text("utf-8", "replace")
        except OSError:
            continue
        if any(line.split(",", 1)[0] == path.name for line in text.splitlines()):
            name, _, version = record.parent.name.removesuffix(".dist-info").partition("-")
            return f"{name} {version}".strip()
    return None


def startup_changes(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Each start-up file that appeared, went or changed since the baseline, with the
    distribution that installed it where one did."""

    def named(path: str) -> str:
        owner = installed_by(Path(path))
        return f"{Path(path).name} (from {owner})" if owner else Path(path).name

    changes = [f"{named(p)} appeared" for p in sorted(set(current) - set(recorded))]
    changes += [f"{Path(p).name} went" for p in sorted(set(recorded) - set(current))]
    changes += [
        f"{named(p)} changed"
        for p in sorted(set(recorded) & set(current))
        if recorded[p] != current[p]
    ]
    return changes


def _which(name: str) -> str:
    import shutil

    found = shutil.which(name)
    if found is None:
        raise WorkspaceError(f"the test interpreter {name!r} is not on PATH: pass --python PATH")
    return found


def environment_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between the baseline's test environment and this run's, readably."""
    out = []
    for key in ("home", "version", "implementation", "pythonpath", "env"):
        if key in recorded and recorded[key] != current.get(key):
            out.append(f"{key}: baseline {recorded[key]!r}, now {current.get(key)!r}")
    if recorded.get("startup") and recorded["startup"] != current.get("startup"):
        before, now = recorded.get("startup_files"), current.get("startup_files")
        changes = startup_changes(before, now) if isinstance(before, dict) and now else []
        out.append(
            "the interpreter's start-up files (*.pth, sitecustomize.py in its site-packages) "
            "changed since the baseline"
            + (f": {', '.join(changes)}" if changes else "")
            + " - packages were installed or removed there; install pytest-loopcontract in the "
            "project's environment before taking the baseline"
        )
    return out


def require_same_environment(recorded: Any, current: Mapping[str, Any]) -> None:
    """Refuse (exit 27) to compare against a baseline that ran under another test
    environment, naming the difference; a baseline that recorded none is not checked."""
    if not isinstance(recorded, dict):
        return
    differences = environment_differences(recorded, current)
    if differences:
        raise WorkspaceError(
            "the baseline ran in a different test environment ("
            + "; ".join(differences)
            + "): run with the baseline's interpreter (--python PATH) or take the baseline "
            "again with 'loop-contract baseline'",
            exit_code=27,
        )
