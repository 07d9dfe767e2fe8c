"""Honest suites that write their own test data pass in the sandbox; the referee stays guarded.

The baseline measures which files of the tree the unchanged suite writes; those are not bound
read-only in verify, and only the ones whose bytes the suite rewrote go unhashed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_loopcontract.verifier.suite_writes import (
    CONTENT,
    METADATA,
    git_blob_id,
    stamp_tree,
    suite_writes,
)
from testing.repos import git
from testing.reward_project import HONEST, TESTS, finding_codes, make_project, reset, verify, write

# --- the measure ---------------------------------------------------------------------------


def test_a_touched_file_is_metadata_and_a_rewritten_one_content(tmp_path: Path) -> None:
    for name in ("touched.txt", "rewritten.txt", "kept.txt", "gone.txt"):
        (tmp_path / name).write_text(name)
    blobs = {n: git_blob_id(n.encode(), 40) for n in ("touched.txt", "rewritten.txt", "kept.txt")}
    before = stamp_tree(tmp_path)
    os.utime(tmp_path / "touched.txt", ns=(1, 1))
    (tmp_path / "rewritten.txt").write_text("other bytes")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("not a file of the tree before the run")
    assert suite_writes(tmp_path, before, blobs) == {
        "touched.txt": METADATA,
        "rewritten.txt": CONTENT,
        "gone.txt": CONTENT,
    }


def test_blob_ids_are_gits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_bytes(b"some bytes\n")
    said = git(tmp_path, "hash-object", "f").strip()
    assert git_blob_id(b"some bytes\n", 40) == said


# --- a suite that writes its own data, through real verify runs ----------------------------

WRITING_TESTS = (
    TESTS
    + """

import json
import os
from pathlib import Path

from calc.core import save_example

DATA = Path(__file__).parent / "data"


def test_template_is_fresh():
    os.utime(DATA / "template.txt")  # as a suite refreshing a template's mtime does
    assert (DATA / "template.txt").read_text() == "sum: {total}\\n"


def test_example_round_trip():
    save_example(DATA / "example.json", {"total": 42})
    assert json.loads((DATA / "example.json").read_text()) == {"total": 42}
"""
)
SAVE = """

def save_example(path, data):
    import json
    path.write_text(json.dumps(data, sort_keys=True))
"""
FILES = {
    "tests/data/template.txt": "sum: {total}\n",
    "tests/data/example.json": '{"total": 0}',
}
# Candidate code that leans on the writable template: its bytes were never rewritten at
# baseline, so they are still checked after the run.
TEMPLATE_CHEAT = (
    HONEST
    + SAVE
    + """
import pathlib as _p

(_p.Path(__file__).parents[2] / "tests/data/template.txt").write_text("sum: {total}\\n# ok\\n")
"""
)


@pytest.fixture(scope="module")
def writing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(
        tmp_path_factory.mktemp("writing"),
        tests=WRITING_TESTS,
        code="def add(a, b):\n    return a - b\n" + SAVE,
        files=FILES,
    )


def test_baseline_records_what_the_suite_wrote(writing: Path) -> None:
    record = json.loads((writing / ".loop-contract/baseline.json").read_text())
    writes = record["extra"]["suite_writes"]
    assert writes == {"tests/data/template.txt": METADATA, "tests/data/example.json": CONTENT}
    assert "tests/data/template.txt" in record["pins"]


def test_the_honest_fix_passes_though_its_tests_write_their_data(writing: Path) -> None:
    try:
        write(writing, "src/calc/core.py", HONEST + SAVE)
        code, verdict = verify(writing)
        assert verdict["isolation"] == "sandbox"
        assert code == 0, (verdict["reasons"], verdict["tamper"]["findings"])
    finally:
        reset(writing)


def test_candidate_code_rewriting_a_touched_file_is_caught(writing: Path) -> None:
    try:
        write(writing, "src/calc/core.py", TEMPLATE_CHEAT)
        code, verdict = verify(writing)
        assert code == 25, verdict["reasons"]
        assert "referee_changed_during_run" in finding_codes(verdict)
    finally:
        reset(writing)
