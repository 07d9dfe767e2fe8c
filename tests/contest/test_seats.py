"""Seats: real seat programs (small Python scripts) run as real subprocesses."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_loopcontract import hooks
from pytest_loopcontract.contest import seats as seats_mod
from pytest_loopcontract.contest.seat_model import (
    KEEP_BYTES,
    Seat,
    SeatReport,
    SeatRun,
    read_report,
)
from pytest_loopcontract.contest.seats import run_seat
from pytest_loopcontract.hookspecs import hookimpl


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), "utf-8")
    return str(path)


def seat_for(path: str, *args: str, timeout: float = 60, judge: bool = False) -> Seat:
    argv = (sys.executable, path, *args)
    return Seat(
        name="alpha",
        family="acme",
        generate=None if judge else argv,
        judge=argv if judge else None,
        timeout=timeout,
        scripted=True,
    )


def run(seat: Seat, tmp_path: Path, role: str = "candidate", **values: str) -> tuple[SeatRun, Path]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    report = tmp_path / "private" / "report.json"
    result = run_seat(seat, role, cwd=work, values=values, report_file=report)
    return result, report


def process_gone(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it (it runs no code any more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pid: int, patience: float = 20.0) -> bool:
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        if process_gone(pid):
            return True
        time.sleep(0.05)
    return process_gone(pid)


# --- argv -------------------------------------------------------------------------------------


def test_a_role_without_a_command_is_the_callers_mistake(tmp_path: Path) -> None:
    seat = Seat("beta", "globex", judge=("x",))
    with pytest.raises(ValueError, match="no 'generate' command"):
        run_seat(seat, "candidate", cwd=tmp_path, values={}, report_file=tmp_path / "r")
    with pytest.raises(ValueError, match="unknown seat role"):
        run_seat(seat, "author", cwd=tmp_path, values={}, report_file=tmp_path / "r")


# --- outcomes ---------------------------------------------------------------------------------

ECHO = """
    import json, os, sys
    print(json.dumps({
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("LOOP_CONTRACT_", "EXTRA"))},
        "git_dir": os.environ.get("GIT_DIR"),
        "stdin": sys.stdin.read(),
    }))
"""


def test_ok_run_with_placeholders_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/somewhere/else/.git")  # never leaks into a seat
    for key in [k for k in os.environ if k.startswith("LOOP_CONTRACT_")]:
        monkeypatch.delenv(key)  # CI's own settings (LOOP_CONTRACT_REQUIRE_*) are not the seat's
    path = script(tmp_path, "echo.py", ECHO)
    seat = seat_for(path, "{prompt_file}", "--in={workdir}", "{report_file}", "{unknown}")
    work = tmp_path / "work"
    work.mkdir()
    report = tmp_path / "private" / "report.json"
    result = run_seat(
        seat,
        "candidate",
        cwd=work,
        values={"prompt_file": str(tmp_path / "prompt.md"), "workdir": str(work)},
        report_file=report,
        env_extra={"EXTRA_ONE": "1"},
    )
    assert (result.status, result.exit_code, result.reason) == ("ok", 0, "")
    assert (result.seat, result.family, result.role) == ("alpha", "acme", "candidate")
    expected_args = [str(tmp_path / "prompt.md"), f"--in={work}", str(report), "{unknown}"]
    assert list(result.command) == [sys.executable, path, *expected_args]
    assert result.stdout_text is not None
    seen = json.loads(result.stdout_text)
    assert seen["argv"] == expected_args
    assert Path(seen["cwd"]).resolve() == work.resolve()
    assert seen["env"] == {
        "LOOP_CONTRACT_REPORT": str(report),
        "LOOP_CONTRACT_ROLE": "candidate",
        "LOOP_CONTRACT_SEAT": "alpha",
        "EXTRA_ONE": "1",
    }
    assert seen["git_dir"] is None
    assert seen["stdin"] == ""  # /dev/null
    assert (result.tokens, result.cost_usd, result.notes) == (None, None, ())
    assert result.stdout_bytes == len(result.stdout_text.encode())
    assert result.seconds >= 0
    assert result.provenance()["command"] == list(result.command)


def test_report_with_tokens_and_cost_is_recorded(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import json, os
        with open(os.environ["LOOP_CONTRACT_REPORT"], "w") as fh:
            json.dump({"tokens": 1200, "cost_usd": 0.02, "refused": False}, fh)
        """,
    )
    result, _ = run(seat_for(path), tmp_path)
    assert (result.status, result.tokens, result.cost_usd, result.notes) == ("ok", 1200, 0.02, ())


def test_a_stale_report_from_an_earlier_run_does_not_count(tmp_path: Path) -> None:
    path = script(tmp_path, "quiet.py", "pass\n")
    report = tmp_path / "private" / "report.json"
    report.parent.mkdir()
    report.write_text(json.dumps({"tokens": 5, "refused": True}))
    result, _ = run(seat_for(path), tmp_path)
    assert (result.status, result.tokens) == ("ok", None)


def test_a_report_that_is_not_json_is_ignored_with_a_note(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import sys
        open(sys.argv[1], "w").write("tokens: lots")
        """,
    )
    result, _ = run(seat_for(path, "{report_file}"), tmp_path)
    assert (result.status, result.tokens, result.cost_usd) == ("ok", None, None)
    assert result.notes == ("report file ignored: not JSON",)


def test_bad_report_fields_are_ignored_one_by_one(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import sys
        # NaN is what json.dumps writes for float("nan"): valid to Python, not a cost
        open(sys.argv[1], "w").write(
            '{"tokens": -3, "cost_usd": NaN, "refused": "yes", "reason": 7, "extra": 1}'
        )
        """,
    )
    result, _ = run(seat_for(path, "{report_file}"), tmp_path)
    assert (result.status, result.tokens, result.cost_usd) == ("ok", None, None)
    assert len(result.notes) == 4
    assert all(note.startswith("report field ") for note in result.notes)
    joined = " ".join(result.notes)
    for key in ("'tokens'", "'cost_usd'", "'refused'", "'reason'"):
        assert key in joined
    # the good fields of a partly bad report still count
    partial = tmp_path / "partial.json"
    partial.write_text('{"tokens": true, "cost_usd": 1.5}')
    report = read_report(partial)
    assert (report.tokens, report.cost_usd, len(report.notes)) == (None, 1.5, 1)


def test_reports_that_are_not_regular_files_are_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_report(fifo).notes == ("report file ignored: not a regular file",)
    secret = tmp_path / "secret.json"
    secret.write_text('{"tokens": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(secret)
    assert read_report(link).notes == ("report file ignored: it is a symbolic link",)
    assert read_report(tmp_path / "missing.json") == SeatReport()
    listing = tmp_path / "list.json"
    listing.write_text("[1, 2]")
    assert read_report(listing).notes == ("report file ignored: not a JSON object",)


def test_refusal_via_report_outranks_a_failing_exit(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import json, os, sys
        with open(os.environ["LOOP_CONTRACT_REPORT"], "w") as fh:
            json.dump({"refused": True, "reason": "not allowed\\nto bill", "tokens": 9}, fh)
        sys.exit(int(sys.argv[1]))
        """,
    )
    for code in ("0", "4"):
        result, _ = run(seat_for(path, code), tmp_path)
        assert result.status == "refused"
        assert result.reason == "refused: not allowed to bill"
        assert result.exit_code == int(code)
        assert result.tokens == 9


def test_non_zero_exit_is_an_error(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import sys
        print("half done")
        print("boom", file=sys.stderr)
        sys.exit(3)
        """,
    )
    result, _ = run(seat_for(path), tmp_path)
    assert (result.status, result.exit_code, result.reason) == ("error", 3, "exited 3")
    assert result.stderr_tail == "boom\n"
    assert result.stdout_head == "half done\n"


def test_death_by_signal_is_an_error(tmp_path: Path) -> None:
    path = script(tmp_path, "seat.py", "import os, signal\nos.kill(os.getpid(), signal.SIGABRT)\n")
    result, _ = run(seat_for(path), tmp_path)
    assert (result.status, result.exit_code) == ("error", None)
    assert result.reason == "killed by signal 6 (SIGABRT)"


SLEEPER = """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(sys.argv[1] + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
"""

GRANDPARENT = """
    import os, signal, subprocess, sys, time
    sleeper, pidfile, mode = sys.argv[1:]
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, sleeper, pidfile])
    while not os.path.exists(pidfile):
        time.sleep(0.01)
    print("grandchild started", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("mode", ["ignore-term", "obey-term"])
def test_timeout_kills_the_whole_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(seats_mod, "KILL_GRACE_SECONDS", 0.5)
    path = script(tmp_path, "seat.py", GRANDPARENT)
    sleeper = script(tmp_path, "sleeper.py", SLEEPER)
    pidfile = tmp_path / "grandchild.pid"
    result, _ = run(seat_for(path, sleeper, str(pidfile), mode, timeout=4), tmp_path)
    assert result.status == "timeout"
    assert result.reason == "timed out after 4s; process group killed"
    assert pidfile.exists(), "the grandchild never started: the machine is too slow for 4s"
    assert result.stdout_head == "grandchild started\n"
    assert wait_gone(int(pidfile.read_text()))


def test_helpers_left_running_after_a_normal_exit_are_killed(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "seat.py",
        """
        import os, subprocess, sys, time
        sleeper, pidfile = sys.argv[1:]
        subprocess.Popen(
            [sys.executable, sleeper, pidfile],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not os.path.exists(pidfile):
            time.sleep(0.01)
        """,
    )
    sleeper = script(tmp_path, "sleeper.py", SLEEPER)
    pidfile = tmp_path / "helper.pid"
    result, _ = run(seat_for(path, sleeper, str(pidfile)), tmp_path)
    assert result.status == "ok"
    assert wait_gone(int(pidfile.read_text()))


def test_missing_or_unrunnable_programs_are_unavailable(tmp_path: Path) -> None:
    missing = Seat("ghost", "none", generate=("loop-contract-no-such-agent-cli", "{workdir}"))
    result, _ = run(missing, tmp_path, workdir="/w")
    assert result.status == "unavailable"
    assert result.reason == "program 'loop-contract-no-such-agent-cli' not found on PATH"
    assert result.exit_code is None
    assert result.command == ("loop-contract-no-such-agent-cli", "/w")

    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\necho hi\n")
    plain.chmod(0o644)
    result, _ = run(Seat("p", "f", generate=(str(plain),)), tmp_path)
    assert (result.status, result.reason) == (
        "unavailable",
        f"program {str(plain)!r} is not executable",
    )

    result, _ = run(Seat("r", "f", generate=("./bin/agent",)), tmp_path)
    assert (result.status, result.reason) == ("unavailable", "program './bin/agent' not found")

    broken = tmp_path / "broken.sh"
    broken.write_text("#!/loop-contract/no/such/interpreter\n")
    broken.chmod(0o755)
    result, _ = run(Seat("b", "f", generate=(str(broken),)), tmp_path)
    assert result.status == "unavailable"
    assert result.reason.startswith(f"cannot start {str(broken)!r}")


def test_fifty_megabytes_of_output_cost_no_memory(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "loud.py",
        """
        import sys
        out = sys.stdout.buffer
        out.write(b"BEGIN\\n")
        block = b"x" * 1023 + b"\\n"
        for _ in range(50 * 1024):
            out.write(block)
        out.write(b"END\\n")
        sys.stderr.buffer.write(b"e" * (1 << 20) + b"LAST\\n")
        """,
    )
    tracemalloc.start()
    try:
        result, _ = run(seat_for(path), tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status == "ok"
    assert result.stdout_bytes == 6 + 50 * (1 << 20) + 4
    assert result.stdout_text is None
    assert result.stdout_head.startswith("BEGIN\nxxx")
    assert len(result.stdout_head) == KEEP_BYTES
    assert result.stdout_tail.endswith("xxx\nEND\n")
    assert len(result.stdout_tail) == KEEP_BYTES
    assert result.stderr_tail.endswith("eeeLAST\n")
    assert len(result.stderr_tail) == KEEP_BYTES
    assert peak < 8 * (1 << 20), f"kept {peak} bytes for 50 MB of output"


def test_judge_stdout_is_kept_whole_when_small(tmp_path: Path) -> None:
    reply = {"scores": [{"candidate": "A", "row": "evidence", "score": 7, "rationale": "é ✓"}]}
    path = script(
        tmp_path,
        "judge.py",
        f"""
        import json, os, sys
        packet = json.load(open(sys.argv[1]))
        assert os.environ["LOOP_CONTRACT_ROLE"] == "judge"
        assert os.listdir(".") == []
        sys.stdout.write(json.dumps({reply!r}, ensure_ascii=False))
        """,
    )
    packet = tmp_path / "packet.json"
    packet.write_text(json.dumps({"kind": "loop-contract.judge-packet"}))
    seat = seat_for(path, "{packet_file}", judge=True)
    result, _ = run(seat, tmp_path, role="judge", packet_file=str(packet))
    assert (result.status, result.role) == ("ok", "judge")
    assert result.stdout_text is not None
    assert json.loads(result.stdout_text) == reply
    assert result.stdout_tail == ""


def test_stdout_a_little_over_the_head_keeps_the_rest_in_the_tail(tmp_path: Path) -> None:
    path = script(tmp_path, "seat.py", "import sys\nsys.stdout.write('a' * 65536 + 'b' * 10)\n")
    result, _ = run(seat_for(path), tmp_path)
    assert result.stdout_bytes == KEEP_BYTES + 10
    assert result.stdout_text is None
    assert (result.stdout_head, result.stdout_tail) == ("a" * KEEP_BYTES, "b" * 10)


# --- the seat adapter hook --------------------------------------------------------------------


class QuotaAdapter:
    """An adapter for an imaginary CLI that says 'QUOTA' on stderr when it declines, and prints
    its token count on stdout."""

    @hookimpl
    def loopcontract_seat_result(self, seat: Seat, run: SeatRun) -> SeatRun | None:
        if seat.family != "quota-cli":
            return None
        if "QUOTA" in run.stderr_tail:
            return replace(run, status="refused", reason="refused: out of quota")
        tokens = int(run.stdout_head.split("tokens=")[1]) if "tokens=" in run.stdout_head else None
        return replace(run, tokens=tokens)


def test_a_plugin_reclassifies_a_run(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "cli.py",
        """
        import sys
        if sys.argv[1] == "decline":
            print("QUOTA exceeded", file=sys.stderr)
            sys.exit(1)
        print("tokens=321")
        """,
    )
    pm = hooks.plugin_manager()
    adapter = QuotaAdapter()
    pm.register(adapter)
    try:
        declined, _ = run(replace(seat_for(path, "decline"), family="quota-cli"), tmp_path)
        worked, _ = run(replace(seat_for(path, "work"), family="quota-cli"), tmp_path)
        other, _ = run(seat_for(path, "decline"), tmp_path)  # another family: built-in reading
    finally:
        pm.unregister(adapter)
    assert (declined.status, declined.reason, declined.exit_code) == (
        "refused",
        "refused: out of quota",
        1,
    )
    assert (worked.status, worked.tokens) == ("ok", 321)
    assert (other.status, other.reason) == ("error", "exited 1")


def test_the_builtin_readings_are_hook_implementations_asked_after_plugins(
    tmp_path: Path,
) -> None:
    run(seat_for(script(tmp_path, "seat.py", "print('hi')")), tmp_path)
    impls = hooks.plugin_manager().hook.loopcontract_seat_result.get_hookimpls()
    names = [impl.plugin_name for impl in impls if impl.trylast]
    assert names == ["report-reading", "presets"]  # pluggy asks from the end: presets first


def test_a_crashing_adapter_falls_back_to_the_builtin_reading(tmp_path: Path) -> None:
    class Broken:
        @hookimpl
        def loopcontract_seat_result(self) -> SeatRun:
            raise RuntimeError("adapter exploded")

    path = script(
        tmp_path,
        "seat.py",
        """
        import json, os
        json.dump({"tokens": 7}, open(os.environ["LOOP_CONTRACT_REPORT"], "w"))
        """,
    )
    pm = hooks.plugin_manager()
    broken = Broken()
    pm.register(broken)
    try:
        result, _ = run(seat_for(path), tmp_path)
    finally:
        pm.unregister(broken)
    assert (result.status, result.tokens) == ("ok", 7)
    assert "adapter exploded" in result.notes[-1]


def test_a_judge_gets_no_token_and_no_runner_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The publish job's environment holds the write token and the runner's credentials; a
    judge (untrusted code reading candidate diffs) prints its own environment and sees none."""
    leaked = {
        "LOOP_CONTRACT_TOKEN": "ghs_write",
        "GITHUB_TOKEN": "ghs_write",
        "GH_TOKEN": "ghp_x",
        "ACTIONS_RUNTIME_TOKEN": "rt",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://oidc.invalid",
        "GITHUB_EVENT_PATH": "/tmp/event.json",
        "GITHUB_OUTPUT": "/tmp/out",
        "RUNNER_TEMP": "/tmp/runner",
        "GIT_DIR": "/elsewhere/.git",
    }
    kept = {"GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux", "JUDGE_API_KEY": "its-own"}
    for key, value in {**leaked, **kept}.items():
        monkeypatch.setenv(key, value)
    printer = script(
        tmp_path, "env_judge.py", "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    )
    result, _ = run(seat_for(printer, judge=True), tmp_path, role="judge")
    assert result.status == "ok"
    seen = json.loads(result.stdout_head)
    assert not set(leaked) & set(seen), set(leaked) & set(seen)
    assert {key: seen.get(key) for key in kept} == kept
    assert seen["LOOP_CONTRACT_ROLE"] == "judge"
    assert {"GITHUB_ACTIONS", "RUNNER_OS", "RUNNER_ARCH"} == seats_mod.RUNNER_VARS_KEPT
