"""Where a verified candidate stands: which gate (if any) stopped it, and the gate summary.

Pure functions over a verdict document, so the orchestrator, the reports and the GitHub side
agree on one reading of "failed the hard gate" versus "failed a measured gate". Gates rank:
tampering and errors and hard gates first, then measured gates, then the matrix; a candidate
is stopped by the first rank it fails, and the matrix can never overrule a gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["gate_stage", "gate_summary"]

_MEASURED_KEYS = ("id", "status", "metric", "observed", "op", "threshold", "unit")


def gate_stage(verdict: Mapping[str, Any]) -> str | None:
    """``"hard"`` (tampering, an error verdict or a hard gate), ``"measured"``, or None (passed)."""
    if (verdict.get("tamper") or {}).get("detected"):
        return "hard"
    if verdict.get("verdict") == "error":
        return "hard"
    gates = verdict.get("gates") or {}
    if any(g.get("status") != "pass" for g in gates.get("hard") or []):
        return "hard"
    if any(g.get("status") != "pass" for g in gates.get("measured") or []):
        return "measured"
    if verdict.get("verdict") != "pass":
        # A failing verdict with every gate green (a pending checkpoint, say) stops at the hard
        # rank: nothing may pass on to the judges that the verifier did not pass.
        return "hard"
    return None


def gate_summary(verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The gate part of a candidate in the run result: ids and statuses, measured values,
    the codes of blocking tamper findings. Copies only verifier-produced fields."""
    gates = verdict.get("gates") or {}
    findings = (verdict.get("tamper") or {}).get("findings") or []
    return {
        "hard": [{"id": str(g["id"]), "status": str(g["status"])} for g in gates.get("hard") or []],
        "measured": [
            {key: g.get(key) for key in _MEASURED_KEYS} for g in gates.get("measured") or []
        ],
        "tamper": sorted({str(f["code"]) for f in findings if not f.get("allowed")}),
    }
