"""The state folder, ``.loop-contract/``: the one owner of every path under it.

Why one owner: the verifier hides this folder from the candidate, git snapshots leave it out,
the loop, the contest and the hooks all write into it. A path spelled in two places drifts
(the verdict's was spelled four ways), and then one part writes where another never looks.
Every file name lives here; callers ask a :class:`StateDir` for the path they need. No I/O
except :meth:`StateDir.ensure`, which creates the folder.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NoReturn, overload

__all__ = ["StateDir"]


class _Entry:
    """One fixed name in the state folder: read on a :class:`StateDir`, the path of that name.

    Why a descriptor rather than a property per file: the folder's file names then stand in
    one table, a line each, and every one is joined to the folder the same way. Read-only
    like a property: ``__set__`` accepts no value, so mypy refuses an assignment, and the
    frozen :class:`StateDir` refuses one at run time.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Entry: ...
    @overload
    def __get__(self, obj: StateDir, owner: type[Any]) -> Path: ...
    def __get__(self, obj: StateDir | None, owner: type[Any]) -> Path | _Entry:
        return self if obj is None else obj.folder / self.name

    def __set__(self, obj: StateDir, value: NoReturn) -> NoReturn:
        raise AttributeError(f"{self.name}: a state folder's paths are read-only")


@dataclass(frozen=True, init=False)
class StateDir:
    """The state folder ``folder`` and the paths of everything in it.

    ``StateDir.of(root)`` is a repository's own (``<root>/.loop-contract``); ``StateDir(path)``
    any folder used as one (tests, scratch copies).
    """

    NAME: ClassVar[str] = ".loop-contract"
    """The folder's name in a repository, also the git pathspec that leaves it out."""
    TORN_PREFIX: ClassVar[str] = "history.torn."
    """The name stem of the side files a torn history line is moved to."""

    folder: Path

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "folder", Path(folder))

    @classmethod
    def of(cls, root: str | os.PathLike[str]) -> StateDir:
        """The state folder of the repository at ``root``."""
        return cls(Path(root) / cls.NAME)

    @property
    def root(self) -> Path:
        """The repository the folder belongs to (its parent)."""
        return self.folder.parent

    def ensure(self) -> None:
        """Create the folder; a new one gets a ``.gitignore`` of ``*`` so git ignores it."""
        if self.folder.is_dir():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            fd = os.open(self.folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, b"# loop-contract state: never committed, never hashed\n*\n")
            finally:
                os.close(fd)

    # -- the verifier

    verdict = _Entry("verdict.json")
    """The latest verdict (``loop-contract verify`` and the plugin's default)."""

    pre_push_verdict = _Entry("pre-push-verdict.json")
    """The verdict the git pre-push hook writes, apart from the loop's own."""

    baseline = _Entry("baseline.json")
    """The pinned baseline: contract, test files, failing tests at the start."""

    bytecode = _Entry("bytecode")
    """pytest's rewritten bytecode of the referee's test files, kept from the baseline run
    (see :mod:`verifier.bytecode`)."""

    parsed_contract = _Entry("contract-parsed.json")
    """The pinned contract's YAML as parsed JSON, keyed by its SHA-256: the in-process
    plugin reads it instead of importing a YAML parser into every enabled test run."""

    harness = _Entry("harness.json")
    """Digests of the files that govern the agent (hook settings, git hooks), recorded
    when they are installed or adopted and checked every turn and every verification."""

    # -- the loop

    history = _Entry("history.jsonl")
    """The hash-chained history, one JSON record per line."""

    history_lock = _Entry("history.lock")
    """The sidecar file appenders ``flock`` around "read the tail, write"."""

    def torn_side_file(self, line: int, k: int = 0) -> Path:
        """Where a torn history line ``line`` is set aside (``.<k>`` when that name is taken)."""
        return self.folder / (f"{self.TORN_PREFIX}{line}" + (f".{k}" if k else ""))

    loop_lock = _Entry("loop.lock")
    """The lock that keeps one loop per repository."""

    prompt = _Entry("prompt.md")
    """The prompt of the agent's current turn, when it reads one from a file."""

    def turn_log(self, iteration: int) -> Path:
        """What the agent printed during one turn."""
        return self.folder / f"turn-{iteration}.log"

    # -- the contest

    ledger = _Entry("ledger.sqlite")
    """The contest ledger (SQLite)."""

    cert_key = _Entry("cert.key")
    """The key contest certificates are signed with."""

    lessons = _Entry("lessons.sqlite")
    """The lesson store (SQLite)."""

    routes = _Entry("routes.json")
    """The routing table: which seat a domain's work goes to."""

    runs = _Entry("contest")
    """The folder of contest runs, one sub-folder per run id."""

    def run_dir(self, run_id: str) -> Path:
        """One contest run's folder."""
        return self.runs / run_id

    def probe_dir(self, name: str) -> Path:
        """One probe's private folder (its prompt, report, the seat's home and log)."""
        return self.folder / "probe" / name

    def worktrees(self, contract_id: str) -> Path:
        """The candidates' git worktrees of one contract's contest."""
        return self.folder / "worktrees" / contract_id
