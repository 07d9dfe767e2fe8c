"""Test ids in the contract that name no collected test (issue 34, item 5): ``loop-contract
check`` collects the working tree and ``loop-contract baseline`` reads its own run, and both
name each such id at its line in the contract with the closest real ids, as an invalid
contract (exit 26). Before: a misspelled id passed ``check``, and ``baseline`` said the
acceptance tests "do not run at baseline ... commit the tests first" although they were
committed. Real git repositories, the real CLI in subprocesses."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.verdict import EXIT_BASELINE, EXIT_CONTRACT_INVALID
from testing.repos import git
from testing.verifier_project import cli, contract, make_repo, no_traceback

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
CALC_TESTS = """\
from mini.calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(3, 2) == 1
"""
TYPO = "tests/test_calc.py::test_ad"
REAL = "tests/test_calc.py::test_add"
# contract(): the first selector sits on line 9, its value at column 9 ("      - ")
WHERE = "loopcontract.yml:9:9: dod[0].tests[0]: "
SAID = f"{TYPO!r} matches no collected test; did you mean {REAL!r}?"
GATE = """\
gates:
  hard:
    - {id: acceptance, kind: acceptance}
    - {id: calc, kind: tests, tests: [tests/test_clac.py]}
"""


def calc_repo(root: Path, tests: tuple[str, ...] = (TYPO,), extra: str = "") -> Path:
    return make_repo(
        root,
        **{
            "src/mini/calc.py": CALC,
            "tests/test_calc.py": CALC_TESTS,
            "loopcontract.yml": contract(tests=tests) + extra,
        },
    )


def test_check_names_the_misspelled_id_and_the_closest_real_one(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    result = cli(repo, "check")
    assert result.returncode == EXIT_CONTRACT_INVALID, result.stdout + result.stderr
    no_traceback(result)
    assert WHERE + SAID in result.stderr, result.stderr
    as_json = cli(repo, "check", "--json").json()
    assert as_json["valid"] is False
    assert (as_json["error"]["line"], as_json["error"]["field"]) == (9, "dod[0].tests[0]")
    [entry] = as_json["unmatched"]
    assert (entry["selector"], entry["suggestions"]) == (TYPO, [REAL])
    assert git(repo, "status", "--porcelain") == ""  # collecting wrote nothing into the tree

    # the honest look-alike: the id spelled right passes
    (repo / "loopcontract.yml").write_text(contract(tests=(REAL,)), "utf-8")
    fixed = cli(repo, "check")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert ": valid (" in fixed.stdout


def test_check_names_every_unmatched_selector_of_items_and_gates(tmp_path: Path) -> None:
    """A prefix selector and a ``kind: tests`` gate's selector are checked too; a glob that
    matches is fine, one that matches nothing is named without a guess."""
    tests = ("tests/test_calc.py::test_s*", TYPO, "tests/test_calc.py::test_x*")
    repo = calc_repo(tmp_path / "repo", tests=tests, extra=GATE)
    result = cli(repo, "check")
    assert result.returncode == EXIT_CONTRACT_INVALID, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert any(line.endswith("loopcontract.yml:10:9: dod[0].tests[1]: " + SAID) for line in lines)
    glob = "loopcontract.yml:11:9: dod[0].tests[2]: 'tests/test_calc.py::test_x*' matches no "
    assert any(line.endswith(glob + "collected test") for line in lines), lines
    gate = (
        "loopcontract.yml:16:39: gates.hard[1].tests[0]: 'tests/test_clac.py' matches no "
        "collected test; did you mean 'tests/test_calc.py'?"
    )
    assert gate in lines, lines
    assert "test_s*" not in result.stderr


def test_baseline_names_the_misspelled_id_instead_of_asking_for_a_commit(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "repo")
    result = cli(repo, "baseline")
    assert result.returncode == EXIT_CONTRACT_INVALID, result.stdout + result.stderr
    no_traceback(result)
    assert WHERE + SAID in result.stderr, result.stderr
    assert "commit the tests first" not in result.stderr
    assert "do not run at baseline" not in result.stderr
    assert not (repo / ".loop-contract" / "baseline.json").exists()
    as_json = cli(repo, "baseline", "--json")
    assert as_json.returncode == EXIT_CONTRACT_INVALID
    answer = as_json.json()
    assert answer["ok"] is False and SAID in answer["reason"]
    assert answer["unmatched"][0]["suggestions"] == [REAL]


def test_baseline_asks_for_a_commit_only_when_the_test_file_is_not_committed(
    tmp_path: Path,
) -> None:
    """The case the old advice fits: the id is right, its file is only in the working tree."""
    new = "tests/test_more.py::test_more"
    repo = calc_repo(tmp_path / "repo", tests=(new,))
    (repo / "tests" / "test_more.py").write_text("def test_more():\n    assert False\n")
    result = cli(repo, "baseline", "--base", "HEAD")
    assert result.returncode == EXIT_BASELINE, result.stdout + result.stderr
    assert f"{new} (dod[0].tests[0])" in result.stderr
    assert "commit the tests first" in result.stderr
    assert "did you mean" not in result.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the test")
    done = cli(repo, "baseline")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"must go green: {new}" in done.stdout
