"""A large suite without running it: tens of thousands of realistic results put through the
real writers (``BaselineRecord``, ``evaluate``), for the compact-format tests and the size
benchmark, so both measure the same suite.

Node ids as a large suite has them (``tests/pkg03/test_module_042.py::TestClass1::
test_something_long_4[param-7]``: packages of modules, three classes and module-level tests per
module, each test parametrized ten ways); 1 % failing with a message, 0.5 % skipped, and the
first :data:`ACCEPTANCE` ids the acceptance tests, failing at baseline and passing in the
candidate.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.fsio import utc_now
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.evaluate import Evidence, evaluate
from pytest_loopcontract.verifier.results import RunResults, TestRecord
from pytest_loopcontract.workspace import Pin

__all__ = [
    "ACCEPTANCE",
    "baseline_record",
    "candidate_results",
    "large_contract",
    "outcome_of",
    "synthetic_ids",
    "verdict_document",
]

ACCEPTANCE = 10


def synthetic_ids(count: int) -> list[str]:
    """``count`` node ids (about 71 characters each)."""
    ids: list[str] = []
    module = 0
    while len(ids) < count:
        path = f"tests/pkg{module % 12:02d}/test_module_{module:03d}.py"
        for owner in ("TestClass0::", "TestClass1::", "TestClass2::", ""):
            for func in range(5):
                ids += [f"{path}::{owner}test_something_long_{func}[param-{k}]" for k in range(10)]
        module += 1
    return ids[:count]


def outcome_of(index: int) -> str:
    """The baseline outcome of the ``index``-th id."""
    if index < ACCEPTANCE or index % 100 == 50:
        return "failed"
    return "skipped" if index % 200 == 7 else "passed"


def baseline_record(ids: list[str]) -> BaselineRecord:
    """The record ``take_baseline`` writes for these results (same fields, same rules)."""
    outcomes = {n: outcome_of(i) for i, n in enumerate(ids)}
    acceptance = ids[:ACCEPTANCE]
    pins = {
        f"tests/pkg{i:02d}/conftest.py": Pin(sha256="a" * 64, blob="b" * 40, mode="100644")
        for i in range(12)
    }
    return BaselineRecord(
        commit="c" * 40,
        tree="d" * 40,
        contract_path="loopcontract.yml",
        contract_sha256="e" * 64,
        contract_id="large",
        mode="fix",
        collected=sorted(outcomes),
        outcomes=outcomes,
        fail_to_pass=acceptance,
        pass_to_pass=[n for n, o in outcomes.items() if o == "passed" and n not in acceptance],
        pins=pins,
        protected_globs=["conftest.py", "pyproject.toml"],
        plugins=["_loopcontract_inner"],
        created=utc_now(),
        extra={"unstable": [], "doctests": {}, "module_origins": {}},
    )


def candidate_results(ids: list[str]) -> RunResults:
    """A run of the candidate: the acceptance tests now pass, everything else as at baseline."""
    tests = []
    for i, nodeid in enumerate(ids):
        outcome = "passed" if i < ACCEPTANCE else outcome_of(i)
        message = f"AssertionError: assert {i} == {i + 1}\n  where {i} = compute()" * 2
        tests.append(
            TestRecord(
                nodeid,
                outcome,
                duration=0.000123 + i % 97 / 10_000,
                when="call" if outcome != "skipped" else "setup",
                message=message if outcome != "passed" else "",
            )
        )
    return RunResults(nonce="n" * 32, tests=tests, testscollected=len(ids))


def large_contract(acceptance: list[str], extra: str = "") -> Contract:
    """A contract whose one DoD item lists ``acceptance``; ``extra`` is appended YAML."""
    tests = "".join(f"      - {n}\n" for n in acceptance)
    text = "version: 1\nid: large\ngoal: g\nmode: fix\ndod:\n  - id: fixed\n    text: t\n"
    return parse_contract(f"{text}    tests:\n{tests}{extra}".encode(), Path("loopcontract.yml"))


def verdict_document(ids: list[str], record: BaselineRecord, workdir: Path) -> dict[str, Any]:
    """The verdict ``evaluate`` writes for :func:`candidate_results` against ``record``."""
    evidence = Evidence(
        trust="isolated",
        nonce="n" * 32,
        workdir=workdir,
        contract_relpath="loopcontract.yml",
        started=utc_now(),
        started_monotonic=time.monotonic(),
        fail_to_pass=record.fail_to_pass,
        pass_to_pass=record.pass_to_pass,
        base_commit=record.commit,
        commit="f" * 40,
        dirty=False,
    )
    return evaluate(large_contract(record.fail_to_pass), candidate_results(ids), evidence)
