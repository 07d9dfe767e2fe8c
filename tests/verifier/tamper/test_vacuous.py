"""The vacuous-pass check: what it could not do is named; a broken early run falls back to the
ordinary run after the main one."""

from __future__ import annotations

HEAD = "version: 1\nid: x\ndod:\n  - {id: a, text: a, tests: [t.py::test_a]}\n"


def _contract(tmp_path, tail: str = ""):
    from pytest_loopcontract.contract.model import load_contract

    path = tmp_path / "loopcontract.yml"
    path.write_text(HEAD + tail, "utf-8")
    return load_contract(path)


def test_vacuous_check_names_what_it_could_not_do(tmp_path) -> None:
    from pytest_loopcontract.verifier.results import RunResults, TestRecord
    from pytest_loopcontract.verifier.runner import PytestRun
    from pytest_loopcontract.verifier.tamper.vacuous import VacuousRunner, vacuous_pass_check

    results = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "passed", 0.1, "call")])
    unparsable = VacuousRunner(
        prepare=lambda dest: None,
        run=lambda dest, ids, limit: PytestRun(None, None, "", "", 0.0, True),
        pinned_source=lambda p: b"def test_a(:\n",
    )
    (check,) = vacuous_pass_check(_contract(tmp_path), results, unparsable).checks
    assert check["status"] == "not_run" and "cannot handle t.py" in check["message"]
    hangs = VacuousRunner(
        prepare=lambda dest: None,
        run=lambda dest, ids, limit: PytestRun(None, None, "", "", limit, True),
        pinned_source=lambda p: b"def test_a():\n    assert f() == 1\n",
    )
    (check,) = vacuous_pass_check(_contract(tmp_path), results, hangs).checks
    assert check["status"] == "timed_out" and check["tests"] == ["t.py::test_a"]
    (check,) = vacuous_pass_check(
        _contract(tmp_path), RunResults(nonce="n"), hangs, skip_reason=""
    ).checks
    assert check == {
        "id": "vacuous_pass",
        "status": "skipped",
        "message": "no acceptance test passed",
    }


def test_vacuous_check_runs_after_the_main_run_when_the_early_run_broke(tmp_path) -> None:
    """The early run is only a head start: when it fails (or cannot answer for a test), the
    check runs the ordinary way after the main run and reaches the same conclusion."""
    from pytest_loopcontract.verifier.results import RunResults, TestRecord
    from pytest_loopcontract.verifier.runner import PytestRun
    from pytest_loopcontract.verifier.tamper.vacuous import (
        VacuousRunner,
        spare_core,
        start_early,
        vacuous_pass_check,
    )

    calls: list[list[str]] = []

    def run(dest, ids, limit):
        calls.append(list(ids))
        if len(calls) == 1:
            raise RuntimeError("the early run broke")
        failed = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "failed", 0.1, "call")])
        return PytestRun(1, failed, "", "", 0.1, False)

    runner = VacuousRunner(
        prepare=lambda dest: None,
        run=run,
        pinned_source=lambda p: b"def test_a():\n    assert f() == 1\n",
    )
    contract = _contract(tmp_path)
    early = start_early(contract, runner, ["t.py::test_a"])
    if not spare_core():
        assert early is None  # one core: no head start, nothing to fall back from
        return
    assert early is not None
    passed = RunResults(nonce="n", tests=[TestRecord("t.py::test_a", "passed", 0.1, "call")])
    try:
        out = vacuous_pass_check(contract, passed, runner, early=early)
    finally:
        early.close()
    (check,) = out.checks
    assert calls == [["t.py::test_a"], ["t.py::test_a"]]
    assert check["status"] == "ran" and "0 still passed" in check["message"]
    assert "beside the main run" not in check["message"]
