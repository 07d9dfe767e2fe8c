"""One judge end to end, with real judge programs run as subprocesses on real packet files."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.judging import AskResult, JudgeOutcome, run_judge
from pytest_loopcontract.contest.matrix import score_matrix
from pytest_loopcontract.contest.matrix_model import ROWS
from pytest_loopcontract.contest.packets import CandidateView, JudgeBrief
from pytest_loopcontract.contest.replies import validate_reply

TASK = {
    "goal": "Make rolling_mean linear",
    "mode": "improve",
    "dod": [{"id": "fast", "text": "rolling_mean is O(n)"}],
}

GOOD_DIFF = "+def rolling_mean(xs, w):\n+    # GOOD: running sum\n+    return running(xs, w)\n"
WEAK_DIFF = "+def rolling_mean(xs, w):\n+    # WEAK: still quadratic\n+    return slow(xs, w)\n"

CANDIDATES = [
    CandidateView("alpha", "acme", GOOD_DIFF, {"hard": [{"id": "acceptance", "status": "pass"}]}),
    CandidateView(
        "gamma", "initech", WEAK_DIFF, {"hard": [{"id": "acceptance", "status": "pass"}]}
    ),
    # the judge's own family: must never reach the judge
    CandidateView("delta", "globex", "+# DELTA_OWN_FAMILY_MARKER\n"),
]

# A judge that reads the packet and scores what it sees: GOOD diffs high, others low.
GOOD_JUDGE = """
import json, sys
packet = json.load(open(sys.argv[1], encoding="utf-8"))
scores = []
for cand in packet["candidates"]:
    good = "GOOD" in cand["diff"]
    for row in packet["rows"]:
        scores.append({
            "candidate": cand["label"], "row": row, "score": 9 if good else 3,
            "confidence": 0.9 if good else 0.6,
            "evidence": "tests/test_rolling.py::test_linear",
            "rationale": ("running sum is linear" if good else "still quadratic") + " on " + row,
        })
print(json.dumps({"scores": scores}))
"""

# Prose first; valid JSON (fenced) once it is asked to repair.
REPAIR_JUDGE = (
    """
import json, sys
packet = json.load(open(sys.argv[1], encoding="utf-8"))
if packet["repair"] is None:
    print("Candidate A looks solid to me, B less so. Overall a good effort.")
    sys.exit(0)
"""
    + GOOD_JUDGE.replace("print(json.dumps", "print('```json');print(json.dumps")
    + "\nprint('```')\n"
)

PROSE_JUDGE = """
print("I would rather discuss the candidates in words.")
"""

HALF_JSON_JUDGE = """
import sys
sys.stdout.write('{"scores": [{"candidate": "A", "row": "evidence", "score": 7,')
"""

# Valid reply for most cells; a few are broken in the ways judges break them.
MIXED_JUDGE = """
import json, sys
packet = json.load(open(sys.argv[1], encoding="utf-8"))
labels = [c["label"] for c in packet["candidates"]]
scores = []
for label in labels:
    for row in packet["rows"]:
        scores.append({"candidate": label, "row": row, "score": 6, "confidence": 0.7,
                       "evidence": "gate:acceptance", "rationale": "fine"})
scores[0]["score"] = 11
scores[1]["score"] = -1
del scores[2]["rationale"]
scores.append({"candidate": "Q", "row": "evidence", "score": 5, "confidence": 0.5,
               "evidence": "x", "rationale": "unknown label"})
scores.append({"candidate": labels[0], "row": "style", "score": 5, "confidence": 0.5,
               "evidence": "x", "rationale": "unknown row"})
print(json.dumps({"scores": scores}))
"""

FAILING_JUDGE = """
import sys
print("partial output")
sys.exit(3)
"""

SLEEPY_JUDGE = """
import time
time.sleep(60)
"""


class Judge:
    """Runs a judge script as a real subprocess, the way the seat runner will: in a fresh empty
    temporary directory, with the packet path as its argument, under a timeout."""

    def __init__(self, tmp_path: Path, source: str | None, *, timeout: float = 60) -> None:
        self.script = tmp_path / "judge.py"
        if source is not None:
            self.script.write_text(textwrap.dedent(source), "utf-8")
        self.argv = [sys.executable, str(self.script)] if source else [str(tmp_path / "nope")]
        self.timeout = timeout
        self.packets: list[dict[str, Any]] = []
        self.replies: list[str] = []

    def __call__(self, packet_file: Path) -> AskResult:
        self.packets.append(json.loads(packet_file.read_text("utf-8")))
        with tempfile.TemporaryDirectory(prefix="judge-cwd-") as cwd:
            try:
                proc = subprocess.run(
                    [*self.argv, str(packet_file)],
                    cwd=cwd,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout,
                )
            except FileNotFoundError as exc:
                return AskResult("unavailable", None, str(exc))
            except subprocess.TimeoutExpired:
                return AskResult("timeout", None, f"killed after {self.timeout}s")
        self.replies.append(proc.stdout)
        if proc.returncode != 0:
            return AskResult("error", proc.stdout, f"exit code {proc.returncode}")
        return AskResult("ok", proc.stdout, "")


def judge(
    tmp_path: Path,
    ask: Callable[[Path], AskResult],
    *,
    seat: str = "beta",
    family: str = "globex",
    candidates: list[CandidateView] | None = None,
) -> JudgeOutcome:
    brief = JudgeBrief(
        run_id="run-42",
        judge_seat=seat,
        judge_family=family,
        task=TASK,
        candidates=CANDIDATES if candidates is None else candidates,
        identities=["loop-contract/rolling/alpha", str(tmp_path)],
        rows=ROWS,
    )
    return run_judge(brief, packet_dir=tmp_path / "packets", ask=ask)


def test_good_judge(tmp_path: Path) -> None:
    ask = Judge(tmp_path, GOOD_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "ok"
    assert outcome.note == "" and outcome.discarded_cells == ()
    assert sorted(outcome.labels.values()) == ["alpha", "gamma"]
    assert len(outcome.cells) == 8
    assert {c.seat for c in outcome.cells} == {"beta"}
    assert {c.family for c in outcome.cells} == {"globex"}
    by_seat = {(c.candidate, c.row): c.score for c in outcome.cells}
    assert all(by_seat["alpha", row] == 9.0 for row in ROWS)  # labels mapped back correctly
    assert all(by_seat["gamma", row] == 3.0 for row in ROWS)
    assert [a["status"] for a in outcome.attempts] == ["ok"]
    assert outcome.attempts[0]["error"] is None
    assert outcome.attempts[0]["reply_head"].startswith('{"scores"')
    for reply in ask.replies:
        assert validate_reply(json.loads(reply)) == []
    # the packet the judge read is on disk, and the own-family candidate is not in it
    written = (tmp_path / "packets" / "beta.packet.json").read_text("utf-8")
    assert "DELTA_OWN_FAMILY_MARKER" not in written and "delta" not in written
    assert "alpha" not in written and "acme" not in written and "globex" not in written
    assert ask.packets[0]["repair"] is None


def test_good_judges_feed_the_matrix(tmp_path: Path) -> None:
    outcomes = []
    for seat, family in (("beta", "globex"), ("epsilon", "umbrella")):
        (tmp_path / seat).mkdir()
        ask = Judge(tmp_path / seat, GOOD_JUDGE)
        outcomes.append(judge(tmp_path / seat, ask, seat=seat, family=family))
    cells = [c for o in outcomes for c in o.cells]
    result = score_matrix(
        cells,
        {"alpha": "acme", "gamma": "initech", "delta": "globex"},
        min_score=6,
        spread_threshold=3,
        dissent_threshold=3,
    )
    assert result.passed == ("alpha",)
    assert result.dropped == ()  # nobody was handed its own family's candidate
    assert result.candidates["delta"].families == ("umbrella",)


def test_prose_then_json_is_repaired(tmp_path: Path) -> None:
    ask = Judge(tmp_path, REPAIR_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "repaired"
    assert len(outcome.cells) == 8
    assert [a["attempt"] for a in outcome.attempts] == [1, 2]
    assert "no JSON document" in outcome.attempts[0]["error"]
    assert outcome.attempts[0]["reply_head"].startswith("Candidate A looks solid")
    assert outcome.attempts[1]["error"] is None
    first, second = ask.packets
    assert second["repair"]["error"] == outcome.attempts[0]["error"]
    assert second["repair"]["previous_reply"].startswith("Candidate A looks solid")
    # the repair shows the same candidates under the same labels, in the same order
    assert [c["label"] for c in first["candidates"]] == [c["label"] for c in second["candidates"]]
    assert first["candidates"] == second["candidates"]
    assert (tmp_path / "packets" / "beta.repair.json").is_file()
    for reply in ask.replies[1:]:
        assert validate_reply(json.loads(reply.strip().strip("`").removeprefix("json"))) == []


def test_prose_twice_is_discarded_and_recorded(tmp_path: Path) -> None:
    ask = Judge(tmp_path, PROSE_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "discarded"
    assert outcome.cells == ()
    assert len(ask.packets) == 2
    assert [a["status"] for a in outcome.attempts] == ["ok", "ok"]
    assert all("no JSON document" in a["error"] for a in outcome.attempts)
    assert "after one repair" in outcome.note and "no JSON document" in outcome.note
    assert sorted(outcome.labels.values()) == ["alpha", "gamma"]


def test_half_a_json_object_is_discarded(tmp_path: Path) -> None:
    ask = Judge(tmp_path, HALF_JSON_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "discarded"
    assert len(ask.packets) == 2
    assert ask.packets[1]["repair"]["previous_reply"].startswith('{"scores": [{"candidate": "A"')
    assert outcome.attempts[1]["reply_head"].startswith('{"scores"')


def test_bad_cells_are_discarded_the_rest_count(tmp_path: Path) -> None:
    ask = Judge(tmp_path, MIXED_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "ok"
    assert len(outcome.cells) == 8 - 3
    reasons = [d.reason for d in outcome.discarded_cells]
    assert len(reasons) == 5
    assert "maximum" in reasons[0]
    assert "minimum" in reasons[1]
    assert "rationale" in reasons[2]
    assert "unknown candidate label 'Q'" in reasons[3]
    assert "unknown row 'style'" in reasons[4]
    assert outcome.note == "5 cells discarded"
    assert len(ask.packets) == 1  # a bad cell is not a bad reply: no repair


def test_judge_with_no_eligible_candidates_is_not_asked(tmp_path: Path) -> None:
    def ask(packet_file: Path) -> AskResult:
        raise AssertionError("a judge with nothing to score must not be asked")

    own = [CandidateView("delta", "globex", "+x\n"), CandidateView("beta", "acme", "+y\n")]
    outcome = judge(tmp_path, ask, candidates=own)
    assert outcome.status == "no_candidates"
    assert outcome.labels == {} and outcome.attempts == ()
    assert not (tmp_path / "packets").exists()


def test_failing_judge_is_an_error_without_repair(tmp_path: Path) -> None:
    ask = Judge(tmp_path, FAILING_JUDGE)
    outcome = judge(tmp_path, ask)
    assert outcome.status == "error"
    assert outcome.note == "exit code 3"
    assert len(ask.packets) == 1
    assert outcome.attempts == ({"attempt": 1, "status": "error", "error": "exit code 3",
                                 "reply_head": "partial output\n"},)  # fmt: skip


def test_missing_judge_program_is_unavailable(tmp_path: Path) -> None:
    outcome = judge(tmp_path, Judge(tmp_path, None))
    assert outcome.status == "unavailable"
    assert outcome.cells == ()
    assert outcome.attempts[0]["reply_head"] is None


def test_sleeping_judge_times_out(tmp_path: Path) -> None:
    outcome = judge(tmp_path, Judge(tmp_path, SLEEPY_JUDGE, timeout=0.5))
    assert outcome.status == "timeout"
    assert outcome.cells == ()


def test_unreadable_reply_gets_a_repair(tmp_path: Path) -> None:
    asked: list[Path] = []

    good = Judge(tmp_path, GOOD_JUDGE)

    def ask(packet_file: Path) -> AskResult:
        asked.append(packet_file)
        if len(asked) == 1:
            return AskResult("ok", None, "reply too large (9999999 bytes)")
        return good(packet_file)

    outcome = judge(tmp_path, ask)
    assert outcome.status == "repaired"
    assert "too large" in outcome.attempts[0]["error"]
    assert json.loads(asked[1].read_text("utf-8"))["repair"]["previous_reply"] == ""


def test_secrets_in_the_reply_head_are_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"
    ask = Judge(tmp_path, f"print('my token is {token}')")
    outcome = judge(tmp_path, ask)
    assert outcome.status == "discarded"
    assert all(token not in (a["reply_head"] or "") for a in outcome.attempts)


def test_two_judges_see_different_orders_same_judge_same_order(tmp_path: Path) -> None:
    many = [CandidateView(f"seat{i}", f"fam{i}", f"+change {i}\n") for i in range(6)]
    orders = {}
    for seat in ("judge1", "judge2", "judge1"):
        ask = Judge(tmp_path, GOOD_JUDGE)
        outcome = judge(tmp_path, ask, seat=seat, family="other", candidates=many)
        assert outcome.status == "ok"
        order = list(outcome.labels.values())
        orders.setdefault(seat, order)
        assert orders[seat] == order
    assert orders["judge1"] != orders["judge2"]


@pytest.mark.parametrize("status", ["maybe", ""])
def test_unknown_statuses_are_refused(status: str) -> None:
    with pytest.raises(ValueError):
        AskResult(status)
    with pytest.raises(ValueError):
        JudgeOutcome("s", "f", status, (), (), {}, ())
