"""``loop-contract check`` and ``init`` from a subfolder of the repository, as a new user
running them from ``tests/`` does: both mean the contract at the repository's root, where
``verify`` and ``status`` find it (before: ``check`` said "contract file not found" and
``init`` wrote a second contract into ``tests/``)."""

from __future__ import annotations

from pathlib import Path

from testing.repos import run_cli


def test_check_from_a_subfolder_checks_the_contract_at_the_root(example_repo: Path) -> None:
    root = example_repo
    done = run_cli(root / "tests", "check")
    assert done.returncode == 0, done.stderr
    assert f"{root / 'loopcontract.yml'}: valid" in done.stdout
    named = run_cli(root / "tests", "check", "--contract", "nowhere.yml")  # a path is a path
    assert named.returncode != 0 and "nowhere.yml" in named.stderr
