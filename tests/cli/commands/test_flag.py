"""The honest way out (issue 35, point 7): an agent that finds the task impossible as specified
says so with ``loop-contract flag`` instead of cheating; the loop parks for a person (exit 24),
the person's answer reaches the next prompt, and every prompt tells the agent the way exists.
Real loop runs, a real agent process, the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_loopcontract.contest.seat_model import apply_report, read_report
from pytest_loopcontract.history import History
from testing.loop_project import STATE, make_repo, write_agent
from testing.repos import git, run_cli

FLAGGER = """
prompt = Path(sys.argv[1]).read_text()
turn = turn_of(prompt)
Path(os.environ["SEEN"], f"prompt-{turn}.md").write_text(prompt)
if turn == 1:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", "flag",
         "--reason", "test_unicode expects 'cafe' but the goal says keep accents",
         "--evidence", "tests/test_slug.py::test_unicode"],
        capture_output=True, text=True,
    )
    Path(os.environ["SEEN"], "flag.out").write_text(f"{done.returncode}\\n{done.stdout}")
else:
    fix()
"""


def test_a_flag_parks_the_loop_for_a_person_and_a_denial_sends_the_agent_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, budget="{iterations: 4}")
    git(repo, "config", "user.name", "Ada Lovelace")  # the name the printed commands carry
    seen = tmp_path / "seen"
    seen.mkdir()
    agent = write_agent(tmp_path, "flagger", FLAGGER)
    monkeypatch.setenv("SEEN", str(seen))  # where the agent leaves what it saw
    first = run_cli(repo, "loop", "--", sys.executable, str(agent), "{prompt_file}")
    assert first.returncode == 24, first.stdout + first.stderr
    code, printed = (seen / "flag.out").read_text().split("\n", 1)
    assert code == "24" and "flagged: cp-" in printed
    prompt = (seen / "prompt-1.md").read_text()
    assert "loop-contract flag --reason" in prompt  # the way out, offered up front
    listed = run_cli(repo, "checkpoint", "list", "--json").json()
    (flag,) = [cp for cp in listed if cp["kind"] == "flag"]
    assert "test_unicode expects 'cafe'" in flag["message"]
    assert flag["evidence"] == ["tests/test_slug.py::test_unicode"]
    stop = [r.data for r in History(repo / STATE).read().records if r.kind == "stop"][-1]
    assert stop["reason"] == "checkpoint" and stop["decision"] == "await_human"
    assert flag["id"] in stop["message"] and "test_unicode expects" in stop["message"]
    approve = f'loop-contract checkpoint resolve {flag["id"]} --by "Ada Lovelace"'
    assert f"'{approve}'" in stop["message"] and f"'{approve} --deny'" in stop["message"]
    assert f"'{approve}'" in printed and f"'{approve} --deny'" in printed  # no placeholder
    # a person disagrees: the agent is told so, keeps working, and finishes honestly
    denied = run_cli(repo, "checkpoint", "resolve", flag["id"], "--by", "alice", "--deny")
    assert denied.returncode == 0, denied.stderr
    again = run_cli(repo, "loop", "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    second = (seen / "prompt-2.md").read_text()
    assert f"{flag['id']}: alice disagreed with your flag" in second
    assert "keep working" in second


def test_flag_needs_a_reason(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    empty = run_cli(repo, "flag", "--reason", "  ")
    assert empty.returncode != 0 and "needs --reason TEXT" in empty.stderr


def test_a_seat_report_flag_is_its_outcome_and_its_prompt_offers_it(tmp_path: Path) -> None:
    from pytest_loopcontract.contest.prompting import contest_prompt
    from pytest_loopcontract.contest.seat_model import SeatRun
    from pytest_loopcontract.contract.model import load_contract

    report = tmp_path / "report.json"
    report.write_text('{"flag": "the acceptance test contradicts the goal", "tokens": 12}')
    run = SeatRun(seat="s", family="f", role="candidate", status="ok", command=("x",),
                  exit_code=0, seconds=1.0)  # fmt: skip
    flagged = apply_report(run, read_report(report))
    assert flagged.status == "flagged" and flagged.tokens == 12
    assert flagged.reason == "flagged: the acceptance test contradicts the goal"
    report.write_text('{"flag": 3}')
    assert apply_report(run, read_report(report)).status == "ok"  # a bad field is a note
    repo = make_repo(tmp_path / "c")
    prompt = contest_prompt(load_contract(repo / "loopcontract.yml"), attempt=1)
    assert '{"flag": "WHY"}' in prompt and "$LOOP_CONTRACT_REPORT" in prompt
