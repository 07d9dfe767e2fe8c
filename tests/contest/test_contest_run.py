"""End-to-end contests: real git worktrees, real seat and judge subprocesses, real verification,
the real ledger; then the human gate through the real CLI."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.ledger import Ledger, verify_file
from pytest_loopcontract.contest.orchestrate import run_contest
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.contest.result_file import contest_exit_code
from pytest_loopcontract.statedir import StateDir
from testing.contest_project import make_project, read_json
from testing.repos import GIT_ENV, git, run_cli


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def contest(root: Path) -> dict[str, Any]:
    lines: list[str] = []
    result = run_contest(root, contract_path="loopcontract.yml", emit=lines.append)
    assert lines, "live progress was reported"
    errors = validate_result(result)
    assert not errors, errors
    return result


def by_seat(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["seat"]: c for c in result["candidates"]}


def ledger_kinds(root: Path, run_id: str) -> list[str]:
    with Ledger(StateDir.of(root).ledger) as ledger:
        return [row.kind for row in ledger.rows(run_id=run_id)]


def test_full_contest_matrix_bracket_then_approve_merges(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        [("a", "fa", "good", "fair"), ("b", "fb", "good2", "fair"), ("c", "fc", "wrong", "fair")],
    )
    result = contest(root)
    seats = by_seat(result)
    assert result["status"] == "awaiting_human"
    assert contest_exit_code(result) == 24
    assert seats["c"]["stage"] == "hard" and seats["c"]["verdict"] == "fail"
    assert result["winner"] in ("a", "b")
    assert {seats["a"]["stage"], seats["b"]["stage"]} == {"winner", "finalist"}
    # provenance: the seats' own reports, never estimates
    assert seats["a"]["provenance"]["tokens"] == 100
    assert seats["b"]["branch"] == "loop-contract/calc/b"
    # blind matrix: no cell of a judge on its own family, no cell for the gate failer
    matrix = result["matrix"]
    family = {s["name"]: s["family"] for s in result["seats"]}
    assert matrix["cells"], "the judges filled the matrix"
    for cell in matrix["cells"]:
        assert cell["family"] != family[cell["candidate"]]
        assert cell["candidate"] != "c"
    assert matrix["candidates"]["a"]["passed"] and matrix["candidates"]["b"]["passed"]
    # the judge packets never name a seat, a family or a branch
    judges_dir = root / ".loop-contract" / "contest" / result["run_id"] / "judges"
    packets = sorted(judges_dir.rglob("*.packet.json"))
    assert len(packets) == 3, packets  # one per judge
    for packet in packets:
        text = packet.read_text("utf-8")
        assert "judge-packet" in text
        for secret in ("loop-contract/calc/", '"fa"', '"fb"', str(root)):
            assert secret not in text
    # the ledger has the whole story and seals
    kinds = ledger_kinds(root, result["run_id"])
    for kind in ("run_started", "dispatch", "outcome", "score", "decision", "run_finished"):
        assert kind in kinds
    assert verify_file(StateDir.of(root).ledger).ok
    # the certificate matches the ledger
    key = certificate.load_or_create_key(StateDir.of(root).cert_key)
    with Ledger(StateDir.of(root).ledger) as ledger:
        assert certificate.verify(result["certificate"], key, ledger=ledger).valid
    status = read_json(root / ".loop-contract" / "contest" / result["run_id"] / "run_status.json")
    assert status["phase"] == "finished" and status["status"] == "awaiting_human"

    # the human gate: approve merges the winner and keeps the losers' branches
    winner = result["winner"]
    gate = run_cli(root, "gate", "calc", "approve", "--by", "alice")
    assert gate.returncode == 0, gate.stderr
    merged = git(root, "show", "HEAD:calc.py")
    assert merged == git(root, "show", f"loop-contract/calc/{winner}:calc.py")
    assert "Decided by alice" in git(root, "log", "-1", "--format=%B")
    assert git(root, "branch", "--list", "loop-contract/calc/c").strip()
    again = run_cli(root, "gate", "calc", "reject", "--by", "bob", "--reason", "no")
    assert again.returncode == 1 and "a decision is made once" in again.stderr
    decided = read_json(root / ".loop-contract" / "contest" / result["run_id"] / "result.json")
    assert decided["status"] == "decided" and decided["decision"]["by"] == "alice"
    assert not validate_result(decided)
    cert = run_cli(
        root, "cert", "verify", decided["certificate"], "--ledger", ".loop-contract/ledger.sqlite"
    )
    assert cert.returncode == 0 and "VALID" in cert.stdout
    report = run_cli(root, "report", "--markdown", "report.md", "--html", "report.html")
    assert report.returncode == 0, report.stderr
    assert winner in (root / "report.html").read_text("utf-8")


def test_seat_faults_are_recorded_as_distinct_outcomes(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        [
            ("ok", "f1", "good", None),
            ("hang", "f2", "hang", None),
            ("missing", "f3", "missing", None),
            ("refuse", "f4", "refuse", None),
            ("crash", "f5", "crash", None),
            ("vanish", "f6", "vanish", None),
            ("spam", "f7", "spam", None),
        ],
        attempts=1,
    )
    result = contest(root)
    seats = by_seat(result)
    assert seats["ok"]["outcome"] == "ok" and seats["ok"]["verdict"] == "pass"
    assert seats["hang"]["outcome"] == "timeout"
    assert seats["missing"]["outcome"] == "unavailable"
    assert seats["refuse"]["outcome"] == "refused"
    assert seats["crash"]["outcome"] == "error"
    assert seats["crash"]["provenance"]["exit_code"] == 3
    assert seats["vanish"]["reasons"][0]["code"] == "candidate_lost"
    assert "deleted" in seats["vanish"]["reasons"][0]["message"]
    # 50 MB of output cost nothing and the candidate still counts
    assert seats["spam"]["outcome"] == "ok" and seats["spam"]["verdict"] == "pass"
    # identical trees: verified once, reported as a group
    assert seats["spam"]["same_tree_as"] == ["ok"] and seats["ok"]["same_tree_as"] == ["spam"]
    verdicts = list((root / ".loop-contract" / "contest" / result["run_id"]).rglob("verdicts/*/*"))
    assert len(verdicts) == 1
    # two survivors and no judge can score them: nobody decides silently
    assert result["status"] == "no_winner"
    assert result["escalations"]
    for name in ("hang", "missing", "refuse", "crash", "vanish"):
        assert seats[name]["stage"] == "generation"
    dispatches = [
        row
        for row in Ledger(StateDir.of(root).ledger).rows(run_id=result["run_id"], kind="dispatch")
    ]
    assert {row.data["status"] for row in dispatches} == {
        "ok",
        "timeout",
        "unavailable",
        "refused",
        "error",
    }
    # tokens only where reported
    assert all(row.tokens is None for row in dispatches if row.seat != "ok")


def test_field_falling_at_hard_gate_retries_with_the_error_log(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("r", "fa", "retry", None), ("w", "fb", "wrong", None)])
    result = contest(root)
    assert result["attempts"] == 2
    assert result["winner"] == "r" and result["status"] == "awaiting_human"
    assert result["matrix"] is None, "a lone survivor wins without a matrix"
    prompt = (
        root / ".loop-contract" / "contest" / result["run_id"] / "seats" / "r-a2" / "prompt.md"
    ).read_text("utf-8")
    assert "Attempt 2" in prompt and "tests/test_calc.py::test_add" in prompt


def test_retry_cap_escalates(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("w", "fa", "wrong", None)], attempts=2)
    result = contest(root)
    assert result["status"] == "no_winner" and result["attempts"] == 2
    assert [e["code"] for e in result["escalations"]] == ["retry_cap"]
    events = [r.data["event"] for r in Ledger(StateDir.of(root).ledger).rows(kind="event")]
    assert "retry_cap" in events
    assert result["lessons"] and result["lessons"][0]["kind"] == "acceptance"


def test_tampering_candidate_stops_at_the_hard_gate_with_a_lesson(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("t", "fa", "tamper", None), ("g", "fb", "good", None)])
    result = contest(root)
    seats = by_seat(result)
    assert seats["t"]["stage"] == "hard" and seats["t"]["gates"]["tamper"]
    assert result["winner"] == "g"
    lesson = result["lessons"][0]
    assert lesson["kind"] == "tamper"
    routes = read_json(StateDir.of(root).routes)
    assert routes["python.calc"]["t"]["demotions"] == 1


def test_a_seat_cannot_write_into_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seat works in a checkout of its own outside the repository, in a sandbox where the
    repository is out of sight: its write into the repository lands nowhere."""
    root = make_project(tmp_path, [("o", "fa", "outside", None)])
    monkeypatch.setenv("LOOP_CONTRACT_TEST_REPO", str(root))
    result = contest(root)
    assert not (root / "stray.txt").exists()
    assert result["status"] != "stopped"
    assert by_seat(result)["o"]["verdict"] == "pass"


def test_a_seat_sees_no_sibling_no_other_history_and_no_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35, point 5: a seat that looks for the other seats' work (their checkouts, their
    branches, the repository's later history, the verifier's state folder) finds nothing."""
    root = make_project(tmp_path, [("s", "fa", "snoop", None), ("g", "fb", "good2", None)])
    base = git(root, "rev-parse", "HEAD").strip()
    # another seat's branch, with a commit the base does not have
    git(root, "checkout", "-q", "-b", "loop-contract/calc/someone-else")
    git(root, "commit", "-q", "--allow-empty", "-m", "another seat's work")
    git(root, "checkout", "-q", "-")
    window = tmp_path / "window"
    window.mkdir()
    monkeypatch.setenv("LOOP_CONTRACT_TEST_REPO", str(root))
    monkeypatch.setenv("LOOP_CONTRACT_SANDBOX_WRITABLE", str(window))
    (root / ".loop-contract").mkdir(exist_ok=True)
    result = contest(root)
    found = json.loads((window / "found-s.json").read_text("utf-8"))
    assert found["commits"] == [base]  # the base commit: no history, no other branch
    assert found["refs"] == []  # no branch of the repository, no other seat's
    assert found["siblings"] == []  # the other seat's checkout is out of sight
    # of the repository, only the seat's own prompt folder is in sight (its prompt, its
    # report): no file of the repository, the history, the baseline or the other seat
    assert found["repo"] is False
    private = [p for p in found["state"] if not p.startswith(".loop-contract/contest/")]
    assert private == [] and all("/seats/s-a1/" in p for p in found["state"]), found["state"]
    assert by_seat(result)["s"]["verdict"] == "pass"


def test_without_the_sandbox_a_write_into_the_repository_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Process isolation (no bubblewrap): the snapshot of the repository still catches it."""
    root = make_project(tmp_path, [("o", "fa", "outside", None)])
    monkeypatch.setenv("LOOP_CONTRACT_TEST_REPO", str(root))
    monkeypatch.setenv("LOOP_CONTRACT_ISOLATION", "process")
    result = contest(root)
    assert result["status"] == "stopped"
    assert "stray.txt" in result["escalations"][0]["message"]
    assert contest_exit_code(result) == 20


def test_misbehaving_judges_are_repaired_or_discarded_and_recorded(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        [
            ("a", "fa", "good", "prose-once"),
            ("b", "fb", "good2", "prose"),
            ("c", "fc", "slow-ok", "wild"),
        ],
    )
    result = contest(root)
    judges = {j["seat"]: j for j in result["matrix"]["judges"]}
    assert judges["a"]["status"] == "repaired" and judges["a"]["cells"] == 8
    assert judges["b"]["status"] == "discarded" and judges["b"]["cells"] == 0
    assert judges["c"]["discarded_cells"] == 3  # 11, -1 and the unknown label
    for cell in result["matrix"]["cells"]:
        assert 0 <= cell["score"] <= 10
    events = [
        r.data
        for r in Ledger(StateDir.of(root).ledger).rows(kind="event")
        if r.data["event"] == "judge_reply_discarded"
    ]
    assert {e["judge"] for e in events} == {"b", "c"}


def test_measured_failure_becomes_a_lesson_the_next_run_carries(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("l", "fa", "lesson", None)], measured=True, attempts=1)
    first = contest(root)
    assert first["status"] == "no_winner"
    assert by_seat(first)["l"]["stage"] == "measured"
    prompt = run_cli(root, "lessons", "--format", "prompt")
    assert prompt.returncode == 0 and "metric.calls" in prompt.stdout
    assert "observed 9" in prompt.stdout
    second = contest(root)
    assert second["winner"] == "l" and second["status"] == "awaiting_human"
    carried = (
        root / ".loop-contract" / "contest" / second["run_id"] / "seats" / "l-a1" / "prompt.md"
    ).read_text("utf-8")
    assert "metric.calls" in carried and "Lessons from earlier runs" in carried


def test_waive_only_a_measured_failure_and_it_is_the_persons(tmp_path: Path) -> None:
    root = make_project(
        tmp_path,
        [("s", "fa", "slow-ok", None), ("w", "fb", "wrong", None)],
        measured=True,
        attempts=1,
    )
    result = contest(root)
    assert result["status"] == "no_winner"
    nothing = run_cli(root, "gate", "calc", "approve", "--by", "alice")
    assert nothing.returncode == 1 and "nothing to approve" in nothing.stderr
    hard = run_cli(root, "gate", "calc", "waive", "--by", "alice", "--seat", "w")
    assert hard.returncode == 1 and "only a failure of measured gates" in hard.stderr
    waived = run_cli(root, "gate", "calc", "waive", "--by", "alice")
    assert waived.returncode == 0, waived.stderr
    assert "for _ in range(9)" in git(root, "show", "HEAD:calc.py")
    gate_events = [
        r.data
        for r in Ledger(StateDir.of(root).ledger).rows(kind="event")
        if r.data["event"] == "human_gate"
    ]
    assert gate_events == [
        {
            "event": "human_gate",
            "by": "alice",
            "decision": "waive",
            "sha": git(root, "rev-parse", "HEAD").strip(),
            "seat": "s",
            "reason": "",
            "waived": ["few-calls"],
        }
    ]


def test_reject_records_the_reason_and_the_next_attempt_carries_it(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("g", "fa", "good", None)])
    contest(root)
    no_reason = run_cli(root, "gate", "calc", "reject", "--by", "carol")
    assert no_reason.returncode == 1 and "--reason" in no_reason.stderr
    rejected = run_cli(
        root, "gate", "calc", "reject", "--by", "carol", "--reason", "keep add() pure"
    )
    assert rejected.returncode == 0, rejected.stderr
    assert git(root, "log", "-1", "--format=%s").strip() == "base"  # nothing merged
    second = contest(root)
    prompt = (
        root / ".loop-contract" / "contest" / second["run_id"] / "seats" / "g-a1" / "prompt.md"
    ).read_text("utf-8")
    assert "keep add() pure" in prompt


def test_two_contests_on_one_contract_at_once_are_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("g", "fa", "good", None)])
    assert run_cli(root, "baseline").returncode == 0
    with Ledger(StateDir.of(root).ledger) as ledger, ledger.acquire_run("calc", "other-run"):
        busy = run_cli(root, "contest", "run")
    assert busy.returncode == 2
    assert "calc" in busy.stderr and "other-run" in busy.stderr


def test_a_hand_edited_ledger_is_named_by_ledger_verify(tmp_path: Path) -> None:
    root = make_project(tmp_path, [("g", "fa", "good", None)])
    result = contest(root)
    db = sqlite3.connect(StateDir.of(root).ledger)
    db.execute("DROP TRIGGER IF EXISTS rows_no_update")
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute("UPDATE rows SET tokens = 1 WHERE seq = 3")
    db.commit()
    db.close()
    check = run_cli(root, "ledger", "verify", "--json")
    assert check.returncode == 25
    assert json.loads(check.stdout)["first_bad_seq"] == 3
    cert = run_cli(
        root, "cert", "verify", result["certificate"], "--ledger", ".loop-contract/ledger.sqlite"
    )
    assert cert.returncode == 25


def test_reported_spend_reaching_the_budget_stops_the_next_dispatch(tmp_path: Path) -> None:
    root = make_project(
        tmp_path, [("w", "fa", "wrong", None)], attempts=3, extra={"budget": {"tokens": 40}}
    )
    result = contest(root)
    assert result["status"] == "stopped" and result["attempts"] == 1
    assert "budget exhausted: 50 tokens" in result["escalations"][0]["message"]
    events = [r.data for r in Ledger(StateDir.of(root).ledger).rows(kind="event")]
    assert {"event": "budget_exhausted", "budget": "tokens", "limit": 40, "spent": 50.0} in events


def test_seats_added_after_baseline_name_the_pinned_contract(tmp_path: Path) -> None:
    """The contest reads the pinned contract: seats the file gained since say what to run."""
    root = make_project(tmp_path, [("g", "fa", "good", None)])
    with_seats = (root / "loopcontract.yml").read_text("utf-8")
    no_seats = with_seats.split("seats:\n", 1)[0] + "seats: []\n"
    (root / "loopcontract.yml").write_text(no_seats, "utf-8")
    git(root, "commit", "-q", "-am", "no seats yet")
    assert run_cli(root, "baseline").returncode == 0
    refused = run_cli(root, "contest", "run")
    assert refused.returncode == 2
    assert "pinned at baseline" in refused.stderr
    assert "add seats to the contract" in refused.stderr
    (root / "loopcontract.yml").write_text(with_seats, "utf-8")
    git(root, "commit", "-q", "-am", "a seat")
    refused = run_cli(root, "contest", "run")
    assert refused.returncode == 2
    assert "the file now lists 1 seat with a generate command" in refused.stderr
    assert "run 'loop-contract baseline'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_lessons_say_where_the_contests_lessons_are_when_the_pinned_domain_moved(
    tmp_path: Path,
) -> None:
    """The contest files a lesson under the pinned contract's domain; a later baseline adopts a
    contract without it. ``lessons`` then says where this contract's lessons are."""
    root = make_project(tmp_path, [("w", "fa", "wrong", None)], attempts=1)
    first = contest(root)
    assert first["lessons"]
    text = (root / "loopcontract.yml").read_text("utf-8")
    (root / "loopcontract.yml").write_text(text.replace("  domain: python.calc\n", ""), "utf-8")
    git(root, "commit", "-q", "-am", "the contract loses its domain")
    assert run_cli(root, "baseline").returncode == 0
    found = run_cli(root, "lessons")
    assert found.returncode == 0, found.stderr
    assert "no lessons for contract.calc" in found.stdout
    assert "sets no contest.domain" in found.stdout
    assert "filed under python.calc (1 lesson)" in found.stdout
    assert "loop-contract lessons --domain python.calc" in found.stdout
    listed = run_cli(root, "lessons", "--domain", "python.calc")
    assert "[python.calc]" in listed.stdout
    (root / "loopcontract.yml").write_text(text, "utf-8")
    again = run_cli(root, "lessons")
    assert "loopcontract.yml now files lessons under python.calc" in again.stdout
    assert "run 'loop-contract baseline'" in again.stdout


def _cert_payload(token: str) -> dict[str, Any]:
    body = token.split(".", 1)[0]
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return data


def test_judges_that_do_not_report_are_named_beside_what_the_seats_reported(
    tmp_path: Path,
) -> None:
    """Every seat reports as a candidate, no judge does: the run's total is not reported, but
    the candidates' figures show and the judges are named as the role that did not report."""
    root = make_project(tmp_path, [("a", "fa", "good", "fair"), ("b", "fb", "good2", "fair")])
    result = contest(root)
    spend = result["spend"]
    assert (spend["tokens"], spend["cost_usd"]) == ("not reported", "not reported")
    candidate = spend["by_role"]["candidate"]
    assert (candidate["tokens"], candidate["dispatches"]) == (220, 2)
    assert candidate["cost_usd"] == pytest.approx(0.0022)
    judge = spend["by_role"]["judge"]
    assert (judge["tokens"], judge["cost_usd"]) == ("not reported", "not reported")
    assert _cert_payload(result["certificate"])["totals"] == spend
    text = render_terminal(result)
    assert "spend: not reported over 4 dispatches" in text
    assert "candidate: 220 tokens, $0.0022, 2 dispatches" in text
    assert "judge: not reported, 2 dispatches" in text


def test_reported_spend_totals_in_the_certificate_and_the_terminal_report(
    tmp_path: Path,
) -> None:
    """Seats and judges report: the real `contest run` prints the spend, the certificate's
    totals are numbers that `cert verify` checks against the ledger."""
    root = make_project(
        tmp_path, [("a", "fa", "good", "fair-paid"), ("b", "fb", "good2", "fair-paid")]
    )
    assert run_cli(root, "baseline").returncode == 0
    ran = run_cli(root, "contest", "run", "--quiet")
    assert ran.returncode == 24, ran.stderr
    assert (
        "spend: 234 tokens, $0.0222 over 4 dispatches (candidate: 220 tokens, $0.0022, "
        "2 dispatches; judge: 14 tokens, $0.0200, 2 dispatches)"
    ) in ran.stdout
    (result_file,) = (root / ".loop-contract" / "contest").glob("*/result.json")
    result = read_json(result_file)
    totals = _cert_payload(result["certificate"])["totals"]
    assert totals["tokens"] == 234 and totals["cost_usd"] == pytest.approx(0.0222)
    assert totals["by_role"]["judge"] == {"tokens": 14, "cost_usd": 0.02, "dispatches": 2}
    cert = run_cli(
        root, "cert", "verify", result["certificate"], "--ledger", ".loop-contract/ledger.sqlite"
    )
    assert cert.returncode == 0 and "VALID" in cert.stdout
