"""The contract's ``tamper`` section: each mistake named with its line, and the section read
into the contract."""

from __future__ import annotations

import pytest

HEAD = "version: 1\nid: x\ndod:\n  - {id: a, text: a, tests: [t.py::test_a]}\n"


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (
            "tamper:\n  allow:\n    - {rule: frame_introspektion, paths: [src/a.py]}\n",
            "7:14: tamper.allow[0].rule: expected one of",
        ),
        ("tamper:\n  allow:\n    - {rule: gc_scan}\n", "tamper.allow[0].paths: missing required"),
        (
            "tamper:\n  allow:\n    - {rule: gc_scan, paths: []}\n",
            "7:30: tamper.allow[0].paths: must not be an empty list",
        ),
        ("tamper:\n  twins: {enabled: 1}\n", "6:20: tamper.twins.enabled: expected true or false"),
        ("tamper:\n  alow: []\n", "6:3: tamper.alow: unknown key 'alow'; did you mean 'allow'?"),
    ],
)
def test_tamper_section_errors_name_the_line(tail: str, message: str) -> None:
    from pytest_loopcontract.contract.schema import validate_document
    from pytest_loopcontract.errors import ContractError

    with pytest.raises(ContractError) as caught:
        validate_document((HEAD + tail).encode(), "loopcontract.yml")
    assert message in str(caught.value)
    if "frame_introspektion" in tail:
        assert "did you mean 'frame_introspection'?" in str(caught.value)


def test_tamper_section_is_read_into_the_contract(tmp_path) -> None:
    from pytest_loopcontract.contract.model import load_contract

    path = tmp_path / "loopcontract.yml"
    path.write_text(
        HEAD + "tamper:\n  allow:\n    - {rule: gc_scan, paths: ['src/dbg/**']}\n"
        "  twins: {enabled: false}\n",
        "utf-8",
    )
    tamper = load_contract(path).tamper
    assert tamper.allows("gc_scan", "src/dbg/x.py")
    assert not tamper.allows("gc_scan", "src/x.py") and not tamper.allows(
        "frame_locals", "src/dbg/x.py"
    )
    assert tamper.twins_enabled is False
