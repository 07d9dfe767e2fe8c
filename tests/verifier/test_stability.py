"""Stability at baseline (``pytest: {stability_runs: N}``): a pass-to-pass test whose outcome
changes between the baseline's runs is unstable, not a promise. Real ``loop-contract baseline``
and ``verify`` runs over a small project whose test is flaky by design.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopcontract.contract.model import ContractError, parse_contract
from pytest_loopcontract.idsets import unpack_ids
from pytest_loopcontract.verdict_outcomes import verdict_outcomes
from pytest_loopcontract.verifier.stability import outcome_changes
from testing.verifier_project import (
    FIXED,
    baseline_ok,
    contract,
    finding_codes,
    make_repo,
    read_baseline,
    verify_json,
)

COUNTED = """\
from pathlib import Path

COUNTER = Path(__file__).resolve().parent.parent / "run-counter"


def test_counted():
    # flaky by design: passes when the number of its runs in this tree is odd
    count = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(count))
    assert count % 2 == 1, f"run {count}"
"""

FLAKY_ID = "tests/test_counted.py::test_counted"


def _repo(tmp_path: Path, settings: str) -> Path:
    text = contract() + settings
    repo = make_repo(
        tmp_path / "mini", **{"loopcontract.yml": text, "tests/test_counted.py": COUNTED}
    )
    baseline_ok(repo)
    return repo


def _flaky_candidate(repo: Path) -> None:
    """The honest fix, in a tree where the flaky test's next run is an even one (it fails)."""
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    (repo / "run-counter").write_text("1", "utf-8")


def test_a_test_that_flakes_at_baseline_is_unstable_not_a_regression(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "pytest: {stability_runs: 2}\n")
    recorded = read_baseline(repo)
    assert recorded["extra"]["unstable"] == [
        {"nodeid": FLAKY_ID, "reason": "outcome_changed", "outcomes": ["passed", "failed"]}
    ]
    pass_to_pass = unpack_ids(recorded["pass_to_pass"])
    assert FLAKY_ID not in pass_to_pass
    assert "tests/test_core.py::test_double" in pass_to_pass  # stable tests stay promises

    _flaky_candidate(repo)
    code, verdict = verify_json(repo)
    assert verdict_outcomes(verdict)[FLAKY_ID] == "failed"  # it did fail in this run ...
    assert code == 0, verdict["reasons"]  # ... and the honest fix is not blamed for it
    assert finding_codes(verdict) == set()
    assert verdict["baseline"]["unstable"] == recorded["extra"]["unstable"]


def test_without_stability_runs_the_flaky_test_is_a_promise_it_breaks(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "")
    recorded = read_baseline(repo)
    assert FLAKY_ID in unpack_ids(recorded["pass_to_pass"])
    assert recorded["extra"]["unstable"] == []
    _flaky_candidate(repo)
    code, verdict = verify_json(repo)
    assert code == 20
    [gate] = [g for g in verdict["gates"]["hard"] if g["kind"] == "pass_to_pass"]
    assert gate["failing"] == {FLAKY_ID: "failed"}


def test_stable_tests_stay_stable_over_several_runs(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "mini", **{"loopcontract.yml": contract() + "pytest: {stability_runs: 3}\n"}
    )
    baseline_ok(repo)
    recorded = read_baseline(repo)
    assert recorded["extra"]["unstable"] == []
    assert unpack_ids(recorded["pass_to_pass"]) == ["tests/test_core.py::test_double"]


def test_outcome_changes_compares_every_run_and_counts_an_absent_id_as_missing() -> None:
    first = {"a": "passed", "b": "passed", "c": "passed"}
    later = [{"a": "passed", "b": "passed"}, {"a": "passed", "b": "failed", "c": "passed"}]
    assert outcome_changes(first, later, ["a", "b", "c"]) == [
        {"nodeid": "b", "reason": "outcome_changed", "outcomes": ["passed", "passed", "failed"]},
        {"nodeid": "c", "reason": "outcome_changed", "outcomes": ["passed", "missing", "passed"]},
    ]
    assert outcome_changes(first, [], ["a", "b"]) == []


def test_stability_runs_is_off_by_default_and_checked() -> None:
    path = Path("loopcontract.yml")
    assert parse_contract(contract().encode(), path).pytest.stability_runs == 1
    on = parse_contract((contract() + "pytest: {stability_runs: 2}\n").encode(), path)
    assert on.pytest.stability_runs == 2
    for bad in ("0", "6", "two", "1.5"):
        with pytest.raises(ContractError, match="stability_runs"):
            parse_contract((contract() + f"pytest: {{stability_runs: {bad}}}\n").encode(), path)
