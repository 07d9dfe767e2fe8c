"""cli/progress.py: live phases and test count on stderr, redrawn on a tty, plain in a log.

The real runs below start ``loop-contract`` as a user would: stderr on a pseudo-terminal
(``os.openpty``), on a pipe, with ``-q``, with ``NO_COLOR``; stdout is captured apart and must
be the same whatever stderr shows.
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_loopcontract.cli.display import StderrProgress, bar_line, wants_colour
from pytest_loopcontract.verifier.phases import parse_count
from testing.verifier_project import FIXED, cli, make_repo, no_traceback

ESC = "\x1b["
# Thirty tests of 50 ms each: the run takes long enough for several counts to arrive.
SLOW_TESTS = (
    "import time\n\nimport pytest\n\n\n@pytest.mark.parametrize('n', range(30))\n"
    "def test_slow(n):\n    time.sleep(0.05)\n"
)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_with_tty(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    """``loop-contract ARGS`` with stderr on a 120-column pseudo-terminal, stdout on a pipe."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_loopcontract", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TERM": "xterm-256color", **(env or {})},
    )
    os.close(slave)
    seen = bytearray()

    def drain() -> None:  # read as it comes, so the pty's small buffer never blocks the child
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return Run(proc.returncode, out.decode("utf-8"), seen.decode("utf-8", "replace"))


def run_piped(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    result = cli(cwd, *args, env=env)
    no_traceback(result)
    return Run(result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """A project with a slow-ish suite, its baseline taken (stderr on a pipe), then fixed."""
    repo = make_repo(
        tmp_path_factory.mktemp("progress") / "mini", **{"tests/test_slow.py": SLOW_TESTS}
    )
    taken = run_piped(repo, "baseline")
    assert taken.returncode == 0, taken.stderr
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    return repo, taken


def counts(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+) tests", text)]


def test_baseline_in_a_log_prints_one_line_per_phase_and_the_count_not_a_line_per_test(
    adopted: tuple[Path, Run],
) -> None:
    _, taken = adopted
    lines = taken.stderr.splitlines()
    assert "loop-contract baseline: running the tests at the base commit" in lines
    assert "loop-contract baseline: recording the baseline" in lines
    count_lines = [line for line in lines if line.endswith("tests run")]
    assert count_lines and len(count_lines) <= 3, taken.stderr  # 32 tests, one run of ~2 s
    assert "loop-contract baseline: 32/32 tests run" in lines
    assert ESC not in taken.stderr and "\r" not in taken.stderr


def test_verify_on_a_terminal_redraws_one_line_with_a_bar_and_a_rising_count(
    adopted: tuple[Path, Run],
) -> None:
    repo, _ = adopted
    shown = run_with_tty(repo, "verify")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "\n" not in shown.stderr.replace("\r\n", "\n").strip("\n"), "one line, redrawn"
    frames = [f for f in shown.stderr.split("\r") if f.strip()]
    assert len(frames) >= 4  # phases and counts, each drawn over the last
    seen = counts(shown.stderr)
    assert seen[-1] == (32, 32) and len({done for done, _ in seen}) >= 2, seen
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert re.search(r"\[\x1b\[32m#+", shown.stderr), "the bar is green on a colour terminal"
    assert "running the tests" in shown.stderr
    assert shown.stderr.endswith("\r"), "the bar is wiped before the result is printed"
    assert shown.stdout == run_piped(repo, "verify", "-q").stdout  # stdout never changes


def test_no_color_and_a_dumb_terminal_get_no_escape_codes_but_still_the_bar(
    adopted: tuple[Path, Run],
) -> None:
    repo, _ = adopted
    for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        shown = run_with_tty(repo, "verify", env=env)
        assert shown.returncode == 0
        assert "\x1b" not in shown.stderr, env
        assert "] 32/32 tests" in shown.stderr and "\r" in shown.stderr


def test_verify_in_a_log_prints_phase_lines_and_quiet_prints_nothing(
    adopted: tuple[Path, Run],
) -> None:
    repo, _ = adopted
    logged = run_piped(repo, "verify", "--json")
    assert logged.returncode == 0
    lines = logged.stderr.splitlines()
    assert lines[0] == "loop-contract verify: reading the baseline and the candidate"
    assert "loop-contract verify: running the tests" in lines
    assert "loop-contract verify: 32/32 tests run" in lines
    assert len(lines) <= 9, logged.stderr
    assert "\r" not in logged.stderr and ESC not in logged.stderr
    quiet = run_piped(repo, "verify", "--json", "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""
    # the machine's stdout is the verdict either way (nonce and timings differ per run)
    a, b = (__import__("json").loads(r.stdout) for r in (logged, quiet))
    assert a.keys() == b.keys() and a["verdict"] == b["verdict"] == "pass"


def test_done_shows_the_verification_it_runs_and_quiet_hides_it(
    adopted: tuple[Path, Run],
) -> None:
    repo, _ = adopted
    shown = run_piped(repo, "done", "triple")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "loop-contract done: running the tests" in shown.stderr.splitlines()
    assert "loop-contract done: 32/32 tests run" in shown.stderr.splitlines()
    quiet = run_piped(repo, "done", "triple", "-q")
    assert quiet.stderr == "" and quiet.stdout == shown.stdout


def test_a_candidate_that_writes_its_own_count_moves_the_bar_and_nothing_else(
    tmp_path: Path,
) -> None:
    """The cheat: code under test looks for the count file through the verifier's settings to
    claim every test ran. The settings file is deleted once the injected plugin has read it
    (before any project code loads), so the cheat finds nothing, and the verdict still comes
    from the verified records."""
    repo = make_repo(tmp_path / "mini")
    assert run_piped(repo, "baseline", "-q").returncode == 0
    spoof = (
        "import json, os\n"
        "_s = json.load(open(os.environ['LOOP_CONTRACT_INNER']))\n"
        "if _s.get('count'):\n"
        "    with open(_s['count'] + '.x', 'w') as fh:\n"
        "        fh.write('9999 9999\\n')\n"
        "    os.replace(_s['count'] + '.x', _s['count'])\n"
    )
    core = repo / "src/mini/core.py"
    core.write_text(spoof + core.read_text("utf-8"), "utf-8")  # triple() still wrong
    shown = run_piped(repo, "verify")
    assert "9999/9999" not in shown.stderr
    # reading the verifier's settings from the environment is itself a finding
    assert shown.returncode == 25, shown.stdout
    assert "[ ] triple" in shown.stdout


# -- the pure parts ---------------------------------------------------------------------------


def test_colour_only_on_a_terminal_without_no_color_or_term_dumb() -> None:
    assert wants_colour({"TERM": "xterm"}, tty=True)
    assert not wants_colour({"TERM": "xterm"}, tty=False)
    assert not wants_colour({"TERM": "xterm", "NO_COLOR": "1"}, tty=True)
    assert not wants_colour({"TERM": "xterm", "NO_COLOR": "false"}, tty=True)  # any value
    assert wants_colour({"TERM": "xterm", "NO_COLOR": ""}, tty=True)  # empty: not set
    assert not wants_colour({"TERM": "dumb"}, tty=True)


def test_the_bar_line_fits_the_width_and_keeps_the_numbers() -> None:
    line = bar_line("verify", "running the tests " * 10, 5, 10, width=70, colour=False)
    assert len(line) <= 70 and line.endswith("[############------------] 5/10 tests")
    assert bar_line("verify", "x", 3, None, width=70, colour=False).endswith("x  3 tests")
    assert ESC in bar_line("verify", "x", 3, 10, width=70, colour=True)


def test_a_log_gets_a_count_line_at_most_every_few_seconds() -> None:
    now = [0.0]
    out = io.StringIO()
    shown = StderrProgress(out, "verify", tty=False, colour=False, clock=lambda: now[0])
    shown.phase("running the tests")
    for done in range(1, 1001):  # a thousand tests over ten seconds
        now[0] = done / 100
        shown.tests(done, 1000)
    shown.phase("checking the run")
    shown.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "loop-contract verify: running the tests"
    assert lines[-2:] == [
        "loop-contract verify: 1000/1000 tests run",
        "loop-contract verify: checking the run",
    ]
    assert 2 <= len(lines) - 2 <= 3, lines


def test_a_count_line_that_is_not_the_collectors_is_ignored() -> None:
    assert parse_count(b"           3           10\n") == (3, 10)
    assert parse_count(b"           3            -\n") == (3, None)
    assert parse_count(b"") is None
    assert parse_count(b"  3") is None  # half written
    assert parse_count(b"\x1b[2J 5") is None
