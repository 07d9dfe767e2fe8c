"""The one reason type (pytest_loopcontract/reason.py): its document shape, and that the
verdict, the checkpoints and the validity matrix all use it rather than copies of it."""

from __future__ import annotations

from pytest_loopcontract import verdict
from pytest_loopcontract.contest import matrix_model
from pytest_loopcontract.reason import Reason


def test_a_reason_is_its_code_and_message_in_a_document() -> None:
    reason = Reason("timeout", "the test run exceeded its 5s timeout and was killed")
    assert reason.to_json() == {
        "code": "timeout",
        "message": "the test run exceeded its 5s timeout and was killed",
    }


def test_the_verdict_and_the_matrix_share_the_one_reason() -> None:
    """A second copy of the type would drift (a field, a shape) without anyone noticing."""
    assert verdict.Reason is Reason
    assert matrix_model.Reason is Reason


def test_the_verdict_lists_its_reasons_in_the_reasons_shape() -> None:
    """The reasons the verdict writes are each reason's document, which its schema accepts."""
    waiting = Reason("checkpoint_pending", "cp-1: pushing to main needs a person")
    broken = Reason("timeout", "the test run exceeded its 5s timeout and was killed")
    document = verdict.build_verdict(
        contract={"path": "loopcontract.yml", "id": "demo", "sha256": "0" * 64},
        trust="isolated",
        nonce="n",
        dod=[],
        hard=[],
        measured=[],
        findings=[],
        errors=[broken],
        tests=[],
        baseline={"fail_to_pass": [], "pass_to_pass": []},
        environment={"commit": "c", "dirty": False, "python": "3", "pytest": "8"},
        timing={},
        tool_version="0",
        checkpoints=[waiting],
    )
    assert document["reasons"] == [waiting.to_json(), broken.to_json()]
    assert all(set(r) == {"code", "message"} for r in document["reasons"])
    verdict.validate_verdict(document)
