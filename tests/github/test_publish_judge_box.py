"""A judge in the publish job runs in a sandbox (issue 32, point 5).

The publish job holds the write token; a judge is a program reading candidates' diffs (text a
candidate wrote: prompt injection's way in). Its environment is clean, but the job's other
processes and the runner's files are not. Unconfined, the judge reads them; in its box, nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopcontract.contest.seat_model import seats_from_contract
from pytest_loopcontract.contest.seats import run_seat
from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.github.publish import judge_box
from testing.contest_project import make_project

LOOK = r"""
import json, os, pathlib, sys
secret, window = sys.argv[1], pathlib.Path(sys.argv[2])
found = []
for proc in pathlib.Path("/proc").iterdir():
    try:
        if proc.name.isdigit() and secret.encode() in (proc / "environ").read_bytes():
            found.append("process " + proc.name)
    except OSError:
        pass
for planted in pathlib.Path(os.environ["PLANTED"]).rglob("*"):
    try:
        if planted.is_file() and secret.encode() in planted.read_bytes():
            found.append(str(planted))
    except OSError:
        pass
(window / "found.json").write_text(json.dumps(found))
print(json.dumps({"scores": []}))
"""


@pytest.mark.parametrize("confined", [False, True])
def test_a_judge_in_publish_reaches_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confined: bool
) -> None:
    secret = "ghs_publish_write_token_0123456789"
    window = tmp_path / "window"
    window.mkdir()
    (window / "look.py").write_text(LOOK, "utf-8")
    temp, workspace = tmp_path / "runner-temp", tmp_path / "workspace"
    for folder, name in ((temp, "event.json"), (workspace, ".git/config")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"token: {secret}")
    judge = [sys.executable, str(window / "look.py"), secret, str(window), "{packet_file}"]
    seat = {"name": "j", "family": "f", "scripted": True, "timeout": 60, "judge": judge}
    extra: dict[str, object] = {"seats": [seat]}
    if not confined:
        extra["github"] = {"require_sandbox": False}
        monkeypatch.setenv("LOOP_CONTRACT_ISOLATION", "process")
    root = make_project(tmp_path, [], extra=extra)
    contract = load_contract(root / "loopcontract.yml")
    (judge_seat,) = [s for s in seats_from_contract(contract) if s.name == "j"]
    for key, value in {"RUNNER_TEMP": str(temp), "GITHUB_WORKSPACE": str(workspace),
                       "PLANTED": str(tmp_path), "LOOP_CONTRACT_SANDBOX_WRITABLE": str(window),
                       }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    packet = tmp_path / "private" / "packet.json"
    packet.parent.mkdir()
    packet.write_text("{}")
    # the job's own process with the token (the runner's worker, the publish step)
    holder = subprocess.Popen(["sleep", "60"], env={"GITHUB_TOKEN": secret})
    try:
        run = run_seat(
            judge_seat,
            "judge",
            cwd=tmp_path / "private",
            values={"packet_file": str(packet)},
            report_file=tmp_path / "private" / "report.json",
            confinement=judge_box(contract, judge_seat),
        )
    finally:
        holder.kill()
        holder.wait()
    assert run.status == "ok", (run.reason, run.stderr_tail)
    found = json.loads((window / "found.json").read_text("utf-8"))
    if confined:
        assert found == []
    else:  # as it was
        assert f"process {holder.pid}" in found
        assert str(temp / "event.json") in found
        assert str(workspace / ".git" / "config") in found
