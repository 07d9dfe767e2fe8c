"""``loop-contract init`` from a subfolder of the repository writes the contract at the root,
where every other command looks for it (before: a second contract in the subfolder)."""

from __future__ import annotations

from pathlib import Path

from testing.repos import run_cli


def test_init_from_a_subfolder_writes_at_the_root(example_repo: Path) -> None:
    root = example_repo
    (root / "loopcontract.yml").unlink()
    done = run_cli(root / "tests", "init")
    assert done.returncode == 0, done.stderr
    assert (root / "loopcontract.yml").is_file()
    assert not (root / "tests" / "loopcontract.yml").exists()
