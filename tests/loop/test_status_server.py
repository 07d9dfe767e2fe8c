"""The live status page: a real ``loop-contract status --serve`` in a subprocess (and one
in-process server, to count the page's own refreshes), read with urllib and with headless
Chromium, over a real baselined repository whose history holds hostile text, a pending
checkpoint, a barrier, spend against the caps, a torn last line or 10,000 records.

Chromium missing: skipped unless ``LOOP_CONTRACT_REQUIRE_CHROMIUM=1`` (see testing/chromium).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.cli.commands.status import collect_status
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.status.server import make_server
from testing.chromium import count_colours, require_chromium, run_chromium
from testing.loop_project import STATE, make_repo
from testing.repos import git

HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
BANNER = (0xC6, 0x28, 0x28)
LEVEL_COLOURS = {"ok": (0x2E, 0x7D, 0x32), "warn": (0xF9, 0xA8, 0x25), "over": (0x6A, 0x1B, 0x9A)}
BUDGET = "{iterations: 4, usd: 1.0, tokens: 100000, minutes: 600}"


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


def busy_history(repo: Path) -> History:
    """A loop three iterations in, over its dollar cap, waiting on a person and parked."""
    history = History(repo / STATE)
    history.append("loop_started", {"command": ["agent"], "budget": {"iterations": 4, "usd": 1.0}})
    for n in (1, 2, 3):
        history.append("iteration", {"n": n, "verdict": "fail", "exit_code": 20})
    history.append("spend", {"tokens": 50000, "usd": 1.2, "seat": "agent"})
    history.append(
        "checkpoint_raised",
        {"id": "cp-0123abcd", "kind": "command", "subject": "git push", "message": HOSTILE},
    )
    history.append("barrier_set", {"id": "w1", "on": "pid", "pid": 1, "reason": "the build"})
    return history


def write_verdict(repo: Path) -> None:
    """A last verdict with one failing hard gate and one failing measured gate."""
    verdict = {
        "verdict": "fail",
        "exit_code": 20,
        "trust": "isolated",
        "reasons": [{"code": "gate_failed", "message": "acceptance failed"}],
        "timing": {"finished": "2026-12-01T10:00:00Z"},
        "dod": [{"id": "unicode", "status": "failing"}],
        "gates": {
            "hard": [
                {"id": "acceptance", "status": "fail"},
                {"id": "no-regressions", "status": "pass"},
            ],
            "measured": [
                {"id": "coverage", "status": "fail", "metric": "coverage", "observed": 71.5,
                 "op": ">=", "threshold": 90, "unit": "%"},
            ],
        },
    }  # fmt: skip
    (repo / STATE / "verdict.json").write_text(json.dumps(verdict), "utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, budget=BUDGET)


class Served:
    """``loop-contract status --serve --port 0`` in a subprocess; ``url`` once it listens."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_loopcontract", "status", "--serve", "--port", "0"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, line + self.proc.stderr.read() if self.proc.stderr else line
        self.url = found.group()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture
def served(repo: Path) -> Iterator[Served]:
    server = Served(repo)
    yield server
    server.stop()


def get(
    url: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_status_json_is_the_status_document_with_bars(repo: Path, served: Served) -> None:
    git(repo, "config", "user.name", "Ada Lovelace")  # the name the resolve commands carry
    busy_history(repo)
    write_verdict(repo)
    code, headers, body = get(served.url + "status.json")
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    doc = json.loads(body)
    cli = subprocess.run(
        [sys.executable, "-m", "pytest_loopcontract", "status", "--json"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    expected = json.loads(cli)
    for key in ("contract", "items", "checkpoints_pending", "last_verdict", "history"):
        assert doc[key] == expected[key], key  # one status computation
    levels = {b["name"]: b["level"] for b in doc["page"]["bars"]}
    assert levels == {"iterations": "warn", "minutes": "ok", "tokens": "ok", "usd": "over"}
    [cp] = doc["checkpoints_pending"]
    assert cp["message"] == HOSTILE
    assert cp["resolve"] == 'loop-contract checkpoint resolve cp-0123abcd --by "Ada Lovelace"'
    assert cp["deny"] == cp["resolve"] + " --deny"  # both runnable as shown
    assert [g["id"] for g in doc["last_verdict"]["failing_gates"]] == ["acceptance", "coverage"]
    assert [b["id"] for b in doc["parked"]["barriers"]] == ["w1"]


def test_no_route_changes_anything(repo: Path, served: Served) -> None:
    history = busy_history(repo)
    before = history.path.read_bytes()
    for path in ("", "status.json", "status.js", "status.css"):
        code, headers, _ = get(served.url + path)
        assert code == 200, path
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        for path in ("", "status.json"):
            code, headers, _ = get(served.url + path, method)
            assert (code, headers.get("Allow")) == (405, "GET, HEAD"), (method, path)
    assert get(served.url + "nothing-here")[0] == 404
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    assert get(served.url, host=f"attacker.example:{port}")[0] == 421  # DNS rebinding
    assert history.path.read_bytes() == before


def dump_dom(chromium: str, tmp_path: Path, url: str, budget_ms: int = 4000) -> str:
    proc = run_chromium(chromium, tmp_path, f"--virtual-time-budget={budget_ms}", "--dump-dom", url)
    return proc.stdout


def test_chromium_draws_the_banner_and_the_bars(
    chromium: str, repo: Path, served: Served, tmp_path: Path
) -> None:
    git(repo, "config", "user.name", "Ada Lovelace")
    busy_history(repo)
    write_verdict(repo)
    shot = tmp_path / "status.png"
    run_chromium(
        chromium, tmp_path, "--virtual-time-budget=4000", "--window-size=1200,1100",
        f"--screenshot={shot}", served.url,
    )  # fmt: skip
    counts = count_colours(shot, {"banner": BANNER, **LEVEL_COLOURS})
    assert counts["banner"] > 20_000, counts  # a wide red band, not a stray pixel
    assert counts["warn"] > 1000 and counts["over"] > 1000 and counts["ok"] > 1000, counts
    dom = dump_dom(chromium, tmp_path, served.url)
    assert 'id="checkpoint-banner"' in dom
    approve = 'loop-contract checkpoint resolve cp-0123abcd --by "Ada Lovelace"'
    assert f"approve: </span><code>{approve}</code>" in dom
    assert f"refuse: </span><code>{approve} --deny</code>" in dom
    assert 'data-level="over"' in dom and 'data-level="warn"' in dom
    assert "acceptance" in dom and "coverage 71.5 &gt;= 90" in dom
    assert "Parked w1: waiting for process 1 to exit - the build" in dom
    # the hostile message is text: escaped in the DOM, no element made from it
    assert '&lt;img src=x onerror="alert(1)"&gt;&lt;script&gt;alert(2)&lt;/script&gt;' in dom
    assert "<img" not in dom and "alert(2)</script>" not in dom


def test_a_stopped_loop_is_drawn_with_its_reason_once(
    chromium: str, repo: Path, served: Served, tmp_path: Path
) -> None:
    """The page's loop line is the one ``status`` prints (before: "stopped, stopped: budget")."""
    history = History(repo / STATE)
    history.append("loop_started", {"command": ["agent"]})
    history.append("stop", {"reason": "budget", "exit_code": 21, "decision": "stop"})
    dom = dump_dom(chromium, tmp_path, served.url)
    assert re.search(r'id="loop-state"[^>]*>loop: stopped \(budget, exit 21\)<', dom), dom
    assert "stopped, stopped" not in dom


def test_without_a_pending_checkpoint_there_is_no_banner(
    chromium: str, repo: Path, served: Served, tmp_path: Path
) -> None:
    History(repo / STATE).append("loop_started", {"command": ["agent"]})
    shot = tmp_path / "quiet.png"
    run_chromium(
        chromium, tmp_path, "--virtual-time-budget=4000", "--window-size=1200,900",
        f"--screenshot={shot}", served.url,
    )  # fmt: skip
    assert count_colours(shot, {"banner": BANNER})["banner"] == 0
    assert 'id="checkpoint-banner"' not in dump_dom(chromium, tmp_path, served.url)


def test_a_torn_history_is_shown_and_left_as_it_is(
    chromium: str, repo: Path, served: Served, tmp_path: Path
) -> None:
    history = busy_history(repo)
    with history.path.open("ab") as fh:
        fh.write(b'{"seq": 8, "kind": "spend", "data": {"tok')  # a crash mid-append
    before = history.path.read_bytes()
    code, _, body = get(served.url + "status.json")
    assert code == 200
    doc = json.loads(body)
    assert doc["history"]["records"] == 7
    assert any("torn" in p or "cut short" in p for p in doc["history"]["problems"]), doc["history"]
    dom = dump_dom(chromium, tmp_path, served.url)
    assert 'id="checkpoint-banner"' in dom and "7 records" in dom
    assert history.path.read_bytes() == before  # the page repairs nothing


def test_a_long_history_is_served_whole(
    chromium: str, repo: Path, served: Served, tmp_path: Path
) -> None:
    history = History(repo / STATE, fsync=False)
    history.append("loop_started", {"command": ["agent"]})
    with history.transaction() as tx:
        for _ in range(9_999):
            tx.append("spend", {"tokens": 1, "usd": 0.0001, "seat": "agent"})
    started = time.monotonic()
    code, _, body = get(served.url + "status.json")
    took = time.monotonic() - started
    assert code == 200, body[:500]
    doc = json.loads(body)
    assert doc["history"]["records"] == 10_000
    assert doc["budget"]["tokens"]["used"] == 9_999
    assert took < 30, took  # a generous bound: the page polls this every two seconds
    assert "10000 records" in dump_dom(chromium, tmp_path, served.url)


def test_the_page_refreshes_by_itself(chromium: str, repo: Path, tmp_path: Path) -> None:
    calls: list[float] = []

    def collect() -> dict[str, Any]:
        calls.append(time.monotonic())
        return collect_status(repo)

    cwd = os.getcwd()
    os.chdir(repo)
    try:
        server = make_server(collect)
    finally:
        os.chdir(cwd)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        dump_dom(chromium, tmp_path, url, budget_ms=7000)
    finally:
        server.shutdown()
        server.server_close()
    assert len(calls) >= 3, calls  # the first load and at least two timed refreshes
