"""What the candidate's diff alone shows, before any test runs: pins, boundaries, harness
edits, the reward rules' findings and the checkpoints the diff raises.

None of it changes what the tests see, so :func:`verify` runs it on a thread beside the main
test run (the launcher only waits for the child then) rather than before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.history import History
from pytest_loopcontract.verdict import Finding, Reason
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.candidate import Candidate
from pytest_loopcontract.verifier.harness import harness_checkpoints
from pytest_loopcontract.verifier.tamper.checks import launcher_static_checks
from pytest_loopcontract.verifier.tamper.harness_patterns import harness_findings
from pytest_loopcontract.verifier.tamper.pins import (
    boundary_findings,
    pin_findings,
)

__all__ = ["DiffEvidence", "diff_evidence"]


@dataclass(frozen=True)
class DiffEvidence:
    findings: list[Finding]
    checks: list[dict[str, Any]]
    checkpoints: list[Reason]  # the agent's harness files (requested already)
    matches: list[Match]  # evidence for a person, requested with the run's (one per file)


def _crossing(baseline: BaselineRecord, candidate: Candidate) -> list[tuple[str, str]]:
    """The changed paths, less those whose content equals their pin (an amended, re-pinned
    contract crossed nothing)."""
    return [
        (status, path)
        for status, path in candidate.changed
        if not (
            path in baseline.pins
            and (entry := candidate.files.get(path)) is not None
            and entry.blob == baseline.pins[path].blob
        )
    ]


def diff_evidence(
    root: Path,
    baseline: BaselineRecord,
    contract: Contract,
    candidate: Candidate,
    history: History | None,
) -> DiffEvidence:
    """The diff's findings, the reward rules' checks and the checkpoints it raises."""
    # imported here: the checkpoint table compiles a hundred regular expressions, work that
    # belongs on this thread, not before the test run starts
    from pytest_loopcontract.checkpoints.gate import diff_matches

    globs, allow = list(baseline.protected_globs), list(contract.protect.allow)
    findings = pin_findings(baseline.pins, candidate.files, globs, allow, baseline.contract_path)
    findings += boundary_findings(
        _crossing(baseline, candidate), contract.boundaries.allow, contract.boundaries.deny
    )
    findings += harness_findings(
        candidate.patch, allow, test_globs=[*globs, "test_*.py", "*_test.py"]
    )
    # the reward rules (tamper/checks.py): findings; their evidence joins the checkpoints
    reward = launcher_static_checks(
        root, baseline, contract, candidate.files, candidate.patch, findings
    )
    findings += reward.findings
    matches = diff_matches(contract, candidate.patch, reward.evidence)
    # the files that govern the agent (hooks, settings): drifted ones wait for a person
    checkpoints = harness_checkpoints(root, history)
    return DiffEvidence(findings, list(reward.checks), checkpoints, matches)
