"""The presets on the seat-adapter hook, through the real seat runner: real subprocesses of
stand-in CLIs on PATH that print the documented shapes (testing/agent_standins.py)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_loopcontract import hookspecs
from pytest_loopcontract.contest.presets import PRESETS
from pytest_loopcontract.contest.seat_model import Seat, SeatRun
from pytest_loopcontract.contest.seats import run_seat
from pytest_loopcontract.hooks import plugin_manager
from testing.agent_standins import install_standins


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = install_standins(tmp_path / "bin", ("claude", "codex", "aider"))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def seat(agent: str) -> Seat:
    chosen = PRESETS[agent]
    return Seat(
        name=agent.split("-")[0],
        family=chosen.family or "somebody",
        generate=chosen.generate,
        judge=chosen.judge,
        timeout=30,
        agent=agent,
    )


def generate(tmp_path: Path, agent: str) -> SeatRun:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Implement calc.add.\n", "utf-8")
    return run_seat(
        seat(agent),
        "candidate",
        cwd=work,
        values={"prompt_file": str(prompt), "workdir": str(work)},
        report_file=tmp_path / "report.json",
    )


@pytest.mark.usefixtures("standins")
def test_claude_success_records_tokens_and_cost_and_edits(tmp_path: Path) -> None:
    run = generate(tmp_path, "claude-code")
    assert run.status == "ok"
    assert run.tokens == 1203 + 4021 + 15635 + 612
    assert run.cost_usd == pytest.approx(0.0421825)
    assert (tmp_path / "work" / "calc.py").exists()


@pytest.mark.parametrize(
    ("agent", "cli", "mode", "outcome"),
    [
        ("claude-code", "claude", "auth", "auth_failed"),
        ("claude-code", "claude", "rate_limit", "rate_limited"),
        ("claude-code", "claude", "refusal", "refused"),
        ("codex", "codex", "auth", "auth_failed"),
        ("codex", "codex", "rate_limit", "rate_limited"),
        ("codex", "codex", "refusal", "refused"),
        ("aider", "aider", "rate_limit", "rate_limited"),
        ("aider", "aider", "refusal", "refused"),
    ],
)
@pytest.mark.usefixtures("standins")
def test_failures_are_distinct_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, cli: str, mode: str, outcome: str
) -> None:
    monkeypatch.setenv(f"LOOPCONTRACT_STANDIN_{cli.upper()}", mode)
    run = generate(tmp_path, agent)
    assert run.status == outcome, run.reason
    assert not (tmp_path / "work" / "calc.py").exists()


@pytest.mark.usefixtures("standins")
def test_missing_binary_is_unavailable_and_names_the_preset(tmp_path: Path) -> None:
    run = generate(tmp_path, "gemini")  # no gemini stand-in on PATH
    assert run.status == "unavailable"
    assert "'gemini' not found on PATH" in run.reason
    assert any("gemini preset" in note for note in run.notes)


@pytest.mark.usefixtures("standins")
def test_judge_reply_is_taken_out_of_the_envelope(tmp_path: Path) -> None:
    packet = tmp_path / "judge.packet.json"
    packet.write_text(
        json.dumps(
            {
                "rows": ["evidence"],
                "candidates": [
                    {"label": "A", "gates": {"hard": [{"status": "pass"}], "measured": []}}
                ],
            }
        ),
        "utf-8",
    )
    for agent in ("claude-code", "codex"):
        run = run_seat(
            seat(agent),
            "judge",
            cwd=tmp_path,
            values={"packet_file": str(packet)},
            report_file=tmp_path / f"{agent}.json",
        )
        assert run.status == "ok", run.reason
        assert run.reply is not None and json.loads(run.reply)["scores"][0]["candidate"] == "A"
        assert run.stdout_text != run.reply  # the raw envelope is still what was kept
        assert run.tokens is not None


def test_a_seat_without_agent_is_left_to_the_report_file(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, os\n"
        "print(json.dumps({'type': 'result', 'is_error': True, 'result': 'Invalid API key'}))\n"
        "open(os.environ['LOOP_CONTRACT_REPORT'], 'w').write(json.dumps({'tokens': 7}))\n",
        "utf-8",
    )
    plain = Seat(name="p", family="f", generate=(sys.executable, str(script)), timeout=30)
    run = run_seat(plain, "candidate", cwd=tmp_path, values={}, report_file=tmp_path / "r.json")
    assert run.status == "ok" and run.tokens == 7 and run.reply is None


class _Override:
    """A third-party adapter, registered after the built-ins the way an entry point is."""

    @hookspecs.hookimpl
    def loopcontract_seat_result(self, seat: Seat, run: SeatRun) -> SeatRun | None:
        return replace(run, tokens=1) if seat.agent == "claude-code" else None


@pytest.mark.usefixtures("standins")
def test_a_plugin_registered_later_is_asked_before_the_preset(tmp_path: Path) -> None:
    manager = plugin_manager()
    manager.register(_Override(), "override")
    try:
        assert generate(tmp_path, "claude-code").tokens == 1
        assert generate(tmp_path, "codex").tokens == 24763 + 122  # it answered None: preset
    finally:
        manager.unregister(name="override")
    assert generate(tmp_path, "claude-code").tokens == 1203 + 4021 + 15635 + 612


def test_a_cli_other_than_the_proven_release_is_noted(tmp_path: Path) -> None:
    """The preset names the release it was proven on; a different one gets a note on the run
    (its flags and output may have moved), the proven one none."""
    from pytest_loopcontract.contest.presets.adapter import version_note

    chosen = PRESETS["codex"]
    assert chosen.proven == "0.171.0"
    for name, said in (("codex-old", "codex-cli 0.160.0"), ("codex-same", "codex-cli 0.171.0")):
        program = tmp_path / name
        program.write_text(f"#!/bin/sh\necho '{said}'\n", "utf-8")
        program.chmod(0o755)
    note = version_note(chosen, str(tmp_path / "codex-old"))
    assert note is not None and "proven on release 0.171.0" in note and "0.160.0" in note
    assert version_note(chosen, str(tmp_path / "codex-same")) is None
    assert version_note(PRESETS["generic"], "anything") is None
