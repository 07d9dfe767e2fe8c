"""A contest of three seats that run the real agent CLIs (Claude Code, Codex, Gemini CLI, the
pinned releases), each against its own scripted model server, to the human gate: each writes
its candidate with its own tools inside the seat's sandbox, the candidates are verified, each
CLI judges the other two blind (the scripted model reads the packet it was given and scores
it), and the result's spend names the tokens each CLI printed.

The project lives under ``/var/tmp``, not ``/tmp``: Codex refuses to set up its own sandbox's
helper when its home is under the temporary folder, and a seat's home is in the run folder."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.orchestrate import run_contest
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.statedir import StateDir
from testing.agent_clis import CLAUDE_CODE, codex_home, gemini_home, require_cli
from testing.contest_project import GOOD_CALC, make_project
from testing.model_servers import (
    AnthropicServer,
    Block,
    GeminiServer,
    ResponsesServer,
    ScriptedServer,
    text,
    tool,
)
from testing.repos import GIT_ENV

PACKET = re.compile(r"judging packet in the file (/[^\s\"\\]+)")
WORKSPACE = re.compile(r"Workspace Directories:\*\*\\n  - (/[^\\\s\"]+)")


def judge_reply(packet_file: Path) -> str:
    """Scores for every candidate and row of the packet: high when its hard gates passed."""
    packet = json.loads(packet_file.read_text("utf-8"))
    scores = []
    for cand in packet["candidates"]:
        ok = all(g["status"] == "pass" for g in cand["gates"]["hard"])
        for row in packet["rows"]:
            why = "the hard gates " + ("pass" if ok else "fail")
            scores.append({"candidate": cand["label"], "row": row, "score": 8 if ok else 3,
                           "confidence": 0.8, "evidence": "tests/test_calc.py::test_add",
                           "rationale": why})  # fmt: skip
    return json.dumps({"scores": scores})


def responder(write: Any) -> Any:
    """A model that writes calc.py with the block ``write`` gives for the request, then says
    it is done; asked to judge, it scores the packet it was given."""

    def respond(body: Mapping[str, Any], index: int) -> Sequence[Block]:
        said = json.dumps(body)
        found = PACKET.search(said)
        if found:
            return [text(judge_reply(Path(found.group(1))))]
        if index > 0:  # the write's result came back (each server plays one seat)
            return [text("calc.add is implemented.")]
        return [write(said)]

    return respond


def gemini_write(said: str) -> Block:
    """Gemini CLI's file tools take absolute paths: the workspace is in its session context."""
    found = WORKSPACE.search(said)
    assert found, said[:2000]
    return tool("write_file", file_path=f"{found.group(1)}/calc.py", content=GOOD_CALC)


@pytest.fixture
def base() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="loopcontract-real-contest-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_three_real_clis_contest_to_the_human_gate(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli(CLAUDE_CODE)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    write_calc = f"printf '{GOOD_CALC.encode('unicode_escape').decode()}' > calc.py"
    claude_write = tool("Write", file_path="calc.py", content=GOOD_CALC)
    codex_write = tool("exec_command", cmd=write_calc)
    servers: list[ScriptedServer] = [
        AnthropicServer(responder(lambda said: claude_write), usage=(1000, 100)),
        ResponsesServer(responder(lambda said: codex_write), usage=(2000, 200)),
        GeminiServer(responder(gemini_write), usage=(3000, 300)),
    ]
    for server in servers:
        server.__enter__()
    try:
        claude, codex, gemini = servers
        env = {
            "ANTHROPIC_BASE_URL": claude.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **codex_home(base / "codex", codex.base_url),
            **gemini_home(base / "home", gemini.base_url),
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        seats = [
            {"name": "claude", "agent": "claude-code", "timeout": 240},
            {"name": "codex", "agent": "codex", "timeout": 240},
            {"name": "gemini", "agent": "gemini", "timeout": 240},
        ]
        root = make_project(base, [], attempts=1, extra={"seats": seats})
        result = run_contest(root, contract_path="loopcontract.yml", emit=print)
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    assert not validate_result(result), validate_result(result)
    cands = {c["seat"]: c for c in result["candidates"]}
    for name in ("claude", "codex", "gemini"):
        assert cands[name]["outcome"] == "ok", (name, cands[name])
        assert cands[name]["verdict"] == "pass", (
            name,
            cands[name]["reasons"],
            cands[name].get("changed"),
        )
    assert result["status"] == "awaiting_human" and result["winner"] in cands
    judged = {cell["judge"] for cell in result["matrix"]["cells"]}
    assert judged == {"claude", "codex", "gemini"}  # every CLI judged, through its envelope
    with Ledger(StateDir.of(root).ledger) as ledger:
        rows = list(ledger.rows(run_id=result["run_id"], kind="dispatch"))
    candidate_tokens = {r.seat: r.tokens for r in rows if r.data["role"] == "candidate"}
    assert all(candidate_tokens[name] for name in cands), candidate_tokens  # what each printed
    assert (candidate_tokens["claude"] or 1) % 1100 == 0  # every turn: what was scripted
    assert (candidate_tokens["codex"] or 1) % 2200 == 0
    cost = {r.seat: r.cost_usd for r in rows if r.data["role"] == "candidate"}
    assert cost["claude"] and cost["codex"] is None and cost["gemini"] is None
    (spend,) = [line for line in render_terminal(result).splitlines() if "spend:" in line]
    total = sum(r.tokens or 0 for r in rows)
    assert f"{total} tokens, cost not reported over 6 dispatches" in spend, spend
    print(spend)
