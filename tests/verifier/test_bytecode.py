"""The referee's bytecode: kept from a real pytest run that wrote it, put back only beside a
pinned file whose bytes it matches, and anything else beside a pinned file is planted."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_loopcontract.verifier.bytecode import keep, planted, seal, sealed_folders

TEST = "def test_one():\n    assert 1 + 1 == 2\n"


def _tree(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests/test_one.py").write_text(TEST, "utf-8")
    (root / "tests/helper.py").write_text("X = 1\n", "utf-8")
    return root


def _run_pytest_writing_bytecode(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_kept_bytecode_goes_back_only_beside_matching_pinned_files(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base")
    _run_pytest_writing_bytecode(base)
    store = tmp_path / "store"
    assert keep(base, store) == 1  # pytest's rewritten test module; not the plain helper's
    frozen = ["tests/test_one.py", "tests/helper.py"]
    assert sealed_folders(frozen) == ["tests/__pycache__"]

    same = _tree(tmp_path / "same")
    seal(same, frozen, store)
    (placed,) = planted(same, frozen)
    assert placed.startswith("tests/__pycache__/test_one.") and "-pytest-" in placed

    changed = _tree(tmp_path / "changed")
    (changed / "tests/test_one.py").write_text(TEST + "\n# edited\n", "utf-8")
    seal(changed, frozen, store)
    assert (changed / "tests/__pycache__").is_dir()  # sealed, and empty: pytest rewrites
    assert planted(changed, frozen) == []


def test_bytecode_that_does_not_match_its_source_is_never_kept(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base")
    _run_pytest_writing_bytecode(base)
    (pyc,) = (base / "tests/__pycache__").glob("test_one.*-pytest-*.pyc")
    data = pyc.read_bytes()
    forged_hash = data[:8] + importlib.util.source_hash(b"other")[:8] + data[16:]
    pyc.write_bytes(forged_hash)
    assert keep(base, tmp_path / "store") == 0
    pyc.write_bytes(b"\x00\x00\x00\x00" + data[4:])  # another interpreter's magic number
    assert keep(base, tmp_path / "store") == 0
    assert not (tmp_path / "store").exists()


def test_a_later_baseline_replaces_the_store(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base")
    _run_pytest_writing_bytecode(base)
    store = tmp_path / "store"
    assert keep(base, store) == 1
    shutil.rmtree(base / "tests/__pycache__")
    assert keep(base, store) == 0
    assert not store.exists()
