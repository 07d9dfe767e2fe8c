"""cli/: main parses and dispatches, commands take plain arguments, errors map in one place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopcontract.cli.commands.check import check
from pytest_loopcontract.cli.commands.init import init
from pytest_loopcontract.cli.error_handler import EXIT_INTERRUPTED, run_command
from pytest_loopcontract.contest.lesson_store import LessonStoreError
from pytest_loopcontract.errors import CommandError, ContractError
from testing.repos import init_repo, run_cli


def test_the_handler_prints_one_line_with_the_label_and_returns_the_errors_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def invalid() -> int:
        raise ContractError("no dod", file="c.yml", line=2)

    def broken_store() -> int:
        raise LessonStoreError("x.sqlite is not a usable lesson store")

    assert run_command(invalid) == 26
    assert run_command(broken_store) == 2
    assert run_command(lambda: 24) == 24  # a command's own exit code passes through
    assert capsys.readouterr().err.splitlines() == [
        "loop-contract: contract invalid: c.yml:2: no dod",
        "loop-contract: x.sqlite is not a usable lesson store",
    ]


def test_an_interrupt_is_reported_and_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_command(interrupted) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "loop-contract: interrupted\n"


def test_an_error_the_commands_do_not_catch_still_reaches_the_user_as_one_line(
    tmp_path: Path,
) -> None:
    """A damaged lesson store used to end `lessons` with a traceback; the root catches it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    init_repo(repo)
    (repo / ".loop-contract").mkdir()
    (repo / ".loop-contract" / "lessons.sqlite").write_bytes(b"not a database at all" * 50)
    result = run_cli(repo, "lessons", "--domain", "py")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("loop-contract: ")
    assert "is not a usable lesson store" in result.stderr


def test_commands_are_functions_of_plain_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "loopcontract.yml"
    assert init(str(contract), contract_id="demo", goal="ship it") == 0
    # the scaffold is a draft: a fix contract needs a DoD item before check calls it ready
    assert check(str(contract), as_json=True) == 26
    out = capsys.readouterr().out
    document = json.loads(out[out.index("{") :])
    assert (document["valid"], document["error"]["field"]) == (False, "dod")
    item = "dod: [{id: a, text: a, tests: [test_a.py::test_a]}]"  # check collects it
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n", "utf-8")
    contract.write_text(contract.read_text("utf-8").replace("dod: []", item), "utf-8")
    assert check(str(contract), as_json=True) == 0
    out = capsys.readouterr().out
    document = json.loads(out[out.index("{") :])
    assert (document["valid"], document["id"]) == (True, "demo")
    with pytest.raises(CommandError, match="already exists"):
        init(str(contract), contract_id="demo")


def test_check_answers_without_the_contract_invalid_label(tmp_path: Path) -> None:
    contract = tmp_path / "loopcontract.yml"
    contract.write_text("dod: [\n", "utf-8")
    with pytest.raises(CommandError) as caught:
        check(str(contract))
    assert caught.value.exit_code == 26
    assert str(caught.value).startswith(f"{contract}:")
    assert check(str(contract), as_json=True) == 26


def test_asking_for_help_loads_no_command() -> None:
    """The dispatcher imports a command only to run it: a hook call must not pay for all."""
    probe = (
        "import sys\n"
        "from pytest_loopcontract.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('pytest_loopcontract.cli.commands.', 'pytest_loopcontract.verifier.verify',\n"
        "         'pytest_loopcontract.contest.', 'github')\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "LOADED []" in proc.stdout, proc.stdout
    assert "usage: loop-contract" in proc.stdout
