"""The seat model: argv templates filled without a shell, the contract's seats, and how a
seat's report folds into a run record (no process is started here)."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.contest.seat_model import (
    Seat,
    SeatReport,
    SeatRun,
    apply_report,
    expand_argv,
    seats_from_contract,
)
from pytest_loopcontract.contract.model import parse_contract


def test_expand_argv_replaces_known_placeholders_anywhere_and_only_those() -> None:
    values = {"prompt_file": "/p q/prompt.md", "workdir": "/w", "report_file": "/r.json"}
    argv = ["tool", "{prompt_file}", "--prompt={prompt_file}", "{workdir}/x", "{other}", "{}"]
    assert expand_argv(argv, values) == [
        "tool",
        "/p q/prompt.md",
        "--prompt=/p q/prompt.md",
        "/w/x",
        "{other}",
        "{}",
    ]
    # no value: left alone; a value containing a placeholder is not expanded again
    assert expand_argv(["{packet_file}"], {}) == ["{packet_file}"]
    assert expand_argv(["{workdir}"], {"workdir": "{report_file}", "report_file": "x"}) == [
        "{report_file}"
    ]


def test_seats_from_contract(tmp_path: Path) -> None:
    text = (
        "version: 1\nid: demo\n"
        "dod:\n  - id: x\n    text: x\n    tests: [test_x.py::test_x]\n"
        "seats:\n"
        "  - name: alpha\n    family: acme\n    generate: [python, a.py, '{prompt_file}']\n"
        "    judge: [python, j.py, '{packet_file}']\n    timeout: 5\n    scripted: true\n"
        "  - name: beta\n    family: globex\n    judge: [beta-cli]\n"
    )
    contract = parse_contract(text.encode(), tmp_path / "loopcontract.yml")
    assert seats_from_contract(contract) == [
        Seat("alpha", "acme", ("python", "a.py", "{prompt_file}"),
             ("python", "j.py", "{packet_file}"), 5.0, True),
        Seat("beta", "globex", None, ("beta-cli",), 900.0, False),
    ]  # fmt: skip


def test_apply_report_keeps_a_timeout_a_timeout() -> None:
    timed_out = SeatRun("a", "f", "candidate", "timeout", ("x",), None, 5.0, reason="timed out")
    report = SeatReport(tokens=3, refused=True, reason="no")
    folded = apply_report(timed_out, report)
    assert (folded.status, folded.reason, folded.tokens) == ("timeout", "timed out", 3)
    assert "timed out first" in folded.notes[-1]
