"""The verdict as SARIF 2.1.0: valid against the official schema, one rule per finding code,
results where the finding is."""

from __future__ import annotations

import copy
from typing import Any

from pytest_loopcontract.verifier.reports.sarif import Evidence, sarif_log
from testing.report_schemas import sarif_errors
from testing.verdicts import passing_verdict

PENDING = (
    "cp-0123456789: src/roll.py: A secret in the diff is exposed once it is pushed; it must be "
    "removed and rotated, which takes a person. [aws access key id] - needs 'loop-contract "
    "checkpoint resolve cp-0123456789 --by NAME'"
)


def _verdict() -> dict[str, Any]:
    findings = [
        {"code": "vacuous_pass", "message": "passes with its expected value mutated",
         "path": "tests/test_roll.py", "line": 12, "allowed": False},
        {"code": "vacuous_pass", "message": "another", "path": "tests/test_roll.py",
         "line": 30, "allowed": False},
        {"code": "env_sniffing", "message": "reads CI", "path": "src/roll.py", "line": 3,
         "allowed": True},
        {"code": "exit_code_mismatch", "message": "pytest exited 0 although failures were "
         "recorded", "allowed": False},
    ]  # fmt: skip
    reasons = [
        {"code": "tamper_detected", "message": "vacuous_pass: passes with its expected value"},
        {"code": "checkpoint_pending", "message": PENDING},
        {"code": "checkpoint_denied", "message": "cp-aaaaaaaaaa: deploy.sh: sudo (denied by ann)"},
    ]
    return passing_verdict(
        verdict="fail",
        exit_code=25,
        reasons=reasons,
        tamper={"detected": True, "findings": findings},
        isolation="sandbox",
    )


EVIDENCE = [
    Evidence("checkpoint_pending", "cp-0123456789", "secret-in-diff",
             "A secret in the diff is exposed once it is pushed. [aws access key id]",
             "src/roll.py", 7),
    Evidence("checkpoint_pending", "cp-0123456789", "secret-in-diff",
             "A secret in the diff is exposed once it is pushed. [github token]", "src/roll.py", 9),
]  # fmt: skip


def _run(log: dict[str, Any]) -> dict[str, Any]:
    (run,) = log["runs"]
    assert isinstance(run, dict)
    return run


def test_a_passing_verdict_is_a_valid_log_with_no_results() -> None:
    log = sarif_log(passing_verdict(isolation="sandbox"))
    assert sarif_errors(log) == []
    assert log["version"] == "2.1.0"
    run = _run(log)
    assert run["results"] == []
    assert run["properties"]["verdict"] == "pass"
    assert run["properties"]["contract"]["id"] == "rolling"
    assert run["tool"]["driver"]["name"] == "pytest-loopcontract"


def test_one_rule_per_finding_code_and_results_at_their_lines() -> None:
    log = sarif_log(_verdict(), EVIDENCE)
    assert sarif_errors(log) == []
    run = _run(log)
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == [
        "tamper/vacuous_pass",
        "tamper/env_sniffing",
        "tamper/exit_code_mismatch",
        "checkpoint/secret-in-diff",
        "checkpoint/checkpoint_denied",
    ]
    assert len(set(rules)) == len(rules)
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    places = [
        (
            r["ruleId"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region", {}).get("startLine"),
        )
        for r in run["results"]
    ]
    assert places == [
        ("tamper/vacuous_pass", "error", "tests/test_roll.py", 12),
        ("tamper/vacuous_pass", "error", "tests/test_roll.py", 30),
        ("tamper/env_sniffing", "note", "src/roll.py", 3),
        ("tamper/exit_code_mismatch", "error", "loopcontract.yml", None),
        ("checkpoint/secret-in-diff", "warning", "src/roll.py", 7),
        ("checkpoint/secret-in-diff", "warning", "src/roll.py", 9),
        ("checkpoint/checkpoint_denied", "error", "loopcontract.yml", None),
    ]
    secret_rule = run["tool"]["driver"]["rules"][3]
    assert secret_rule["shortDescription"]["text"].endswith("once it is pushed.")
    assert "[aws access key id]" in run["results"][4]["message"]["text"]
    assert run["properties"]["exitCode"] == 25
    assert [r["code"] for r in run["properties"]["reasons"]][:2] == [
        "tamper_detected",
        "checkpoint_pending",
    ]


def test_evidence_of_another_request_is_not_reported() -> None:
    """Evidence the verdict does not name (an old request) places nothing."""
    other = [Evidence("checkpoint_pending", "cp-9999999999", "sudo", "sudo", "x.sh", 1)]
    run = _run(sarif_log(_verdict(), other))
    assert "checkpoint/sudo" not in [r["id"] for r in run["tool"]["driver"]["rules"]]
    pending = [r for r in run["results"] if r["level"] == "warning"]
    assert [r["ruleId"] for r in pending] == ["checkpoint/checkpoint_pending"]


def test_the_schema_is_not_vacuous() -> None:
    """A level SARIF does not know, or a result without a message, is refused."""
    log = sarif_log(_verdict(), EVIDENCE)
    bad = copy.deepcopy(log)
    bad["runs"][0]["results"][0]["level"] = "fatal"
    assert sarif_errors(bad) != []
    bad = copy.deepcopy(log)
    del bad["runs"][0]["results"][0]["message"]
    assert sarif_errors(bad) != []
    bad = copy.deepcopy(log)
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert sarif_errors(bad) != []
