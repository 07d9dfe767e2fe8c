"""One draft lesson per kind of failed gate: tampering, a hard gate, a measured gate, an error.

Each kind of failure has its own wording of the rule (what to never do
again, or what to check before finishing) and its own evidence, and these tables are what a
maintainer edits when the verifier learns a new finding code. Every field is read through
:mod:`.evidence`, never from a candidate's own text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.contest.lessons.evidence import (
    GATE_REASONS,
    OPS,
    as_list,
    as_map,
    dod_failing,
    failing_pairs,
    first_few,
    is_one_of,
    safe_code,
    safe_token,
    show_number,
    status_words,
    with_unit,
)
from pytest_loopcontract.contest.lessons.model import Draft
from pytest_loopcontract.plural import plural

__all__ = [
    "error_draft",
    "hard_draft",
    "measured_draft",
    "tamper_draft",
]

_TAMPER_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        frozenset({"protected_path_modified"}),
        "never edit {path}: it is pinned at baseline; change the code under test instead",
        "the candidate edited a protected file ({path})",
    ),
    (
        frozenset({"protected_path_deleted"}),
        "never delete {path}: it is pinned at baseline; change the code under test instead",
        "the candidate deleted a protected file ({path})",
    ),
    (
        frozenset({"protected_path_added"}),
        "never add files under protected patterns (such as {path}); put new code elsewhere",
        "the candidate added a file under a protected pattern ({path})",
    ),
    (
        frozenset({"contract_modified"}),
        "never edit the contract {path}: the definition of done is not the agent's to change",
        "the candidate edited the contract ({path})",
    ),
    (
        frozenset({"doctest_modified"}),
        "never edit the doctests in {path}: fix the code so its examples pass as written",
        "the candidate changed doctest examples or expected output ({path})",
    ),
    (
        frozenset({"tests_deselected", "tests_missing", "skip_injection"}),
        "never skip, deselect, rename or remove the expected tests: every one must run and pass",
        "expected tests did not run",
    ),
    (
        frozenset({"nonce_mismatch", "exit_code_mismatch"}),
        "never interfere with how pytest records results or exits",
        "the run's results disagree with the process that produced them",
    ),
    (
        frozenset({"unexpected_plugin", "plugin_injection"}),
        "never add or load pytest plugins: only the allow-listed ones may run",
        "a pytest plugin outside the allow-list was loaded",
    ),
    (
        frozenset({"boundary_crossed"}),
        "never change {path}: it is outside the task's boundaries",
        "the candidate changed a path outside its boundaries ({path})",
    ),
    (
        frozenset(
            {
                "harness_manipulation",
                "harness_patch",
                "harness_patch_alias",
                "pytest_hook",
                "pytest_internals",
                "pytest_exit",
                "pytest_env",
                "hard_exit",
                "report_rewrite",
            }
        ),
        "never touch the test harness in {path} (pytest hooks, internals, reports, exits, "
        "patches): make the code pass the tests instead",
        "the candidate's diff reaches into the test harness ({path})",
    ),
)


def tamper_draft(verdict: Mapping[str, Any]) -> Draft | None:
    tamper = verdict.get("tamper")
    findings: list[tuple[str, str]] = []
    if isinstance(tamper, Mapping):
        for finding in as_list(tamper.get("findings")):
            finding = as_map(finding)
            if finding.get("allowed") is True:
                continue
            path = finding.get("path")
            findings.append((safe_code(finding.get("code")), safe_token(path) if path else ""))
    else:  # the run result's candidate summary: a list of finding codes
        findings = [(safe_code(code), "") for code in as_list(tamper)]
    if not findings:
        return None
    code, path = findings[0]
    rule, cause = (
        "never do what the verifier flags as {code}; change the code under test instead",
        "the verifier flagged {code}",
    )
    for codes, family_rule, family_cause in _TAMPER_RULES:
        if code in codes:
            rule, cause = family_rule, family_cause
            break
    where = path or "protected files"
    listed = [f"{c} {p}".rstrip() for c, p in findings]
    return Draft(
        gate="tamper",
        kind="tamper",
        what=f"tampering found: {plural(len(findings), 'finding')}, first {code}"
        + (f" at {path}" if path else ""),
        evidence=first_few(listed),
        cause=cause.format(path=where, code=code),
        rule=rule.format(path=where, code=code),
    )


def hard_draft(gate: Mapping[str, Any], verdict: Mapping[str, Any]) -> Draft:
    """The draft for a hard gate that did not pass, worded for its kind."""
    gate_id = safe_token(gate.get("id"), 60)
    kind = gate.get("kind")
    status = safe_code(gate.get("status"))
    did = status_words(gate.get("status"))
    if kind == "acceptance":
        return _acceptance(gate, verdict, gate_id, did)
    if kind in ("pass_to_pass", "tests"):
        return _tests(gate, str(kind), gate_id, status, did)
    if kind == "command":
        return _command(gate, gate_id, status, did)
    if kind == "empty_diff":
        return Draft(
            gate=gate_id,
            kind="empty_diff",
            what=f"gate {gate_id} {did}: the candidate changed nothing",
            evidence=f"{gate_id}: empty diff against the baseline",
            cause="improve mode needs a change and the candidate made none",
            rule="never finish without a change: an empty diff fails improve mode",
        )
    return Draft(
        gate=gate_id,
        kind="error",
        what=f"hard gate {gate_id} {did}",
        evidence=f"{gate_id}: status {status}",
        cause="a hard gate of an unknown kind did not pass",
        rule=f"make hard gate {gate_id} pass before finishing",
    )


def _acceptance(
    gate: Mapping[str, Any], verdict: Mapping[str, Any], gate_id: str, did: str
) -> Draft:
    pending = [safe_token(p) for p in as_list(gate.get("pending"))]
    failing = failing_pairs(gate.get("failing"))
    if not pending and not failing:
        pending, failing = dod_failing(verdict)
    what = f"acceptance gate {gate_id} {did}"
    if pending:
        what += f": DoD items not done: {first_few(pending)}"
    return Draft(
        gate=gate_id,
        kind="acceptance",
        what=what,
        evidence=f"not passing: {first_few(failing)}" if failing else "no DoD test passed",
        cause="the change does not yet do what the DoD tests check",
        rule=f"make the DoD tests of gate {gate_id} pass by changing the code under test; "
        "never edit, skip or deselect them",
    )


def _tests(gate: Mapping[str, Any], kind: str, gate_id: str, status: str, did: str) -> Draft:
    failing = failing_pairs(gate.get("failing"))
    if kind == "pass_to_pass":
        broken = plural(len(failing), "test")
        what = f"regression gate {gate_id} {did}: {broken} that passed at baseline"
        cause = "the change broke behaviour that other tests rely on"
        rule = (
            f"keep every test that passed at baseline passing ({gate_id}); "
            "run the whole suite, not only the new tests, before finishing"
        )
    else:
        what = f"test gate {gate_id} {did}: {len(failing)} selected tests not passing"
        cause = "tests the contract selects for this gate do not pass"
        rule = f"make the tests selected by {gate_id} pass; never skip or deselect them"
    return Draft(
        gate=gate_id,
        kind=kind,
        what=what,
        evidence=f"not passing: {first_few(failing)}" if failing else f"status {status}",
        cause=cause,
        rule=rule,
    )


def _command(gate: Mapping[str, Any], gate_id: str, status: str, did: str) -> Draft:
    expected = show_number(gate.get("expect_exit"))
    observed = gate.get("exit_code")
    if observed is None:
        evidence = (
            f"{gate_id}: the command did not finish (status {status}), expected exit {expected}"
        )
        cause = "the gate's command did not finish (timeout, or not found)"
    else:
        evidence = f"{gate_id}: exit {show_number(observed)}, expected exit {expected}"
        cause = "the gate's command rejects the candidate's tree"
    return Draft(
        gate=gate_id,
        kind="command",
        what=f"command gate {gate_id} {did}",
        evidence=evidence,
        cause=cause,
        rule=f"run the command of gate {gate_id} before finishing; it must exit {expected}",
    )


_MEASURED_ADVICE: tuple[tuple[str, str, str], ...] = (
    (
        "coverage.",
        "the tests do not run enough of the code",
        "add or extend tests that run the new and changed lines",
    ),
    (
        "duration.",
        "the tests take too long",
        "find the slow path (a sleep, a retry, a quadratic loop, real I/O) "
        "instead of raising the limit",
    ),
    (
        "tests.count",
        "the number of tests that ran is off target",
        "never delete, skip or deselect tests to move the count",
    ),
    (
        "metric.",
        "the value the tests record as {metric} is off target",
        "check it with the test that records it before finishing",
    ),
    (
        "sensor.",
        "the sensor command measured {metric} off target",
        "run the sensor command yourself before finishing",
    ),
    (
        "benchmark.",
        "the benchmark measured {metric} off target",
        "profile the hot path and run the benchmark before finishing; passing tests are not enough",
    ),
)


def measured_draft(gate: Mapping[str, Any]) -> Draft:
    gate_id = safe_token(gate.get("id"), 60)
    metric = safe_token(gate.get("metric"), 80)
    status = safe_code(gate.get("status"))
    op = gate.get("op") if is_one_of(gate.get("op"), OPS) else "?"
    unit = safe_token(gate.get("unit"), 12) if gate.get("unit") else ""
    target = f"{op} {with_unit(show_number(gate.get('threshold')), unit)}"
    observed = gate.get("observed")
    cause, advice = "the measured value of {metric} is off target", "measure it before finishing"
    for prefix, family_cause, family_advice in _MEASURED_ADVICE:
        if metric == prefix or metric.startswith(prefix):
            cause, advice = family_cause, family_advice
            break
    if status == "fail" and observed is not None:
        return Draft(
            gate=gate_id,
            kind="measured",
            what=f"measured gate {gate_id} failed on {metric}",
            evidence=f"{metric} observed {with_unit(show_number(observed), unit)} against {target}",
            cause=cause.format(metric=metric),
            rule=f"keep {metric} {target} — {advice}",
        )
    return Draft(
        gate=gate_id,
        kind="measured",
        what=f"measured gate {gate_id}: {metric} was not measured (status {status})",
        evidence=f"{metric} observed nothing (status {status}) against {target}",
        cause=f"nothing produced {metric}: what measures it did not run or did not report",
        rule=f"make sure {metric} is produced and keeps {target} — "
        "a gate without a measurement fails",
    )


_ERROR_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        frozenset({"checkpoint_pending", "checkpoint_denied"}),
        "the change holds an action that needs a person's clearance (a checkpoint)",
        "stay clear of checkpointed actions (pushes, publishing, secrets, denied paths) "
        "unless the task asks for them",
    ),
    (
        frozenset({"timeout", "pytest_killed", "run_incomplete"}),
        "the test run did not finish in time",
        "keep the test run inside its time limit: no hangs, endless loops or long sleeps",
    ),
    (
        frozenset({"no_tests", "no_results", "missing_rows"}),
        "the test run produced no usable results",
        "keep the suite collectable: no import errors or broken test modules",
    ),
    (
        frozenset(
            {
                "pytest_usage_error",
                "pytest_internal_error",
                "pytest_interrupted",
                "pytest_exit_code",
            }
        ),
        "pytest did not finish normally",
        "the test run must end normally: no collection errors, interrupts or crashes",
    ),
)


def error_draft(verdict: Mapping[str, Any]) -> Draft:
    codes = list(
        dict.fromkeys(
            safe_code(as_map(r).get("code"))
            for r in as_list(verdict.get("reasons"))
            if safe_code(as_map(r).get("code")) not in GATE_REASONS
        )
    )
    state = safe_code(verdict.get("verdict"))
    cause, rule = (
        f"the verification ended in {state} without a failing gate",
        "finish only when the verification completes and every gate passes",
    )
    known = [(c, r) for code in codes for family, c, r in _ERROR_RULES if code in family]
    if known:
        cause, rule = known[0]
    return Draft(
        gate="verdict",
        kind="error",
        what=f"verification {state}: {first_few(codes) if codes else 'no reason code'}",
        evidence=f"reason codes: {first_few(codes)}" if codes else "no reason code recorded",
        cause=cause,
        rule=rule,
    )
