"""Git's evidence of the tree an in-process run left: its commit, whether it is dirty, the
protected files against their pins, and the lines it added (for coverage gates and ``improve``).

Taken in two steps off the session's critical path: which repository and commit, and a copy
of its index, on a thread while the tests are collected (:func:`starting_point`: the commit is
the one the run started from); at the session's end one process snapshots the tree
(:class:`PendingEvidence` starts it) while the session's thread turns the run's records into
results and imports the verdict's side of the package, on the other core. Light on purpose:
what this module imports is loaded before the session's end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.snapshot import PendingSnapshot, ThrowawayIndex
from pytest_loopcontract.verifier.tamper.pins import pin_findings
from pytest_loopcontract.workspace import (
    RepoHead,
    WorkspaceError,
    diff_text,
    is_dirty,
    pinned_environment,
    repo_head,
)

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract
    from pytest_loopcontract.verifier.baseline.record import BaselineRecord

__all__ = [
    "Pending",
    "PendingEvidence",
    "RepoEvidence",
    "StartingPoint",
    "starting_point",
]

T = TypeVar("T")


class RepoEvidence(NamedTuple):
    """What git says of the work tree the tests ran on, beside the baseline it is judged by."""

    baseline: BaselineRecord | None
    findings: list[Finding]
    changed: dict[str, frozenset[int]] | None
    commit: str | None  # checked out when the session started
    dirty: bool | None  # the tree at its end against that commit
    empty: bool | None
    problem: str | None = None  # git's words when it could not read the tree


class StartingPoint(NamedTuple):
    """What git says at the session's start: the repository and its commit, and a throwaway
    index copied from the real one for the snapshot at its end."""

    head: RepoHead
    snapshot_index: ThrowawayIndex


def starting_point(root: Path) -> StartingPoint:
    head = repo_head(root)
    return StartingPoint(head, ThrowawayIndex(head.root, head.index_file))


class PendingEvidence:
    """Git's evidence for the repository found at the start (the tree as the tests left it)
    beside ``baseline``: the snapshot is started here and read by :meth:`result`. When git
    cannot read the tree, ``problem`` says why if there were pins to compare (without a
    baseline nothing is lost). Git sees ``environ``, the environment before the first test."""

    def __init__(
        self,
        start: Pending[StartingPoint],
        contract: Contract,
        baseline: BaselineRecord | None,
        environ: Mapping[str, str],
    ) -> None:
        self.contract, self.baseline, self.environ = contract, baseline, environ
        self._start: StartingPoint | None = None
        self._snapshot: PendingSnapshot | None = None
        self._error: WorkspaceError | None = None
        try:
            with pinned_environment(environ):
                self._start = start.result()
                self._snapshot = self._begin(self._start)
        except WorkspaceError as exc:
            self._error = exc

    def _begin(self, start: StartingPoint) -> PendingSnapshot | None:
        (root, commit, _), index = start
        if commit is None or self.baseline is None:
            return None
        needs_diff = self.contract.mode == "improve" or any(
            g.metric.startswith("coverage.") for g in self.contract.measured_gates
        )
        return PendingSnapshot(root, commit, index, with_tree=needs_diff)

    def result(self) -> RepoEvidence:
        """The evidence, once git is done."""
        try:
            with pinned_environment(self.environ):
                if self._error is not None:
                    raise self._error
                assert self._start is not None
                return RepoEvidence(self.baseline, *self._finish(self._start.head))
        except WorkspaceError as exc:
            problem = str(exc) if self.baseline is not None else None
            return RepoEvidence(self.baseline, [], None, None, None, None, problem)
        finally:
            if self._start is not None:
                self._start.snapshot_index.close()

    def _finish(
        self, head: RepoHead
    ) -> tuple[
        list[Finding], dict[str, frozenset[int]] | None, str | None, bool | None, bool | None
    ]:
        repo, commit, _ = head
        if commit is None:
            return [], None, None, None, None
        if self.baseline is None or self._snapshot is None:
            return [], None, commit, is_dirty(repo), None
        snapshot = self._snapshot.result()
        findings = pin_findings(
            self.baseline.pins,
            snapshot.files,
            self.baseline.protected_globs,
            self.contract.protect.allow,
            self.baseline.contract_path,
            restored=False,
        )
        if snapshot.tree is None:
            return findings, None, commit, snapshot.differs, None
        patch = diff_text(repo, self.baseline.tree, snapshot.tree)
        # Only coverage gates and improve mode read the added lines: their parser loads then.
        from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff

        return findings, added_lines_from_diff(patch), commit, snapshot.differs, patch == ""


class Pending(Generic[T]):
    """``work()`` run on a thread of its own, git seeing ``environ`` (the environment as it
    was before the first test, not as a test left it); :meth:`result` waits for it."""

    def __init__(self, work: Callable[[], T], environ: Mapping[str, str], name: str) -> None:
        self._outcome: tuple[T] | BaseException | None = None

        def run() -> None:
            try:
                with pinned_environment(environ):
                    self._outcome = (work(),)
            except BaseException as exc:  # handed to the waiting thread by result()
                self._outcome = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def result(self) -> T:
        """The work's answer, once it is done; what the thread raised is raised here."""
        self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        assert self._outcome is not None
        return self._outcome[0]
