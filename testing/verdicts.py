"""A schema-valid passing verdict (format 1) for tests that read verdicts without running the
verifier: the artifact reader, the lesson drafts. Tests break the parts they need."""

from __future__ import annotations

from typing import Any

__all__ = ["NOW", "passing_verdict"]

NOW = "2026-11-29T21:30:00Z"

_ACCEPTANCE = {"id": "acceptance", "kind": "acceptance", "status": "pass", "message": ""}


def passing_verdict(
    *, commit: str | None = None, gates: dict[str, Any] | None = None, **overrides: Any
) -> dict[str, Any]:
    """The verdict of the ``rolling`` contract, met: one DoD item, its test passed, no
    tampering. ``commit`` is the measured commit (``None``: not recorded); ``gates`` replaces
    the one passing acceptance gate; ``overrides`` replace top-level keys."""
    doc: dict[str, Any] = {
        "schema_version": 1,
        "tool": {"name": "pytest-loopcontract", "version": "0.1"},
        "contract": {"path": "loopcontract.yml", "id": "rolling", "sha256": "a" * 64},
        "trust": "isolated",
        "nonce": "n0nce",
        "verdict": "pass",
        "exit_code": 0,
        "reasons": [{"code": "contract_met", "message": "every DoD item and gate passed"}],
        "dod": [
            {
                "id": "window",
                "text": "rolling window sums",
                "status": "done",
                "tests": [{"nodeid": "tests/test_roll.py::test_window", "outcome": "passed"}],
            }
        ],
        "gates": gates if gates is not None else {"hard": [dict(_ACCEPTANCE)], "measured": []},
        "tamper": {"detected": False, "findings": []},
        "baseline": {"fail_to_pass": [], "pass_to_pass": []},
        "tests": [
            {
                "nodeid": "tests/test_roll.py::test_window",
                "outcome": "passed",
                "duration": 0.01,
                "when": "call",
            }
        ],
        "summary": {
            "passed": 1,
            "failed": 0,
            "error": 0,
            "skipped": 0,
            "xfailed": 0,
            "xpassed": 0,
            "total": 1,
        },
        "loop": {"iteration": None, "decision": "done", "stop_reason": None},
        "environment": {
            "commit": commit,
            "dirty": None if commit is None else False,
            "python": "3.11",
            "pytest": "8",
        },
        "timing": {"started": NOW, "finished": NOW, "duration_s": 1.0},
    }
    doc.update(overrides)
    return doc
