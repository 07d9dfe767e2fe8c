"""Where a repository keeps its contest state, all under ``.loop-contract/``.

Why one object: the engine, the human gate, the lesson commands and the reports all find the
ledger, the signing key, the lessons, the route table and the runs' folders; naming each path
once keeps them from drifting apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_loopcontract.verifier.workspace import STATE_DIR

__all__ = ["ContestPaths"]


@dataclass(frozen=True)
class ContestPaths:
    """Where a repository keeps its contest state (all under ``.loop-contract/``)."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def ledger(self) -> Path:
        return self.state / "ledger.sqlite"

    @property
    def key(self) -> Path:
        return self.state / "cert.key"

    @property
    def lessons(self) -> Path:
        return self.state / "lessons.sqlite"

    @property
    def routes(self) -> Path:
        return self.state / "routes.json"

    @property
    def runs(self) -> Path:
        return self.state / "contest"

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def worktrees(self, contract_id: str) -> Path:
        return self.state / "worktrees" / contract_id
