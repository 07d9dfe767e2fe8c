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
from typing import ClassVar

__all__ = ["StateDir"]


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

    @property
    def verdict(self) -> Path:
        """The latest verdict (``loop-contract verify`` and the plugin's default)."""
        return self.folder / "verdict.json"

    @property
    def pre_push_verdict(self) -> Path:
        """The verdict the git pre-push hook writes, apart from the loop's own."""
        return self.folder / "pre-push-verdict.json"

    @property
    def baseline(self) -> Path:
        """The pinned baseline: contract, test files, failing tests at the start."""
        return self.folder / "baseline.json"

    @property
    def bytecode(self) -> Path:
        """pytest's rewritten bytecode of the referee's test files, kept from the baseline run
        (see :mod:`verifier.bytecode`)."""
        return self.folder / "bytecode"

    @property
    def parsed_contract(self) -> Path:
        """The pinned contract's YAML as parsed JSON, keyed by its SHA-256: the in-process
        plugin reads it instead of importing a YAML parser into every enabled test run."""
        return self.folder / "contract-parsed.json"

    @property
    def harness(self) -> Path:
        """Digests of the files that govern the agent (hook settings, git hooks), recorded
        when they are installed or adopted and checked every turn and every verification."""
        return self.folder / "harness.json"

    # -- the loop

    @property
    def history(self) -> Path:
        """The hash-chained history, one JSON record per line."""
        return self.folder / "history.jsonl"

    @property
    def history_lock(self) -> Path:
        """The sidecar file appenders ``flock`` around "read the tail, write"."""
        return self.folder / "history.lock"

    def torn_side_file(self, line: int, k: int = 0) -> Path:
        """Where a torn history line ``line`` is set aside (``.<k>`` when that name is taken)."""
        return self.folder / (f"{self.TORN_PREFIX}{line}" + (f".{k}" if k else ""))

    @property
    def state(self) -> Path:
        """The state cache, rebuilt from the history whenever it does not match it."""
        return self.folder / "state.json"

    @property
    def loop_lock(self) -> Path:
        """The lock that keeps one loop per repository."""
        return self.folder / "loop.lock"

    @property
    def prompt(self) -> Path:
        """The prompt of the agent's current turn, when it reads one from a file."""
        return self.folder / "prompt.md"

    def turn_log(self, iteration: int) -> Path:
        """What the agent printed during one turn."""
        return self.folder / f"turn-{iteration}.log"

    # -- the contest

    @property
    def ledger(self) -> Path:
        """The contest ledger (SQLite)."""
        return self.folder / "ledger.sqlite"

    @property
    def cert_key(self) -> Path:
        """The key contest certificates are signed with."""
        return self.folder / "cert.key"

    @property
    def lessons(self) -> Path:
        """The lesson store (SQLite)."""
        return self.folder / "lessons.sqlite"

    @property
    def routes(self) -> Path:
        """The routing table: which seat a domain's work goes to."""
        return self.folder / "routes.json"

    @property
    def runs(self) -> Path:
        """The folder of contest runs, one sub-folder per run id."""
        return self.folder / "contest"

    def run_dir(self, run_id: str) -> Path:
        """One contest run's folder."""
        return self.runs / run_id

    def worktrees(self, contract_id: str) -> Path:
        """The candidates' git worktrees of one contract's contest."""
        return self.folder / "worktrees" / contract_id
