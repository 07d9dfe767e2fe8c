"""Where candidate code runs: a bubblewrap sandbox, or process isolation when none can start.

The sandbox (``bwrap``) gives the run its own PID namespace and dies with its parent, so every
process the candidate starts ends with the run; the file system is read-only except the scratch
tree and the run's private folders, ``/tmp`` is private, and the user's home, the repository's
state folder and the folder the verdict goes to are hidden behind empty tmpfs mounts. The
network is unshared when the egress policy allows nothing beyond loopback. Where bwrap is
missing or may not create namespaces (Ubuntu's AppArmor restriction, a locked-down container),
the run falls back to process isolation and the verdict says ``isolation: process``; a contract
that says ``isolation: sandbox`` turns that fallback into an error instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pytest_loopcontract.errors import LoopContractError

__all__ = ["PROCESS", "SANDBOX", "Confinement", "SandboxUnavailable", "choose_confinement"]

SANDBOX = "sandbox"
PROCESS = "process"
WRITABLE_ENV = "LOOP_CONTRACT_SANDBOX_WRITABLE"
BWRAP_ENV = "LOOP_CONTRACT_BWRAP"
TMP_SIZE = str(4 << 30)  # the private /tmp is memory; a run that fills it fails, not the host
_NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
INSTALL_HINT = (
    "install bubblewrap ('apt-get install bubblewrap'); on Ubuntu 24.04 and GitHub's runners "
    "also allow unprivileged user namespaces "
    "('sysctl -w kernel.apparmor_restrict_unprivileged_userns=0')"
)


class SandboxUnavailable(LoopContractError):
    """The contract requires the sandbox and it cannot start here."""


@dataclass(frozen=True)
class Confinement:
    """How one run of candidate code is confined, and what it may see."""

    mode: str
    note: str = ""
    network: bool = True
    hidden: tuple[Path, ...] = ()
    aliases: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()

    def command(
        self,
        argv: Sequence[str],
        *,
        tree: Path,
        writable: Sequence[Path],
        args_fd: int | None = None,
    ) -> list[str]:
        """``argv`` wrapped so that it runs confined, with ``tree`` as its working folder;
        ``args_fd`` is an open descriptor holding more bwrap arguments (see
        :meth:`frozen_binds`), read after the tree is mounted."""
        if self.mode != SANDBOX:
            return list(argv)
        more = ["--args", str(args_fd)] if args_fd is not None else []
        return [*self._bwrap(tree, writable), *more, "--", *argv]

    def frozen_binds(self, tree: Path, paths: Iterable[str]) -> list[str]:
        """Read-only binds over the referee's files (relative ``paths``) wherever the run sees
        the tree: a candidate's code, once imported, cannot rewrite a test file not collected
        yet, a helper, or the golden file a test reads after calling it. Regular files and
        folders only (a symlink's target is not the referee's). Past bwrap's argument limit,
        folders that hold nothing but referee files are bound whole instead; what still does
        not fit is left to the launcher's before/after hash check."""
        places = (tree, *self.aliases)
        files = [rel for rel in dict.fromkeys(paths) if _bindable(tree / rel)]
        budget = FROZEN_BIND_BUDGET // (3 * len(places))
        chosen = files if len(files) <= budget else collapse_to_folders(tree, files)[:budget]
        return [
            arg
            for rel in chosen
            for place in places
            for arg in ("--ro-bind", str(tree / rel), str(place / rel))
        ]

    def _bwrap(self, tree: Path, writable: Sequence[Path]) -> list[str]:
        args = [bwrap_program(), "--die-with-parent", "--new-session", *_NAMESPACES]
        if not self.network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += ["--size", TMP_SIZE, "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
        for path in _existing_dirs([_home(), *self.hidden]):
            args += ["--tmpfs", str(path)]
        # A read-only folder that holds the tree goes first and one inside the tree after it:
        # the later mount covers the earlier one, so the more specific grant wins either way.
        places = (tree, *self.aliases)
        readable = _existing_dirs(self.readable)
        outer = [p for p in readable if any(place.is_relative_to(p) for place in places)]
        for path in outer:
            args += ["--ro-bind", str(path), str(path)]
        for place in places:
            args += ["--bind", str(tree), str(place)]
        for path in (p for p in readable if p not in outer):
            args += ["--ro-bind", str(path), str(path)]
        for path in _existing_dirs([*writable, *self.writable]):
            args += ["--bind", str(path), str(path)]
        return [*args, "--chdir", str(tree)]


# bwrap refuses more than 9,000 arguments in all; the rest of a command takes a few dozen.
FROZEN_BIND_BUDGET = 8_000


def _bindable(path: Path) -> bool:
    return not path.is_symlink() and (path.is_file() or path.is_dir())


def collapse_to_folders(tree: Path, files: Sequence[str]) -> list[str]:
    """``files`` (relative) with every folder whose whole content is among them replaced by
    that folder, outermost first; folders before loose files."""
    frozen = set(files)
    whole: set[str] = set()
    for folder in sorted({str(Path(f).parent) for f in files} - {"."}, key=len, reverse=True):
        entries = list((tree / folder).iterdir())
        if all(
            (str(Path(folder, e.name)) in frozen and _bindable(e))
            or (e.is_dir() and not e.is_symlink() and str(Path(folder, e.name)) in whole)
            for e in entries
        ):
            whole.add(folder)
    top = sorted(d for d in whole if not any(d.startswith(w + "/") for w in whole))
    loose = [f for f in files if not any(f.startswith(d + "/") for d in top)]
    return [*top, *loose]


def _home() -> Path | None:
    home = os.environ.get("HOME")
    if not home or Path(home).resolve() == Path("/"):
        return None
    return Path(home)


def _existing_dirs(paths: Sequence[Path | None]) -> list[Path]:
    return list(dict.fromkeys(p for p in paths if p is not None and p.is_dir()))


def extra_writable() -> list[Path]:
    """Folders outside the tree that stay writable in the sandbox, from the launcher's
    ``$LOOP_CONTRACT_SANDBOX_WRITABLE`` (``os.pathsep``-separated): for suites that must write
    outside their tree. Each one is a place a candidate can leave files, so none by default."""
    raw = os.environ.get(WRITABLE_ENV, "")
    return [Path(p) for p in raw.split(os.pathsep) if p]


def bwrap_program() -> str:
    """``$LOOP_CONTRACT_BWRAP`` (a path or name), else ``bwrap`` on PATH."""
    return os.environ.get(BWRAP_ENV) or "bwrap"


@cache
def bwrap_problem() -> str:
    """Why the sandbox cannot start here ('' when it can); tried once per process."""
    if shutil.which(bwrap_program()) is None:
        return f"bubblewrap ({bwrap_program()}) is not installed: {INSTALL_HINT}"
    probe = [
        bwrap_program(),
        "--die-with-parent",
        *_NAMESPACES,
        "--ro-bind",
        "/",
        "/",
        "--",
        "true",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start ({exc}): {INSTALL_HINT}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return f"bwrap could not create its namespaces ({said[0]}): {INSTALL_HINT}"
    return ""


def choose_confinement(
    required: str,
    *,
    network: bool,
    hidden: Sequence[Path] = (),
    aliases: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    writable: Sequence[Path] = (),
) -> Confinement:
    """The sandbox when it can start (or when ``required`` says sandbox, else an error);
    process isolation when ``required`` says process or the sandbox cannot start."""
    forced = os.environ.get("LOOP_CONTRACT_ISOLATION", "")
    wanted = required if required != "auto" else (forced or "auto")
    problem = "" if wanted == PROCESS else bwrap_problem()
    if wanted == PROCESS:
        return Confinement(PROCESS, note="process isolation requested")
    if problem:
        if wanted == SANDBOX:
            raise SandboxUnavailable(f"the contract requires isolation: sandbox, but {problem}")
        return Confinement(PROCESS, note=problem)
    return Confinement(
        SANDBOX,
        network=network,
        hidden=tuple(hidden),
        aliases=tuple(aliases),
        readable=tuple(readable),
        writable=tuple(writable),
    )
