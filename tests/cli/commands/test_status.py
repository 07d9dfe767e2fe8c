"""``loop-contract status`` after the loop stopped (issue 34, item 7): the loop's time stands
still at its stop record, in the text, in ``--json`` and on the live page's data, and the loop's
line says why it stopped once (before: the minutes went on growing after the stop, 0.2 then
0.23, 0.56, 0.9, and the line read ``loop: stopped, stopped: budget``).

A real loop with the scripted agent that spends its dollar budget; the elapsed time reported is
compared with the one the history's own records give, read again well after the stop."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from pytest_loopcontract.cli.commands.status import collect_status
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record
from pytest_loopcontract.loop.status.server import make_server
from testing.loop_project import STATE, make_repo
from testing.repos import ROOT, run_cli

SCRIPTED = ROOT / "examples" / "agents" / "scripted_agent.py"
AFTER_STOP = 2.0  # seconds between the stop and the first read: 0.033 min, past the rounding


def _only(records: list[Record], kind: str) -> Record:
    [record] = [r for r in records if r.kind == kind]
    return record


def _stopped_minutes(repo: Path) -> tuple[float, Record]:
    """The run's minutes from its ``loop_started`` record to its ``stop`` record (one boot's
    monotonic clock, as the history writes it), and the stop record."""
    records = History(repo / STATE).read().records
    start, stop = _only(records, "loop_started"), _only(records, "stop")
    assert start.mono is not None and stop.mono is not None and start.boot == stop.boot
    return (stop.mono - start.mono) / 60, stop


def _served(repo: Path) -> dict[str, Any]:
    """``/status.json`` from a real server over ``collect_status``, as the live page reads it."""
    server = make_server(lambda: collect_status(repo))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/status.json"
        with urllib.request.urlopen(url, timeout=30) as answer:
            doc: dict[str, Any] = json.loads(answer.read())
            return doc
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def test_a_stopped_loops_time_stands_still_and_its_line_reads_naturally(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, budget="{iterations: 4, usd: 1.0, minutes: 60}")
    agent = [sys.executable, str(SCRIPTED), "spender", "{prompt_file}"]
    ran = run_cli(repo, "loop", "--", *agent)
    assert ran.returncode == 21, ran.stdout + ran.stderr
    minutes, stop = _stopped_minutes(repo)
    assert stop.data["reason"] == "budget"
    # Let the clock run well past the stop before reading (the history's mono is the
    # system-wide monotonic clock, so this is measured from the stop record itself).
    assert stop.mono is not None
    time.sleep(max(0.0, AFTER_STOP - (time.monotonic() - stop.mono)))
    frozen = round(minutes, 2)

    first = run_cli(repo, "status", "--json")
    assert first.returncode == 0, first.stderr
    doc = first.json()
    assert doc["loop"]["status"] == "stopped"
    assert doc["budget"]["minutes"]["used"] == frozen, (doc["budget"]["minutes"], minutes)
    assert doc["loop"]["stopped"]["ts"] == stop.ts

    text = run_cli(repo, "status")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "loop: stopped (budget, exit 21)" in lines, text.stdout
    assert not any("stopped, stopped" in line for line in lines), text.stdout
    [minutes_line] = [line for line in lines if line.strip().startswith("minutes")]
    assert minutes_line.endswith(f" {frozen:g}/60"), minutes_line

    page = _served(repo)
    assert page["budget"]["minutes"]["used"] == frozen
    assert page["page"]["loop"] == "loop: stopped (budget, exit 21)"
    [bar] = [b for b in page["page"]["bars"] if b["name"] == "minutes"]
    assert bar["text"] == f"{frozen:.1f} of 60 min"

    # read again, later still: the same figure
    again = run_cli(repo, "status", "--json").json()
    assert again["budget"]["minutes"]["used"] == frozen
    assert _served(repo)["budget"]["minutes"]["used"] == frozen
