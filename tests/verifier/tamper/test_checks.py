"""The static reward checks as ``verify`` runs them: an unreadable file is reported, not a crash."""

from __future__ import annotations

HEAD = "version: 1\nid: x\ndod:\n  - {id: a, text: a, tests: [t.py::test_a]}\n"


def _contract(tmp_path, tail: str = ""):
    from pytest_loopcontract.contract.model import load_contract

    path = tmp_path / "loopcontract.yml"
    path.write_text(HEAD + tail, "utf-8")
    return load_contract(path)


def test_static_checks_report_unreadable_files_instead_of_crashing(tmp_path) -> None:
    from pytest_loopcontract.verifier.tamper.checks import static_checks

    sources = {"src/a.py": b"\xff\xfe not utf-8", "src/b.py": b"import gc\ngc.get_objects()\n"}
    out = static_checks(
        contract=_contract(tmp_path),
        changed_lines={
            "src/a.py": frozenset({1}),
            "src/b.py": frozenset({2}),
            "x.txt": frozenset(),
        },
        candidate_source=sources.get,
        baseline_source=lambda p: None,
        skip_path=lambda p: False,
        acceptance=[],
    )
    assert out.findings == []
    assert [(m.pattern_id, m.path) for m in out.evidence] == [
        ("reward_rules_not_run", "src/a.py"),
        ("gc_scan", "src/b.py"),
    ]
    (check,) = out.checks
    assert check["status"] == "ran" and "could not parse src/a.py" in check["message"]
