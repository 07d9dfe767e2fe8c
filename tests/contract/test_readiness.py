"""``loop-contract check`` refuses a contract that loads but cannot be met: an empty goal, a
``fix`` contract without DoD items, a DoD item with no tests and no ``dod`` marker. Each error
names the file, the line and the field. Real files, real git, the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopcontract.contract.readiness import marked_ids
from testing.repos import git, run_cli

HEAD = "version: 1\nid: demo\n"
GOAL = "goal: Parse empty files.\n"
ITEM = "dod:\n  - id: empty\n    text: empty files parse\n"


def _repo(tmp_path: Path, contract: str, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "loopcontract.yml").write_text(contract, "utf-8")
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    git(root, "init", "-q", "-b", "main")
    return root


def _refused(root: Path, where: str, field: str) -> str:
    result = run_cli(root, "check")
    assert result.returncode == 26, result.stdout + result.stderr
    assert f"loopcontract.yml:{where}" in result.stderr, result.stderr
    assert f"{field}:" in result.stderr
    assert "Traceback" not in result.stderr
    as_json = run_cli(root, "check", "--json").json()
    assert as_json["valid"] is False and as_json["error"]["field"] == field
    return result.stderr


@pytest.mark.parametrize("goal", ['goal: ""\n', "goal: '   '\n", ""])
def test_empty_or_missing_goal_is_refused_at_its_line(tmp_path: Path, goal: str) -> None:
    contract = HEAD + goal + ITEM + "    tests: [tests/test_p.py::test_empty]\n"
    line = "3" if goal else "2"  # a missing goal is named at the id's line
    message = _refused(_repo(tmp_path, contract), line, "goal")
    assert "one sentence" in message


def test_fix_contract_without_dod_items_is_refused(tmp_path: Path) -> None:
    message = _refused(_repo(tmp_path, HEAD + GOAL + "mode: fix\ndod: []\n"), "5", "dod")
    assert "fix mode needs at least one DoD item" in message


def test_fix_is_the_default_mode_so_no_dod_at_all_is_refused(tmp_path: Path) -> None:
    _refused(_repo(tmp_path, HEAD + GOAL), "2", "dod")


def test_improve_contract_may_have_no_dod_items(tmp_path: Path) -> None:
    """The honest look-alike: improve mode measures gates, a DoD list is optional."""
    root = _repo(tmp_path, HEAD + GOAL + "mode: improve\ndod: []\n")
    result = run_cli(root, "check")
    assert result.returncode == 0, result.stderr
    assert "0 DoD items" in result.stdout


def test_item_without_tests_or_marker_is_refused_at_the_item(tmp_path: Path) -> None:
    contract = HEAD + GOAL + ITEM + "    tests: []\n"
    message = _refused(_repo(tmp_path, contract), "7", "dod[0].tests")
    assert "DoD item 'empty' has no tests" in message
    assert '@pytest.mark.dod("empty")' in message


@pytest.mark.parametrize(
    "test_file",
    [
        # the marker names another item
        'import pytest\n\n@pytest.mark.dod("other")\ndef test_empty():\n    pass\n',
        # only a comment and a string mention the marker
        '# @pytest.mark.dod("empty")\nNOTE = \'mark.dod("empty")\'\n\ndef test_x():\n    pass\n',
    ],
    ids=["other-id", "comment-and-string"],
)
def test_marker_look_alikes_do_not_count(tmp_path: Path, test_file: str) -> None:
    root = _repo(tmp_path, HEAD + GOAL + ITEM, {"tests/test_p.py": test_file})
    _refused(root, "5", "dod[0].tests")


@pytest.mark.parametrize(
    "marker", ['@pytest.mark.dod("empty")', '@mark.dod("other", "empty")', '@dod("empty")']
)
def test_item_tied_by_a_marker_passes(tmp_path: Path, marker: str) -> None:
    test_file = f"import pytest\nfrom pytest import mark\n\n{marker}\ndef test_empty():\n    pass\n"
    root = _repo(tmp_path, HEAD + GOAL + ITEM, {"tests/test_p.py": test_file})
    result = run_cli(root, "check")
    assert result.returncode == 0, result.stderr
    assert "1 DoD item," in result.stdout


def test_the_first_problem_in_file_order_is_reported(tmp_path: Path) -> None:
    contract = HEAD + 'goal: ""\n' + ITEM
    _refused(_repo(tmp_path, contract), "3", "goal")


def test_marked_ids_skip_files_that_do_not_parse(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text('import pytest\n\n@pytest.mark.dod("a", "b")\ndef test_x(): pass\n')
    bad.write_text('@pytest.mark.dod("c")\ndef broken(:\n')
    assert marked_ids([good, bad, tmp_path / "gone.py"]) == {"a", "b"}
