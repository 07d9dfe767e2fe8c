"""Each preset reads its CLI's documented output (tests/data/presets, sources in its README):
tokens and cost as printed, and refusal, auth failure and rate limit as distinct outcomes.

The cheats: a reader that guesses an outcome from any text (a good run that merely talks about
HTTP 429 stays ok), or that estimates tokens (no usage printed -> None)."""

from __future__ import annotations

import json

import pytest

from pytest_loopcontract.contest.presets import NAMES, PRESETS, preset
from pytest_loopcontract.contest.presets.model import Output, Reading
from testing.agent_standins import DATA
from testing.repos import ROOT


def data(cli: str, name: str) -> str:
    return next((DATA / cli).glob(f"{name}.*")).read_text("utf-8")


def read(
    name: str, stdout: str | None, *, status: str = "ok", code: int = 0, err: str = ""
) -> Reading:
    return preset(name).read(Output(status, code, stdout, err))


def test_claude_code_success_tokens_and_cost_from_the_result_object() -> None:
    reading = read("claude-code", data("claude", "success"))
    assert reading.outcome is None
    assert reading.tokens == 1203 + 4021 + 15635 + 612
    assert reading.cost_usd == pytest.approx(0.0421825)
    assert reading.reply == "I implemented calc.add and ran the tests: they pass."


@pytest.mark.parametrize(
    ("name", "outcome"),
    [("auth", "auth_failed"), ("rate_limit", "rate_limited"), ("refusal", "refused")],
)
def test_claude_code_failures_are_distinct(name: str, outcome: str) -> None:
    status = "ok" if name == "refusal" else "error"
    reading = read("claude-code", data("claude", name), status=status, code=1)
    assert reading.outcome == outcome
    assert reading.reason.startswith(outcome.replace("_", " "))


def test_claude_code_other_error_keeps_the_runner_status_with_a_note() -> None:
    doc = json.loads(data("claude", "auth"))
    doc["result"] = "Something unexpected happened"
    reading = read("claude-code", json.dumps(doc), status="error", code=1)
    assert reading.outcome is None
    assert "Something unexpected happened" in reading.notes[0]


def test_claude_code_good_run_talking_about_429_stays_ok() -> None:
    doc = json.loads(data("claude", "success"))
    doc["result"] = "Added retry on HTTP 429 and a re-login on 401 Unauthorized."
    assert read("claude-code", json.dumps(doc)).outcome is None


def test_claude_code_stream_json_last_result_line_counts() -> None:
    result = json.loads(data("claude", "success"))
    stream = '{"type":"system","subtype":"init"}\n' + json.dumps(result) + "\n"
    assert read("claude-code", stream).tokens == 1203 + 4021 + 15635 + 612


def test_codex_tokens_from_turn_completed_and_no_cost() -> None:
    reading = read("codex", data("codex", "success"))
    assert reading.outcome is None
    assert reading.tokens == 24763 + 122
    assert reading.cost_usd is None
    assert reading.reply == "Yep \u2014 there\u2019s a `README.md` in the repository root."


@pytest.mark.parametrize(
    ("name", "outcome"), [("auth", "auth_failed"), ("rate_limit", "rate_limited")]
)
def test_codex_failures_are_distinct(name: str, outcome: str) -> None:
    reading = read("codex", data("codex", name), status="error", code=1)
    assert reading.outcome == outcome
    assert reading.tokens is None


def test_codex_prose_refusal_is_not_guessed() -> None:
    # Codex documents no refusal marker: the report file says so, not the agent's prose.
    reading = read("codex", data("codex", "refusal"))
    assert reading.outcome is None and reading.tokens == 3129


def test_gemini_tokens_summed_over_models() -> None:
    reading = read("gemini", data("gemini", "success"))
    assert reading.tokens == 25113 + 9033
    assert reading.cost_usd is None
    assert reading.reply == "The capital of France is Paris."


def test_gemini_failures_are_distinct() -> None:
    auth = read("gemini", data("gemini", "auth"), status="error", code=41)
    limited = read("gemini", data("gemini", "rate_limit"), status="error", code=1)
    assert (auth.outcome, limited.outcome) == ("auth_failed", "rate_limited")
    assert limited.tokens == 0


def test_gemini_exit_41_without_json_is_an_auth_failure() -> None:
    reading = read("gemini", "", status="error", code=41, err="Auth method not configured")
    assert reading.outcome == "auth_failed"
    assert read("gemini", "", status="error", code=1, err="boom").outcome is None


def test_aider_usage_lines_summed_and_last_session_cost() -> None:
    reading = read("aider", data("aider", "success"))
    assert reading.outcome is None
    assert reading.tokens == 4200 + 212 + 5100 + 87
    assert reading.cost_usd == pytest.approx(0.03)


@pytest.mark.parametrize(
    ("name", "outcome"),
    [("auth", "auth_failed"), ("rate_limit", "rate_limited"), ("refusal", "refused")],
)
def test_aider_failures_are_distinct(name: str, outcome: str) -> None:
    assert read("aider", data("aider", name)).outcome == outcome


def test_aider_rate_limit_that_a_finished_exchange_followed_is_not_an_outcome() -> None:
    retried = data("aider", "rate_limit") + "\nTokens: 1.2k sent, 40 received.\n"
    reading = read("aider", retried)
    assert reading.outcome is None and reading.tokens == 1240 and reading.cost_usd is None


def test_generic_reads_only_a_failed_runs_stderr() -> None:
    err = "Error: 429 Too Many Requests"
    assert read("generic", "", status="error", code=2, err=err).outcome == "rate_limited"
    assert read("generic", "", status="error", code=2, err="HTTP 401").outcome == "auth_failed"
    assert read("generic", "", status="ok", code=0, err=err).outcome is None
    assert read("generic", "tokens: 5", status="ok").tokens is None


def test_no_usage_printed_means_no_tokens() -> None:
    for name in ("claude-code", "codex", "gemini", "aider"):
        assert read(name, "all done").tokens is None, name


def test_every_preset_names_its_format_and_the_schema_lists_exactly_the_presets() -> None:
    schema = json.loads(
        (ROOT / "pytest_loopcontract" / "schemas" / "contract.schema.json").read_text("utf-8")
    )
    assert tuple(schema["$defs"]["seat"]["properties"]["agent"]["enum"]) == NAMES
    for name, chosen in PRESETS.items():
        assert chosen.name == name and chosen.source
        if name != "generic":
            assert "http" in chosen.source and chosen.generate and chosen.judge
            assert any("{prompt_file}" in a for a in chosen.generate)
            assert any("{packet_file}" in a for a in chosen.judge)
