"""Git plumbing: snapshots of a working tree, pins of protected paths, scratch copies, diffs.

Everything goes through git's content-addressed objects: a candidate is a tree id, a pin is a
blob id plus SHA-256 of its bytes. That makes "what changed" exact and cheap, and it means a
scratch copy is rebuilt from objects rather than from whatever sits on disk.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import IO, NamedTuple

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.statedir import StateDir

__all__ = [
    "DEFAULT_PROTECT",
    "Pin",
    "RepoHead",
    "StartedGit",
    "TreeEntry",
    "WorkspaceError",
    "changed_paths",
    "diff_text",
    "export_tree",
    "find_repo",
    "is_dirty",
    "list_tree",
    "list_tree_sized",
    "match_glob",
    "matches_any",
    "read_blobs",
    "repo_head",
    "resolve_commit",
    "tree_differs",
]


# Paths that steer how tests are collected, configured or reported. A candidate that edits one
# of these is changing the referee, not the code.
DEFAULT_PROTECT: tuple[str, ...] = (
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    ".coveragerc",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    ".github/**",
    ".gitlab-ci.yml",
    "noxfile.py",
)


class WorkspaceError(LoopContractError):
    """A repository problem with a message that says what to do about it.

    ``exit_code`` is what the command line exits with: 27 for a missing or damaged baseline
    (the baseline rule), 2 for everything else (a usage or setup problem).
    """


class TreeEntry(NamedTuple):
    mode: str
    blob: str


class Pin(NamedTuple):
    sha256: str
    blob: str
    mode: str


_PINNED_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("loopcontract_git_env", default=None)


@contextmanager
def pinned_environment(environ: Mapping[str, str]) -> Iterator[None]:
    """Run this thread's git with ``environ`` instead of the live ``os.environ``.

    For git inside a test session (the in-process plugin): a test that changed ``PATH``,
    ``HOME`` or ``GIT_*`` and never put them back must not change what git sees."""
    token = _PINNED_ENV.set(environ)
    try:
        yield
    finally:
        _PINNED_ENV.reset(token)


def git(
    root: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
    ok: tuple[int, ...] = (0,),
) -> bytes:
    """Git's standard output; a :class:`WorkspaceError` with git's own words when it exits
    with a code not in ``ok``."""
    started = StartedGit(root, ["git", *args], env, piped_input=input_bytes is not None)
    return started.output(ok, input_bytes)


class StartedGit:
    """A git command (or a short ``sh`` chain of them) started now and read later, with the
    environment :func:`pinned_environment` holds. Why later: the in-process verdict starts
    its snapshot, converts the run's records while git works on the other core, then reads
    it; a thread waiting for git would wait for the interpreter too, once per process."""

    def __init__(
        self,
        root: Path,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        piped_input: bool = False,
        stdout: IO[bytes] | None = None,
        what: str | None = None,
    ) -> None:
        self.what = what or " ".join(argv[:3])
        try:
            self._proc = subprocess.Popen(
                list(argv),
                cwd=root,
                env=_git_environment(env),
                stdin=subprocess.PIPE if piped_input else None,
                stdout=stdout or subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except FileNotFoundError:
            raise WorkspaceError(f"{argv[0]} is not installed or not on PATH") from None

    def output(self, ok: tuple[int, ...] = (0,), input_bytes: bytes | None = None) -> bytes:
        """Its standard output (empty when it went to a file), once it has ended."""
        stdout, stderr = self._proc.communicate(input_bytes)
        if self._proc.returncode not in ok:
            message = stderr.decode("utf-8", "replace").strip()
            raise WorkspaceError(f"{self.what} failed: {message}")
        return stdout or b""


def _git_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    pinned = _PINNED_ENV.get()
    full_env = dict(os.environ if pinned is None else pinned)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        full_env.pop(key, None)
    full_env.update(env or {})
    return full_env


def find_repo(start: Path) -> Path:
    return Path(_rev_parse_in_repo(start).decode().strip())


class RepoHead(NamedTuple):
    """Where a repository is and what it stands at, from one ``git rev-parse``."""

    root: Path  # the top folder of the work tree
    commit: str | None  # HEAD's commit; None before the first commit
    index_file: Path  # the work tree's index file


def repo_head(start: Path) -> RepoHead:
    """:func:`find_repo`, :func:`resolve_commit` of ``HEAD`` and the index's path from one
    git process rather than three: each costs 2 to 3 ms, and the in-process verdict waits."""
    out = _rev_parse_in_repo(
        start, "--git-path", "index", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1)
    )
    lines = out.decode().splitlines()
    if len(lines) < 2:
        raise WorkspaceError(f"git rev-parse in {start} answered {out!r}")
    commit = lines[2].strip() if len(lines) > 2 else None
    return RepoHead(Path(lines[0].strip()), commit or None, start / lines[1].strip())


def _rev_parse_in_repo(start: Path, *args: str, ok: tuple[int, ...] = (0,)) -> bytes:
    """``git rev-parse --show-toplevel ARGS`` in ``start``, outside a repository an error
    that says what to do."""
    try:
        return git(start, "rev-parse", "--show-toplevel", *args, ok=ok)
    except WorkspaceError as exc:
        if "not a git repository" not in str(exc):
            raise  # e.g. git's "dubious ownership": its own words say what to do
        raise WorkspaceError(
            f"{start} is not inside a git repository: run 'git init' and commit the project "
            "(the verifier compares candidates against a committed baseline)"
        ) from None


def resolve_commit(root: Path, ref: str) -> str:
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except WorkspaceError:
        raise WorkspaceError(
            f"cannot resolve {ref!r} to a commit: make a first commit ('git commit') "
            "or pass an existing ref"
        ) from None


def tree_of(root: Path, commit: str) -> str:
    return git(root, "rev-parse", f"{commit}^{{tree}}").decode().strip()


def list_tree(root: Path, tree: str) -> dict[str, TreeEntry]:
    return _parse_listing(git(root, "ls-tree", "-r", "-z", "--full-tree", tree))[0]


def list_tree_sized(root: Path, tree: str) -> tuple[dict[str, TreeEntry], int]:
    """The tree's files and the bytes their blobs hold, from one ``git ls-tree -l``."""
    return _parse_listing(git(root, "ls-tree", "-r", "-l", "-z", "--full-tree", tree))


def _parse_listing(out: bytes) -> tuple[dict[str, TreeEntry], int]:
    """``git ls-tree -r -z`` records (with or without ``-l``'s size column) and their total
    size (0 without sizes; a submodule's ``-`` counts nothing)."""
    entries: dict[str, TreeEntry] = {}
    total = 0
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, blob, *size = meta.decode().split()
        if size and size[0].isdigit():
            total += int(size[0])
        entries[path.decode("utf-8", "surrogateescape")] = TreeEntry(mode, blob)
    return entries, total


def export_tree(root: Path, tree: str, dest: Path) -> None:
    """Write a tree's files into ``dest`` (which must exist) from git objects."""
    with scratch_folder("loopcontract-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(tmp / "index")}
        git(root, "read-tree", tree, env=env)
        git(root, f"--work-tree={dest}", "checkout-index", "-a", "-f", env=env)


def read_blobs(root: Path, blobs: Iterable[str]) -> dict[str, bytes]:
    """Contents of many blobs in one ``git cat-file --batch`` call."""
    wanted = list(dict.fromkeys(blobs))
    if not wanted:
        return {}
    out = git(root, "cat-file", "--batch", input_bytes=("\n".join(wanted) + "\n").encode())
    contents: dict[str, bytes] = {}
    pos = 0
    for blob in wanted:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].decode().split()
        if len(header) < 3 or header[1] == "missing":
            raise WorkspaceError(f"git object {blob} is missing from the repository")
        size = int(header[2])
        start = header_end + 1
        contents[blob] = out[start : start + size]
        pos = start + size + 1
    return contents


def changed_paths(root: Path, base_tree: str, tree: str) -> list[tuple[str, str]]:
    """(status letter, path) for every file that differs; renames are split into D + A."""
    out = git(root, "diff-tree", "-r", "-z", "--no-renames", "--name-status", base_tree, tree)
    parts = [p for p in out.split(b"\0") if p]
    return [
        (parts[i].decode(), parts[i + 1].decode("utf-8", "surrogateescape"))
        for i in range(0, len(parts) - 1, 2)
    ]


def diff_text(root: Path, base_tree: str, tree: str, context: int = 0) -> str:
    out = git(
        root,
        "diff-tree",
        "-r",
        "-p",
        f"-U{context}",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        base_tree,
        tree,
    )
    return out.decode("utf-8", "replace")


def tree_differs(
    root: Path, commit: str, tree: str, exclude: Sequence[str] = (StateDir.NAME,)
) -> bool:
    """Whether a snapshot ``tree`` differs from ``commit`` (the state folder left out): what
    :func:`is_dirty` answers for that snapshot, from objects alone, without a work-tree scan."""
    pathspec = ["--", ".", *(f":(exclude){p}" for p in exclude)]
    out = git(root, "diff-tree", "-r", "--name-only", "--no-renames", commit, tree, *pathspec)
    return bool(out.strip())


def is_dirty(root: Path, exclude: Sequence[str] = (StateDir.NAME,)) -> bool:
    pathspec = ["--", ".", *(f":(exclude){p}" for p in exclude)]
    out = git(root, "status", "--porcelain", "--untracked-files=normal", *pathspec)
    return bool(out.strip())


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    # "docs/" names a folder: the "(?:/.*)?" tail below covers what is under it.
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out)
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"{prefix}{body}(?:/.*)?")


def match_glob(path: str, pattern: str) -> bool:
    """gitignore-flavoured matching: no slash matches at any depth, ``**`` spans folders,
    and a pattern naming a folder covers everything under it."""
    return _glob_regex(pattern).fullmatch(path) is not None


@lru_cache(maxsize=64)
def _globs_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{_glob_regex(p).pattern})" for p in patterns))


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    """Whether any glob matches; the globs are compiled once into one alternation."""
    regex = _globs_regex(tuple(patterns))
    return regex is not None and regex.fullmatch(path) is not None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SCRATCH_ENV = "LOOP_CONTRACT_SCRATCH"
_TMPFS = Path("/dev/shm")

# The folders a run makes for itself: ``loopcontract-<kind>-<owner pid>-<random>``. A process
# killed outright (SIGKILL, the OOM killer, a lost CI runner) cannot remove them; the pid in the
# name lets a later run see that their owner is gone (:func:`sweep_scratch`). Only these kinds
# are ever swept, so a folder of another tool that happens to start with ``loopcontract-`` is
# left alone.
SCRATCH_KINDS = (
    "scratch", "baseline", "private", "run", "index", "cmd",
    "review", "coverage", "capture", "seats", "judge", "probe", "publish",
)  # fmt: skip
_OWNED_NAME = re.compile(
    rf"loopcontract-(?:{'|'.join(SCRATCH_KINDS)})-([1-9][0-9]{{0,6}})-[a-z0-9_]+"
)

# An open descriptor on each folder this process owns, holding a shared ``flock``: the kernel
# drops it when the process dies, however it dies. A sweeper in another PID namespace (a
# container sharing /dev/shm or /tmp), to which the owner's pid means nothing or another
# process, still finds the lock taken.
_HELD: dict[Path, int] = {}
_HELD_LOCK = threading.Lock()


def scratch_parent(tree_bytes: int | None = None) -> str | None:
    """Where scratch folders go: ``$LOOP_CONTRACT_SCRATCH`` if set; else, for a copy of a tree
    of ``tree_bytes``, a memory-backed tmpfs when there is one with room to spare (writing
    thousands of small files to a busy disk is the launcher's largest fixed cost); else the
    system temp folder (None)."""
    configured = os.environ.get(SCRATCH_ENV)
    if configured:
        return configured
    if tree_bytes is None:
        return None
    try:
        free = shutil.disk_usage(_TMPFS).free
    except OSError:
        return None
    if os.access(_TMPFS, os.W_OK) and free > 4 * tree_bytes + (256 << 20):
        return str(_TMPFS)
    return None


def scratch_parents() -> list[Path]:
    """Every folder :func:`scratch_parent` may choose, as it would choose now."""
    places = [os.environ.get(SCRATCH_ENV) or "", str(_TMPFS), tempfile.gettempdir()]
    found: dict[str, Path] = {}
    for place in places:
        if place and os.path.isdir(place):
            found.setdefault(os.path.realpath(place), Path(place))
    return list(found.values())


def make_scratch(
    prefix: str = "loopcontract-scratch-", tree_bytes: int | None = None, *, keep: bool = False
) -> Path:
    """A new empty folder of this process (``prefix`` names one of :data:`SCRATCH_KINDS`),
    named after its pid and locked while the process lives, so that no later run sweeps it
    before then and every later run sweeps it after. ``keep``: a folder the user asked to keep
    (``--keep-scratch``), named without the pid, so that no run ever sweeps it."""
    kind = prefix.removeprefix("loopcontract-").removesuffix("-")
    if not prefix.startswith("loopcontract-") or kind not in SCRATCH_KINDS:
        raise ValueError(f"make_scratch: {prefix!r} names none of {SCRATCH_KINDS}")
    parent = scratch_parent(tree_bytes)
    if keep:
        return Path(tempfile.mkdtemp(prefix=f"{prefix}kept-", dir=parent))
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    _hold(path)
    return path


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """:func:`make_scratch` for the length of a ``with`` block, removed after it."""
    path = make_scratch(prefix)
    try:
        yield path
    finally:
        remove_tree(path)


def _hold(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # a file system without flock: the pid alone tells
        os.close(fd)
        return
    with _HELD_LOCK:
        _HELD[path] = fd


def _release(path: Path) -> None:
    with _HELD_LOCK:
        fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)


def remove_tree(path: Path) -> None:
    _release(path)
    shutil.rmtree(path, ignore_errors=True)


def remove_tree_later(path: Path) -> None:
    """Delete a scratch copy without waiting for it (the verdict is already written)."""
    _release(path)
    _remove_later([path])


def _remove_later(paths: Sequence[Path]) -> None:
    """One ``rm -rf`` in its own session for all of ``paths``, not waited for."""
    try:
        subprocess.Popen(
            ["rm", "-rf", "--", *map(str, paths)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)


def sweep_scratch(parents: Iterable[Path] | None = None) -> list[Path]:
    """Remove the folders of :func:`make_scratch` that a killed run left in ``parents``
    (default: :func:`scratch_parents`), without waiting for the removal; the folders swept.

    A folder is swept only when everything says its owner is gone: its name is one of ours,
    it is a real folder (not a link) of this user, no process has its pid here, and nothing
    holds its lock."""
    swept = [
        Path(entry.path)
        for parent in (scratch_parents() if parents is None else parents)
        for entry in _owned_entries(parent)
        if _orphaned(entry)
    ]
    if swept:
        _remove_later(swept)
    return swept


def _owned_entries(parent: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(parent) as entries:
            return [entry for entry in entries if _OWNED_NAME.fullmatch(entry.name)]
    except OSError:
        return []


def _orphaned(entry: os.DirEntry[str]) -> bool:
    match = _OWNED_NAME.fullmatch(entry.name)
    if match is None:
        return False
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    return not _pid_alive(int(match[1])) and not _locked(entry.path)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: a process of another user has it; anything else: unsure
        return True
    return True


def _locked(path: str) -> bool:
    """Whether a live process holds the folder's lock (see :func:`make_scratch`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return True  # gone, or not ours to open: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no flock here: the pid already said the owner is gone
    finally:
        os.close(fd)
    return False


def purge_bytecode(root: Path, exported: Iterable[str]) -> None:
    """Drop the ``__pycache__`` files and stray ``.pyc`` files a tree exported into ``root``
    (fresh, holding exactly the ``exported`` paths): a planted bytecode file would run in
    place of a restored source file. The tree's listing says where they are, so nothing is
    walked."""
    for rel in exported:
        parts = rel.split("/")
        if "__pycache__" in parts or rel.endswith((".pyc", ".pyo")):  # a link named so too
            (root / rel).unlink(missing_ok=True)


def pin_untracked(root: Path, globs: Sequence[str]) -> dict[str, Pin]:
    """Git-ignored files matching ``globs`` that the suite needs (a generated ``_version.py``):
    each is written into the repository's object store and pinned like a tracked file, so the
    scratch copy gets the baseline's bytes whatever the work tree holds later."""
    if not globs:
        return {}
    out = git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard")
    paths = [
        p.decode("utf-8", "surrogateescape")
        for p in out.split(b"\0")
        if p and matches_any(p.decode("utf-8", "surrogateescape"), globs)
    ]
    pins: dict[str, Pin] = {}
    for path in sorted(p for p in paths if not p.startswith(StateDir.NAME + "/")):
        blob = git(root, "hash-object", "-w", "--", path).decode().strip()
        data = (root / path).read_bytes()
        mode = "100755" if os.access(root / path, os.X_OK) else "100644"
        pins[path] = Pin(sha256=sha256_bytes(data), blob=blob, mode=mode)
    return pins


def write_pinned(root: Path, dest: Path, pins: Mapping[str, Pin]) -> None:
    """Write pinned files (by blob) into a scratch copy, checking each against its SHA-256."""
    blobs = read_blobs(root, (pin.blob for pin in pins.values()))
    for path, pin in pins.items():
        data = blobs[pin.blob]
        if sha256_bytes(data) != pin.sha256:
            raise WorkspaceError(f"pinned object for {path} does not match its SHA-256")
        target = dest / path
        if any(part == ".." for part in Path(path).parts):
            raise WorkspaceError(f"pinned path {path!r} leaves the tree")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        target.write_bytes(data)
        if pin.mode == "100755":
            target.chmod(0o755)
