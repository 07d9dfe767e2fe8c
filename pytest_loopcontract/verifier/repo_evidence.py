"""Git's evidence of the tree an in-process run left: its commit, whether it is dirty, the
protected files against their pins, and the lines it added (for coverage gates and ``improve``).

Read on threads (:class:`Pending`): which repository and commit while the tests are being
collected (:func:`repo_head`, read once, at the session's start: the commit the run started
from), the snapshot of the tree at the session's end, while the session's thread turns the
run's records into results and imports the verdict's side of the package. Git's processes
wait, that work does not, so the two overlap. Light on purpose: what this module imports is
loaded before the session's end.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.snapshot import ThrowawayIndex, snapshot_against
from pytest_loopcontract.verifier.tamper.pins import pin_findings
from pytest_loopcontract.verifier.workspace import (
    RepoHead,
    WorkspaceError,
    diff_text,
    is_dirty,
    pinned_environment,
    repo_head,
)

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract
    from pytest_loopcontract.verifier.baseline_record import BaselineRecord

__all__ = [
    "Pending",
    "RepoEvidence",
    "StartingPoint",
    "prompt_handoffs",
    "repo_evidence",
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


@contextmanager
def prompt_handoffs(interval: float = 0.0005) -> Iterator[None]:
    """A short interpreter switch interval while the session's thread works beside git's.

    Each time one of git's processes ends, its thread needs the interpreter back, and the busy
    session's thread hands it over only after the switch interval (5 ms by default): at the
    session's end that was most of git's time. Put back as it was on the way out."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


class StartingPoint(NamedTuple):
    """What git says at the session's start: the repository and its commit, and a throwaway
    index copied from the real one for the snapshot at its end."""

    head: RepoHead
    snapshot_index: ThrowawayIndex


def starting_point(root: Path) -> StartingPoint:
    head = repo_head(root)
    return StartingPoint(head, ThrowawayIndex(head.root, head.index_file))


def repo_evidence(
    start: Pending[StartingPoint], contract: Contract, baseline: BaselineRecord | None
) -> RepoEvidence:
    """Git's evidence for the repository found at the start (the tree as the tests left it)
    beside ``baseline``. When git cannot read the tree, ``problem`` says why if there were
    pins to compare (without a baseline nothing is lost)."""
    try:
        head, index = start.result()
        with index:
            return RepoEvidence(baseline, *_repo_evidence(head, index, contract, baseline))
    except WorkspaceError as exc:
        problem = str(exc) if baseline is not None else None
        return RepoEvidence(baseline, [], None, None, None, None, problem)


class Pending(Generic[T]):
    """``work()`` run on a thread of its own, git seeing ``environ`` (the environment as it
    was before the first test, not as a test left it); :meth:`result` waits for it."""

    def __init__(self, work: Callable[[], T], environ: Mapping[str, str], name: str) -> None:
        self._outcome: T | BaseException | None = None

        def run() -> None:
            try:
                with pinned_environment(environ):
                    self._outcome = work()
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
        return self._outcome


def _repo_evidence(
    head: RepoHead, index: ThrowawayIndex, contract: Contract, baseline: BaselineRecord | None
) -> tuple[list[Finding], dict[str, frozenset[int]] | None, str | None, bool | None, bool | None]:
    repo, commit, _ = head
    if commit is None:
        return [], None, None, None, None
    if baseline is None:
        return [], None, commit, is_dirty(repo), None
    needs_diff = contract.mode == "improve" or any(
        g.metric.startswith("coverage.") for g in contract.measured_gates
    )
    snapshot = snapshot_against(repo, commit, index, with_tree=needs_diff)
    findings = pin_findings(
        baseline.pins,
        snapshot.files,
        baseline.protected_globs,
        contract.protect.allow,
        baseline.contract_path,
        restored=False,
    )
    if snapshot.tree is None:
        return findings, None, commit, snapshot.differs, None
    patch = diff_text(repo, baseline.tree, snapshot.tree)
    # Only coverage gates and improve mode read the added lines: their parser loads then.
    from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff

    return findings, added_lines_from_diff(patch), commit, snapshot.differs, patch == ""
