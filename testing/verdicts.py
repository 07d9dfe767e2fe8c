"""A schema-valid passing verdict for tests that read verdicts without running the
verifier: the artifact reader, the lesson drafts. Tests break the parts they need."""

from __future__ import annotations

from typing import Any

from pytest_loopcontract.idsets import pack_ids
from pytest_loopcontract.verdict import SCHEMA_VERSION

__all__ = ["NOW", "TEST_ID", "failing_record", "passing_verdict"]

NOW = "2026-11-29T21:30:00Z"
TEST_ID = "tests/test_roll.py::test_window"

_ACCEPTANCE = {"id": "acceptance", "kind": "acceptance", "status": "pass", "message": ""}


def passing_verdict(
    *, commit: str | None = None, gates: dict[str, Any] | None = None, **overrides: Any
) -> dict[str, Any]:
    """The verdict of the ``rolling`` contract, met: one DoD item, its test passed, no
    tampering. ``commit`` is the measured commit (``None``: not recorded); ``gates`` replaces
    the one passing acceptance gate; ``overrides`` replace top-level keys."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
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
        "baseline": {"fail_to_pass": [], "pass_to_pass": pack_ids([])},
        "tests": {
            "outcomes": {"passed": pack_ids([TEST_ID])},
            "records": [],
            "durations": {TEST_ID: 0.01},
        },
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


def failing_record(doc: dict[str, Any], outcome: str = "failed") -> dict[str, Any]:
    """Move the verdict's one test from the passed set to the records (the tests that did not
    pass), with ``outcome``; returns its record for the test to break further."""
    record: dict[str, Any] = {"nodeid": TEST_ID, "outcome": outcome, "duration": 0.01}
    doc["tests"] = {"outcomes": {outcome: pack_ids([TEST_ID])}, "records": [record]}
    return record
