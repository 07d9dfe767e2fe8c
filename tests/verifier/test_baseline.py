"""``loop-contract baseline`` end to end: real git repositories, the real CLI in a subprocess.

What the baseline records (sets, pins, plugins), the mode rules it enforces (``fix``: no vacuous
or missing acceptance test; ``improve``: a green baseline and a non-empty candidate), and the
messages a person gets when the repository is not in a state a baseline can be taken from.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pytest_loopcontract.idsets import unpack_ids
from testing.repos import assert_valid_verdict, git
from testing.verifier_project import (
    CONFTEST,
    FIXED,
    TESTS,
    cli,
    contract,
    make_repo,
    no_traceback,
    project_files,
    read_baseline,
    write_files,
)

# --- what a baseline records -------------------------------------------------------------------


def test_baseline_records_sets_pins_and_plugins(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    result = cli(repo, "baseline", "--json")
    assert result.returncode == 0, result.stderr
    summary = result.json()
    assert summary["ok"] is True
    assert summary["fail_to_pass"] == ["tests/test_core.py::test_triple"]
    assert summary["pass_to_pass"] == 1

    record = read_baseline(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert record["schema_version"] == 2
    assert record["commit"] == head
    assert record["tree"] == git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert record["mode"] == "fix"
    assert record["contract_id"] == "mini"
    assert record["contract_path"] == "loopcontract.yml"
    assert record["fail_to_pass"] == ["tests/test_core.py::test_triple"]
    # the outcome sets, compactly: each file said once, the rest of each id as it is
    assert record["pass_to_pass"] == {"tests/test_core.py": {"": ["test_double"]}}
    assert record["outcomes"] == {
        "passed": {"tests/test_core.py": {"": ["test_double"]}},
        "failed": {"tests/test_core.py": {"": ["test_triple"]}},
    }
    assert "collected" not in record
    contract_bytes = (repo / "loopcontract.yml").read_bytes()
    assert record["contract_sha256"] == hashlib.sha256(contract_bytes).hexdigest()

    pins = record["pins"]
    # the contract, the test configuration, the test file and every conftest are pinned;
    # the code under change is not
    assert {"loopcontract.yml", "pyproject.toml", "tests/test_core.py", "tests/conftest.py"} <= set(
        pins
    )
    assert "src/mini/core.py" not in pins
    for path, pin in pins.items():
        data = (repo / path).read_bytes()
        assert pin["sha256"] == hashlib.sha256(data).hexdigest(), path
        assert pin["blob"] == git(repo, "hash-object", path).strip(), path
        assert pin["mode"] == "100644"
    assert "conftest.py" in record["protected_globs"]
    # the plugin allow-list: whatever the baseline run loaded, as a sorted list of names
    assert record["plugins"] == sorted(set(record["plugins"]))
    assert "loopcontract" not in record["plugins"]


def test_baseline_pins_an_executable_test_helper_with_its_mode(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini", **{"tests/conftest.py": CONFTEST})
    (repo / "tests/conftest.py").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "exec bit")
    assert cli(repo, "baseline").returncode == 0
    assert read_baseline(repo)["pins"]["tests/conftest.py"]["mode"] == "100755"


def test_baseline_text_output_says_what_must_go_green(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    result = cli(repo, "baseline")
    assert result.returncode == 0, result.stderr
    assert "must go green: tests/test_core.py::test_triple" in result.stdout
    assert "fix mode" in result.stdout


# --- fix mode rules ------------------------------------------------------------------------------


def test_fix_mode_refuses_a_vacuous_item(tmp_path: Path) -> None:
    vacuous = contract(tests=("tests/test_core.py::test_double",)).replace("id: triple", "id: dbl")
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": vacuous})
    result = cli(repo, "baseline")
    assert result.returncode == 27, result.stderr
    assert "'dbl'" in result.stderr
    assert "vacuous" in result.stderr
    no_traceback(result)
    assert not (repo / ".loop-contract/baseline.json").exists()


def test_fix_mode_refuses_a_vacuous_item_even_beside_a_good_one(tmp_path: Path) -> None:
    text = contract() + (
        "  - id: doubling\n    text: already true\n    tests:\n"
        "      - tests/test_core.py::test_double\n"
    )
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    result = cli(repo, "baseline", "--json")
    assert result.returncode == 27
    report = result.json()
    assert report["ok"] is False
    assert "'doubling'" in report["reason"] and "vacuous" in report["reason"]


def test_fix_mode_refuses_an_acceptance_test_that_does_not_exist(tmp_path: Path) -> None:
    text = contract(tests=("tests/test_core.py::test_no_such_test",))
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    result = cli(repo, "baseline")
    # an id that names no collected test is the contract's error, named at its line (26)
    assert result.returncode == 26, result.stderr
    assert (
        "loopcontract.yml:9:9: dod[0].tests[0]: 'tests/test_core.py::test_no_such_test' "
        "matches no collected test; did you mean" in result.stderr
    )
    assert "commit the tests first" not in result.stderr
    no_traceback(result)


def test_fix_mode_refuses_an_acceptance_file_that_does_not_exist(tmp_path: Path) -> None:
    text = contract(tests=("tests/test_missing.py::test_triple",))
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": text})
    result = cli(repo, "baseline")
    assert result.returncode == 26
    assert "'tests/test_missing.py::test_triple' matches no collected test" in result.stderr
    assert "did you mean 'tests/test_core.py::test_triple'?" in result.stderr
    no_traceback(result)


# --- improve mode rules ---------------------------------------------------------------------------


def test_improve_mode_refuses_a_failing_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini", **{"loopcontract.yml": contract(mode="improve")})
    result = cli(repo, "baseline")
    assert result.returncode == 27
    assert "improve mode needs a passing baseline" in result.stderr
    assert "tests/test_core.py::test_triple" in result.stderr
    no_traceback(result)


def test_improve_mode_needs_a_change(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "mini",
        **{"loopcontract.yml": contract(mode="improve"), "src/mini/core.py": FIXED},
    )
    baseline = cli(repo, "baseline", "--json")
    assert baseline.returncode == 0, baseline.stderr
    assert baseline.json()["fail_to_pass"] == []

    unchanged = cli(repo, "verify", "--json")
    verdict = unchanged.json()
    assert_valid_verdict(verdict)
    assert unchanged.returncode == 20
    assert verdict["verdict"] == "fail"
    empty = [g for g in verdict["gates"]["hard"] if g["kind"] == "empty_diff"]
    assert [g["status"] for g in empty] == ["fail"]
    assert all(g["status"] == "pass" for g in verdict["gates"]["hard"] if g["kind"] != "empty_diff")

    (repo / "src/mini/core.py").write_text(FIXED.replace("x * 3", "3 * x"), "utf-8")
    changed = cli(repo, "verify", "--json")
    verdict = changed.json()
    assert_valid_verdict(verdict)
    assert changed.returncode == 0, verdict["reasons"]
    assert verdict["verdict"] == "pass"
    assert not [g for g in verdict["gates"]["hard"] if g["kind"] == "empty_diff"]


# --- the repository's state -----------------------------------------------------------------------


def test_dirty_tree_without_base_says_what_to_do(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")
    result = cli(repo, "baseline")
    assert result.returncode != 0
    assert "uncommitted changes" in result.stderr
    assert "--base REF" in result.stderr
    no_traceback(result)
    assert not (repo / ".loop-contract/baseline.json").exists()


def test_untracked_file_also_makes_the_tree_dirty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    (repo / "notes.txt").write_text("todo\n", "utf-8")
    result = cli(repo, "baseline")
    assert result.returncode != 0
    assert "--base REF" in result.stderr


def test_base_ref_works_on_a_dirty_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("mini\n", "utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "readme")
    # the work tree now carries the (uncommitted) fix
    (repo / "src/mini/core.py").write_text(FIXED, "utf-8")

    result = cli(repo, "baseline", "--base", "HEAD~1", "--json")
    assert result.returncode == 0, result.stderr
    record = read_baseline(repo)
    assert record["commit"] == first
    # the baseline ran the base commit, not the dirty work tree
    assert record["fail_to_pass"] == ["tests/test_core.py::test_triple"]

    verdict = cli(repo, "verify", "--json").json()
    assert_valid_verdict(verdict)
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert verdict["environment"]["dirty"] is True


def test_unknown_base_ref_is_a_clear_message(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    result = cli(repo, "baseline", "--base", "no-such-branch")
    assert result.returncode != 0
    assert "'no-such-branch'" in result.stderr
    no_traceback(result)


def test_contract_not_committed_at_base(tmp_path: Path) -> None:
    root = tmp_path / "mini"
    files = project_files()
    text = files.pop("loopcontract.yml")
    root.mkdir()
    write_files(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "code only")
    (root / "loopcontract.yml").write_text(text, "utf-8")

    result = cli(root, "baseline", "--base", "HEAD")
    assert result.returncode != 0
    assert "loopcontract.yml is not committed" in result.stderr
    assert "commit the contract" in result.stderr
    no_traceback(result)


def test_not_a_git_repository(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    write_files(root, project_files())
    # never let git find a repository above the temporary folder
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    for command in ("baseline", "verify"):
        result = cli(root, command, env=env)
        assert result.returncode != 0
        assert "not inside a git repository" in result.stderr
        assert "git init" in result.stderr
        no_traceback(result)


def test_no_commits_yet(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini", commit=False)
    result = cli(repo, "baseline")
    assert result.returncode != 0
    assert "make a first commit" in result.stderr
    no_traceback(result)


def test_empty_repository_without_files(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    result = cli(root, "baseline")
    assert result.returncode != 0
    assert "make a first commit" in result.stderr
    no_traceback(result)


def test_baseline_from_a_subdirectory_finds_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    result = cli(repo / "src", "baseline", "--contract", "../loopcontract.yml")
    assert result.returncode == 0, result.stderr
    assert (repo / ".loop-contract/baseline.json").exists()


def test_second_baseline_replaces_the_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mini")
    assert cli(repo, "baseline").returncode == 0
    first = read_baseline(repo)["commit"]
    (repo / "tests/test_core.py").write_text(
        TESTS + "\n\ndef test_double_zero():\n    assert double(0) == 0\n", "utf-8"
    )
    git(repo, "commit", "-q", "-am", "more tests")
    assert cli(repo, "baseline").returncode == 0
    record = read_baseline(repo)
    assert record["commit"] != first
    assert "tests/test_core.py::test_double_zero" in unpack_ids(record["pass_to_pass"])
    pin = record["pins"]["tests/test_core.py"]
    assert pin["sha256"] == hashlib.sha256((repo / "tests/test_core.py").read_bytes()).hexdigest()


def test_coverage_gates_without_coverage_in_the_test_interpreter_are_refused_up_front(
    example_repo: Path, tmp_path: Path
) -> None:
    """Where a user starts: ``--python`` names the project's interpreter, which lacks
    coverage.py; the example's coverage gates would make every verify run no test at all
    ("No module named coverage"), so the baseline refuses at once and says how to install it."""
    import subprocess
    import sys

    from testing.repos import run_cli

    bare = tmp_path / "bare venv"  # a space: the commands in the message must quote it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"

    refused = run_cli(example_repo, "baseline", "--python", str(python))

    assert refused.returncode == 27, refused.stdout + refused.stderr
    said = refused.stderr
    assert "coverage, changed-lines-covered need coverage.py" in said, said
    commands = [line.strip() for line in said.splitlines()[-2:]]
    assert commands == [
        f"'{python}' -m pip install coverage",
        f"loop-contract baseline --python '{python}'",
    ], said
    assert not (example_repo / ".loop-contract" / "baseline.json").exists()
