"""The capability policy, from the launcher's side: what it governs in each run, and what the
uses it reports mean for the verdict.

Inside the run, ``inner/policy.py`` (an audit hook) attributes uses of a few capabilities to
the candidate's changed files (see its notes). Here:

- :func:`baseline_settings` asks the baseline's run to *profile* them: every (file,
  capability) pair the unchanged project used, so that a real project passes without an
  allow-list (attrs reads frames, a CLI opens its own test fixtures...);
- :func:`verify_settings` names the candidate's changed Python files, the referee's test
  sources no candidate may open, and that profile;
- :func:`capability_findings` turns what came back into ``capability_denied`` findings (tamper,
  exit 25: the use was denied in the run) and ``capability_used`` evidence for a person (24);
  ``tamper.allow`` names either for paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.results import CapabilityUse

__all__ = [
    "DENIED",
    "USED",
    "baseline_settings",
    "capability_findings",
    "verify_settings",
]

DENIED = "capability_denied"
USED = "capability_used"


def baseline_settings() -> dict[str, Any]:
    return {"record": True}


def verify_settings(
    changed: Iterable[str], referee: Iterable[str], profile: Iterable[Sequence[str]]
) -> dict[str, Any]:
    """The run's policy: ``changed`` (the candidate's files, relative; only Python files can
    run), ``referee`` (test sources no candidate may open), the baseline's ``profile``."""
    return {
        "candidate": sorted({p for p in changed if p.endswith(".py")}),
        "referee": sorted({p for p in referee if p.endswith(".py")}),
        "profile": sorted({(str(a), str(b)) for a, b in profile}),
    }


def capability_findings(
    uses: Sequence[CapabilityUse], contract: Contract
) -> tuple[list[Finding], list[Match]]:
    """Tamper-level uses as findings, the rest as evidence for a person; once per (kind,
    path, line), allowances applied."""
    findings: list[Finding] = []
    evidence: list[Match] = []
    for use in {(u.kind, u.path, u.line): u for u in uses}.values():
        code = DENIED if use.severity == "tamper" else USED
        if contract.tamper.allows(code, use.path):
            continue
        message = f"in the run, code under test {use.detail} ({use.kind})"
        if code == DENIED:
            findings.append(Finding(code, message + "; it was denied", use.path, use.line))
        else:
            evidence.append(Match(code, "reward", message, use.kind, use.path, use.line))
    return findings, evidence
