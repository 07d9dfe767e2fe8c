"""The judged review for verify, through real ``verify`` runs with a scripted reviewer seat:
a special case it names waits for a person, a general answer changes nothing, a malformed
reply is repaired once and then discarded; its answer is never a pass on its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.verifier.review import parse_review, review, review_packet
from testing.reward_project import HONEST, checks, make_project, pending, verify, write

SPECIAL = {"answer": "special_cased", "evidence": "src/calc/core.py:2 - if a == 20", "reason": "r"}
GENERAL = {"answer": "general", "evidence": "src/calc/core.py:2", "reason": "adds"}


def test_replies_are_read_strictly() -> None:
    assert parse_review(json.dumps(GENERAL)).answer == "general"  # type: ignore[union-attr]
    assert parse_review("```json\n" + json.dumps(SPECIAL) + "\n```").answer == "special_cased"  # type: ignore[union-attr]
    assert "must be one of" in str(parse_review('{"answer": "maybe"}'))
    assert (
        parse_review("I think it is fine")
        == "no JSON document found (Expecting value at line 1 column 1)"
    )


def test_one_repair_then_the_reply_is_discarded() -> None:
    asked: list[str] = []

    def ask(packet: str) -> tuple[str | None, str]:
        asked.append(packet)
        return "prose, no JSON", ""

    record, evidence = review(ask, "diff", {"t.py::test_a": "def test_a():\n    assert 1\n"})
    assert len(asked) == 2 and "could not be used" in asked[1]
    assert record["status"] == "not_run" and "discarded after one repair" in record["message"]
    assert evidence == []


def test_the_packet_holds_the_question_the_tests_and_the_diff() -> None:
    packet = review_packet("+x = 1\n", {"t.py::test_a": "def test_a():\n    pass\n"})
    assert '"answer": "general" or "special_cased"' in packet
    assert "### t.py::test_a" in packet and "+x = 1" in packet


def test_a_review_seat_must_exist(tmp_path: Path) -> None:
    text = (
        "version: 1\nid: demo\ndod:\n  - id: x\n    text: x\n    tests: [t.py::test_x]\n"
        "review: {seat: nobody}\n"
    )
    with pytest.raises(LoopContractError) as raised:
        parse_contract(text.encode(), tmp_path / "loopcontract.yml")
    assert "review.seat 'nobody' names no seat" in str(raised.value)
    assert "line 7" in str(raised.value) or ":7:" in str(raised.value)


REVIEWER = """\
import json, sys
packet = open(sys.argv[1], encoding="utf-8").read()
replies = {replies!r}
again = "could not be used" in packet
print(replies[1] if again and len(replies) > 1 else replies[0])
"""


def _project(tmp_path: Path, *replies: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    script = tmp_path / "reviewer.py"
    script.write_text(REVIEWER.format(replies=list(replies)), "utf-8")
    extra = (
        f"seats:\n  - name: reviewer\n    family: acme\n"
        f"    judge: [{json.dumps(sys.executable)}, {json.dumps(str(script))}, '{{packet_file}}']\n"
        "review: {seat: reviewer}\n"
    )
    root = make_project(tmp_path / "repo", extra=extra)
    write(root, "src/calc/core.py", HONEST)
    return root


def test_a_special_case_named_by_the_reviewer_waits_for_a_person(tmp_path: Path) -> None:
    root = _project(tmp_path, json.dumps(SPECIAL))
    code, verdict = verify(root)
    assert code == 24, verdict["reasons"]
    (message,) = pending(verdict)
    assert "the reviewer found a special case: src/calc/core.py:2 - if a == 20" in message
    assert checks(verdict)["review"]["answer"] == "special_cased"


def test_a_general_answer_changes_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path, json.dumps(GENERAL))
    code, verdict = verify(root)
    assert code == 0, verdict["reasons"]
    assert checks(verdict)["review"]["status"] == "ran"


def test_a_repaired_reply_counts_and_a_hopeless_one_is_only_recorded(tmp_path: Path) -> None:
    root = _project(tmp_path, "let me think", json.dumps(SPECIAL))
    code, verdict = verify(root)
    assert code == 24, verdict["reasons"]
    hopeless = _project(tmp_path / "second", "let me think")
    code, verdict = verify(hopeless)
    assert code == 0, verdict["reasons"]
    assert checks(verdict)["review"]["status"] == "not_run"
