"""Git's evidence of the tree an in-process run left: its commit, whether it is dirty, the
protected files against their pins, and the lines it added (for coverage gates and ``improve``).

Read on a thread of its own (:class:`PendingEvidence`) while the session's thread turns the
run's records into results and imports the verdict's side of the package: git's processes
wait, that work does not, so the two overlap. Light on purpose: what this module imports is
loaded before the session's end.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.tamper.pins import pin_findings
from pytest_loopcontract.verifier.workspace import (
    WorkspaceError,
    diff_text,
    is_dirty,
    pinned_environment,
    repo_head,
    snapshot_files,
    tree_differs,
)

if TYPE_CHECKING:
    from pytest_loopcontract.contract.model import Contract
    from pytest_loopcontract.verifier.baseline_record import BaselineRecord

__all__ = ["PendingEvidence", "RepoEvidence", "repo_evidence"]


class RepoEvidence(NamedTuple):
    """What git says of the work tree the tests ran on, beside the baseline it is judged by."""

    baseline: BaselineRecord | None
    findings: list[Finding]
    changed: dict[str, frozenset[int]] | None
    commit: str | None
    dirty: bool | None
    empty: bool | None
    problem: str | None = None  # git's words when it could not read the tree


def repo_evidence(root: Path, contract: Contract, baseline: BaselineRecord | None) -> RepoEvidence:
    """Git's evidence for ``root`` (the tree as the tests left it) beside ``baseline``. When
    git cannot read the tree, ``problem`` says why if there were pins to compare (without a
    baseline nothing is lost)."""
    try:
        return RepoEvidence(baseline, *_repo_evidence(root, contract, baseline))
    except WorkspaceError as exc:
        problem = str(exc) if baseline is not None else None
        return RepoEvidence(baseline, [], None, None, None, None, problem)


class PendingEvidence:
    """:func:`repo_evidence` read on a thread (see the module's docstring). Git sees
    ``environ``, the environment as it was before the first test."""

    def __init__(
        self,
        root: Path,
        contract: Contract,
        baseline: BaselineRecord | None,
        environ: Mapping[str, str],
    ) -> None:
        self._outcome: RepoEvidence | BaseException | None = None

        def read() -> None:
            try:
                with pinned_environment(environ):
                    self._outcome = repo_evidence(root, contract, baseline)
            except BaseException as exc:  # handed to the session's thread by result()
                self._outcome = exc

        self._thread = threading.Thread(target=read, name="loopcontract-git", daemon=True)
        self._thread.start()

    def result(self) -> RepoEvidence:
        """The evidence, once git is done; what the thread raised is raised here."""
        self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        assert self._outcome is not None
        return self._outcome


def _repo_evidence(
    root: Path, contract: Contract, baseline: BaselineRecord | None
) -> tuple[list[Finding], dict[str, frozenset[int]] | None, str | None, bool | None, bool | None]:
    repo, commit, index = repo_head(root)
    if commit is None:
        return [], None, None, None, None
    if baseline is None:
        return [], None, commit, is_dirty(repo), None
    tree, files = snapshot_files(repo, real_index=index)
    # From objects alone, what ``git status`` would say of this snapshot, without a second
    # scan of the work tree (2 to 3 ms here against 3 to 5 ms).
    dirty = tree_differs(repo, commit, tree)
    findings = pin_findings(
        baseline.pins,
        files,
        baseline.protected_globs,
        contract.protect.allow,
        baseline.contract_path,
        restored=False,
    )
    needs_diff = any(g.metric.startswith("coverage.") for g in contract.measured_gates)
    patch = (
        diff_text(repo, baseline.tree, tree) if needs_diff or contract.mode == "improve" else None
    )
    if patch is None:
        return findings, None, commit, dirty, None
    # Only coverage gates and improve mode read the added lines: their parser loads then.
    from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff

    return findings, added_lines_from_diff(patch), commit, dirty, patch == ""
