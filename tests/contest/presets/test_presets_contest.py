"""A real ``contest run`` with preset seats: stand-in ``claude`` and ``codex`` on PATH print
their documented shapes; the ledger, the result and the certificate carry the tokens and cost
the CLIs printed, and the failures are their own outcome kinds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.orchestrate import run_contest
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.statedir import StateDir
from testing.agent_standins import install_standins
from testing.contest_project import make_project
from testing.repos import GIT_ENV

CLAUDE_TOKENS = 1203 + 4021 + 15635 + 612
CLAUDE_COST = 0.0421825
CODEX_TOKENS = 24763 + 122


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    folder = install_standins(tmp_path / "bin", ("claude", "codex", "aider"))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")


def contest(tmp_path: Path, seats: list[dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    for seat in seats:
        seat.setdefault("timeout", 30)
    root = make_project(tmp_path, [], attempts=1, extra={"seats": seats})
    result = run_contest(root, contract_path="loopcontract.yml", emit=lambda line: None)
    assert not validate_result(result), validate_result(result)
    return root, result


def dispatches(root: Path, run_id: str) -> list[Any]:
    with Ledger(StateDir.of(root).ledger) as ledger:
        return list(ledger.rows(run_id=run_id, kind="dispatch"))


def test_two_preset_seats_contest_with_the_clis_own_tokens_and_cost(tmp_path: Path) -> None:
    root, result = contest(
        tmp_path, [{"name": "claude", "agent": "claude-code"}, {"name": "codex", "agent": "codex"}]
    )
    seats = {c["seat"]: c for c in result["candidates"]}
    assert {s["family"] for s in result["seats"]} == {"anthropic", "openai"}
    assert seats["claude"]["outcome"] == "ok" and seats["claude"]["verdict"] == "pass"
    assert seats["codex"]["outcome"] == "ok" and seats["codex"]["verdict"] == "pass"
    assert seats["claude"]["provenance"]["tokens"] == CLAUDE_TOKENS
    assert seats["claude"]["provenance"]["cost_usd"] == pytest.approx(CLAUDE_COST)
    assert seats["codex"]["provenance"]["tokens"] == CODEX_TOKENS
    assert seats["codex"]["provenance"]["cost_usd"] is None  # codex prints no cost
    # each judged the other's candidate through its own CLI's envelope
    assert result["matrix"]["cells"], "the judges' replies were read out of the envelopes"
    assert result["status"] == "awaiting_human" and result["winner"] in ("claude", "codex")
    rows = dispatches(root, result["run_id"])
    by_role = {(row.seat, row.data["role"]): row for row in rows}
    assert by_role[("claude", "candidate")].tokens == CLAUDE_TOKENS
    assert by_role[("claude", "candidate")].cost_usd == pytest.approx(CLAUDE_COST)
    assert by_role[("claude", "judge")].tokens == CLAUDE_TOKENS
    assert by_role[("codex", "judge")].tokens == CODEX_TOKENS
    assert by_role[("codex", "candidate")].cost_usd is None
    key = certificate.load_or_create_key(StateDir.of(root).cert_key)
    with Ledger(StateDir.of(root).ledger) as ledger:
        check = certificate.verify(result["certificate"], key, ledger=ledger)
    assert check.valid and check.payload is not None, check.reason
    totals = check.payload["totals"]
    assert totals["tokens"] == 2 * CLAUDE_TOKENS + 2 * CODEX_TOKENS
    assert totals["cost_usd"] == "not reported"  # one seat's CLI prints no cost: no guess


def test_preset_failures_are_recorded_as_their_own_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPCONTRACT_STANDIN_CLAUDE", "auth")
    monkeypatch.setenv("LOOPCONTRACT_STANDIN_CODEX", "rate_limit")
    monkeypatch.setenv("LOOPCONTRACT_STANDIN_AIDER", "refusal")
    root, result = contest(
        tmp_path,
        [
            {"name": "claude", "agent": "claude-code"},
            {"name": "codex", "agent": "codex"},
            {"name": "aider", "agent": "aider", "family": "mistral"},
            {"name": "gemini", "agent": "gemini"},
        ],
    )
    seats = {c["seat"]: c for c in result["candidates"]}
    assert seats["claude"]["outcome"] == "auth_failed"
    assert seats["codex"]["outcome"] == "rate_limited"
    assert seats["aider"]["outcome"] == "refused"
    assert seats["gemini"]["outcome"] == "unavailable"
    assert seats["claude"]["reasons"][0]["code"] == "seat_auth_failed"
    assert "Invalid API key" in seats["claude"]["reasons"][0]["message"]
    assert "429" in seats["codex"]["reasons"][0]["message"]
    statuses = {row.seat: row.data["status"] for row in dispatches(root, result["run_id"])}
    assert statuses == {
        "claude": "auth_failed",
        "codex": "rate_limited",
        "aider": "refused",
        "gemini": "unavailable",
    }
    assert result["status"] == "no_winner"
