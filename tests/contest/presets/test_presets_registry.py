"""A contract names a preset (``agent:``) instead of an argv: the loader checks it with
file/line/field errors, and the seat gets the preset's family and argv unless the contract
overrides them (a hand-written argv wins for its role; the preset still reads the output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopcontract.contest.presets import PRESETS, preset
from pytest_loopcontract.contest.seat_model import expand_argv, seats_from_contract
from pytest_loopcontract.contract.model import parse_contract
from pytest_loopcontract.errors import ContractError

HEAD = "version: 1\nid: calc\ngoal: add numbers\nseats:\n"


def load(seats: str) -> list:  # type: ignore[type-arg]
    contract = parse_contract((HEAD + seats).encode(), Path("loopcontract.yml"))
    return seats_from_contract(contract)


def error(seats: str) -> str:
    with pytest.raises(ContractError) as info:
        load(seats)
    return str(info.value)


def test_the_issue_shape_needs_nothing_but_name_and_agent() -> None:
    claude, codex, gemini = load(
        "  - {name: claude, agent: claude-code}\n"
        "  - {name: codex, agent: codex}\n"
        "  - {name: gemini, agent: gemini}\n"
    )
    assert (claude.family, codex.family, gemini.family) == ("anthropic", "openai", "google")
    assert claude.agent == "claude-code" and claude.generate == PRESETS["claude-code"].generate
    assert codex.judge == PRESETS["codex"].judge


def test_unknown_preset_names_file_line_field_and_the_near_miss() -> None:
    text = error("  - {name: a, agent: claude}\n  - {name: b, agent: codx}\n")
    assert text.startswith("loopcontract.yml:5:")
    assert "seats[0].agent" in text and "claude-code" in text


def test_a_preset_for_any_vendor_needs_the_family() -> None:
    text = error("  - {name: a, agent: aider}\n")
    assert "loopcontract.yml:5:" in text and "seats[0].family" in text and "aider" in text
    assert load("  - {name: a, agent: aider, family: anthropic}\n")[0].family == "anthropic"


def test_generic_needs_an_argv_and_a_family() -> None:
    assert "seats[0].generate" in error("  - {name: g, agent: generic, family: x}\n")
    assert "seats[0].family" in error("  - {name: g, agent: generic, generate: [my-agent]}\n")
    seat = load(
        "  - {name: g, agent: generic, family: x, generate: [my-agent, '{prompt_file}']}\n"
    )[0]
    assert seat.generate == ("my-agent", "{prompt_file}") and seat.judge is None


def test_a_seat_without_a_preset_still_needs_its_family() -> None:
    assert "seats[0].family" in error("  - {name: s, generate: [x]}\n")


def test_hand_written_argv_overrides_that_role_only() -> None:
    seat = load(
        "  - name: c\n    agent: claude-code\n    family: anthropic-eu\n"
        "    generate: [claude, -p, 'do {prompt_file}', --output-format, json, --model, opus]\n"
    )[0]
    assert seat.generate is not None and seat.generate[-2:] == ("--model", "opus")
    assert seat.judge == PRESETS["claude-code"].judge
    assert seat.family == "anthropic-eu" and seat.agent == "claude-code"


def test_preset_argv_expands_the_file_placeholders() -> None:
    argv = expand_argv(
        preset("gemini").generate or (), {"prompt_file": "/p/prompt.md", "prompt_dir": "/p"}
    )
    assert argv[0] == "gemini" and "/p" in argv
    assert any("/p/prompt.md" in a for a in argv)
