"""Large suites: ``baseline.json`` and the verdict store their test sets compactly, read back
exactly, and older files still read. Real writers (``BaselineRecord.to_json``, ``evaluate``,
``write_json_atomic``) and real ``loop-contract baseline``/``verify`` runs.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.fsio import utc_now, write_json_atomic
from pytest_loopcontract.idsets import count_ids, pack_ids, unpack_ids
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import validate_verdict
from pytest_loopcontract.verdict_outcomes import failing_tests, verdict_outcomes, verdict_records
from pytest_loopcontract.verifier.baseline.record import BaselineRecord, load_baseline
from pytest_loopcontract.verifier.evaluate import Evidence, evaluate
from pytest_loopcontract.verifier.results import RunResults, TestRecord
from pytest_loopcontract.workspace import WorkspaceError
from testing.large_suite import (
    ACCEPTANCE,
    baseline_record,
    large_contract,
    outcome_of,
    synthetic_ids,
    verdict_document,
)
from testing.repos import assert_valid_verdict
from testing.verifier_project import (
    baseline_ok,
    cli,
    make_repo,
    no_traceback,
)

BOUND = 5_000_000

# --- id sets ---------------------------------------------------------------------------------

AWKWARD_IDS = [
    "tests/test_a.py::test_plain",
    "tests/test_a.py::TestA::test_method[1]",
    "tests/test_a.py::TestA::TestInner::test_deep",
    "tests/test_a.py::test_param[a::b]",  # '::' inside the parameters
    "tests/test_a.py::TestA::test_param[x::y::z]",
    "tests/test_a.py::test_open[",
    "tests/test_broken.py",  # a collection error of the whole file
    "",  # the session
    "tests/test_a.py::",
    "::test_no_file",
    "tests/test_a.py::A::::b",
    "tests/test_caf\udcff.py::test_name[\udcff]",
    "tests/test_a.py::test_plain",  # a duplicate collapses
]


def test_an_id_set_gives_back_exactly_the_ids_that_went_in() -> None:
    packed = pack_ids(AWKWARD_IDS)
    assert sorted(unpack_ids(json.loads(json.dumps(packed)))) == sorted(set(AWKWARD_IDS))
    assert count_ids(packed) == len(set(AWKWARD_IDS))
    # readable: the file once, the class path once, the rest of each id as it was
    assert packed["tests/test_a.py"]["TestA"] == ["test_method[1]", "test_param[x::y::z]"]
    assert packed["tests/test_a.py"][""] == ["test_open[", "test_param[a::b]", "test_plain"]
    assert packed["tests/test_a.py"]["TestA::TestInner"] == ["test_deep"]
    assert "tests/test_broken.py" in packed[""][""]


@pytest.mark.parametrize(
    "damaged", [["tests/a.py::t"], {"tests/a.py": ["t"]}, {"tests/a.py": {"": "t"}}, None]
)
def test_a_damaged_id_set_is_a_clear_error(damaged: Any) -> None:
    with pytest.raises(ValueError, match="pass_to_pass"):
        unpack_ids(damaged, "pass_to_pass")


# --- 60,000 results through the real writers ----------------------------------------------------


def test_a_60000_test_baseline_and_verdict_stay_under_5_mb(tmp_path: Path) -> None:
    ids = synthetic_ids(60_000)
    record = baseline_record(ids)
    write_json_atomic(StateDir.of(tmp_path).baseline, record.to_json())
    size = StateDir.of(tmp_path).baseline.stat().st_size
    assert size < BOUND, size
    # the previous writer (every set a plain list or map) was well over the bound
    old = tmp_path / "format1.json"
    write_json_atomic(old, {**asdict(record), "schema_version": 1})
    assert old.stat().st_size > 2 * BOUND

    loaded = load_baseline(tmp_path)
    assert loaded.outcomes == record.outcomes
    assert loaded.collected == record.collected
    assert sorted(loaded.pass_to_pass) == sorted(record.pass_to_pass)
    assert loaded.fail_to_pass == record.fail_to_pass  # short, and in the DoD's order

    document = verdict_document(ids, record, tmp_path)
    path = tmp_path / "verdict.json"
    write_json_atomic(path, document)
    assert path.stat().st_size < BOUND, path.stat().st_size
    verdict = json.loads(path.read_text("utf-8"))
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert verdict["summary"]["total"] == 60_000
    expected = {n: "passed" if i < ACCEPTANCE else outcome_of(i) for i, n in enumerate(ids)}
    assert verdict_outcomes(verdict) == expected
    failing = sorted(n for n, o in expected.items() if o in ("failed", "error"))
    assert sorted(failing_tests(verdict)) == failing  # skipped tests are not failing
    assert count_ids(verdict["baseline"]["pass_to_pass"]) == len(record.pass_to_pass)
    assert "durations" not in verdict["tests"]  # no duration gate: no durations of passes


def test_durations_of_passed_tests_are_kept_when_a_duration_gate_needs_them(
    tmp_path: Path,
) -> None:
    ids = synthetic_ids(200)
    record = baseline_record(ids)
    document = verdict_document(ids, record, tmp_path)
    assert "durations" not in document["tests"]
    gate = (
        "gates:\n  measured:\n    - {id: quick, metric: duration.total, op: '<=', threshold: 9}\n"
    )
    contract = large_contract(ids[:1], gate)
    results = RunResults(nonce="n", tests=[TestRecord(n, "passed", duration=0.5) for n in ids])
    evidence = Evidence("isolated", "n", tmp_path, "loopcontract.yml", utc_now(), time.monotonic())
    timed = evaluate(contract, results, evidence)
    assert_valid_verdict(timed)
    assert timed["tests"]["durations"] == dict.fromkeys(ids, 0.5)
    assert {t["nodeid"]: t["duration"] for t in verdict_records(timed)} == dict.fromkeys(ids, 0.5)


# --- other formats -----------------------------------------------------------------------------


def test_a_baseline_in_an_unknown_format_is_refused_naming_the_command(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    baseline_ok(repo)
    path = repo / ".loop-contract/baseline.json"
    data = json.loads(path.read_text("utf-8"))
    for version in (3, 1):  # no release wrote format 1: a file in it was made by hand
        path.write_text(json.dumps({**data, "schema_version": version}), "utf-8")
        result = cli(repo, "verify")
        assert result.returncode == 27
        assert f"format {version}" in result.stderr
        assert "run 'loop-contract baseline' again" in result.stderr
        no_traceback(result)


def test_a_damaged_id_set_in_a_baseline_says_to_take_it_again(tmp_path: Path) -> None:
    record = baseline_record(synthetic_ids(50)).to_json()
    record["pass_to_pass"] = ["tests/a.py::t"]  # a format-1 list in a format-2 file
    with pytest.raises(WorkspaceError, match=r"damaged .*pass_to_pass.*loop-contract baseline"):
        BaselineRecord.from_json(record)


def test_a_verdict_in_another_shape_or_format_is_not_a_verdict(tmp_path: Path) -> None:
    ids = synthetic_ids(30)
    current = verdict_document(ids, baseline_record(ids), tmp_path)
    assert validate_verdict(current) == []
    listed = {**current, "tests": [{"nodeid": "tests/a.py::t", "outcome": "failed"}]}
    assert validate_verdict(listed)  # one record per test was never written by a release
    assert failing_tests(listed) == [] and verdict_outcomes(listed) == {}
    assert validate_verdict({**current, "schema_version": 1})
    assert validate_verdict({**current, "tests": {**current["tests"], "extra": 1}})
