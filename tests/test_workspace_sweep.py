"""Sweeping scratch folders that killed runs left (``make_scratch``, ``sweep_scratch``).

A folder is swept only when everything says its owner is gone: one of our names with a pid in
it, a real folder of this user, no process with that pid, and no live process holding its
lock. The owners here are real processes, started, ended or still running; the folders made
by hand are named exactly as ``make_scratch`` names them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopcontract.workspace import SCRATCH_KINDS, make_scratch, sweep_scratch
from testing.verifier_project import wait_until

OWNER = """\
import sys
from pytest_loopcontract.workspace import make_scratch

path = make_scratch(keep=sys.argv[1] == "keep")
print(path, flush=True)
sys.stdin.read()  # owns the folder until its stdin closes
"""


def dead_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def folder(parent: Path, name: str) -> Path:
    path = parent / name
    path.mkdir()
    (path / "sub").mkdir()
    (path / "sub" / "file.py").write_text("X = 1\n", "utf-8")
    return path


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / "scratch"
    place.mkdir()
    monkeypatch.setenv("LOOP_CONTRACT_SCRATCH", str(place))
    return place


class Owner:
    """A real process that made a scratch folder with ``make_scratch`` and holds it."""

    def __init__(self, parent: Path, keep: bool = False) -> None:
        env = {**os.environ, "LOOP_CONTRACT_SCRATCH": str(parent)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", OWNER, "keep" if keep else "own"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdout is not None
        self.path = Path(self.proc.stdout.readline().decode().strip())

    def end(self) -> None:
        self.proc.communicate(b"")


def test_the_folders_of_a_dead_owner_are_swept_and_a_live_owners_kept(
    parent: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    gone = dead_pid()
    orphans = [folder(parent, f"loopcontract-{kind}-{gone}-abc_12xy") for kind in SCRATCH_KINDS]
    alive = folder(parent, f"loopcontract-scratch-{sleeper.pid}-abc_12xy")
    mine = folder(parent, f"loopcontract-run-{os.getpid()}-abc_12xy")

    swept = sweep_scratch([parent])

    assert sorted(swept) == sorted(orphans)
    assert wait_until(lambda: not any(p.exists() for p in orphans))  # removed in the background
    assert alive.is_dir() and (alive / "sub" / "file.py").is_file()
    assert mine.is_dir()


def test_names_that_are_not_ours_are_never_swept(parent: Path, tmp_path: Path) -> None:
    gone = dead_pid()
    precious = folder(tmp_path, "precious")
    kept = [
        folder(parent, f"loopcontract-demo-{gone}-abcd1234"),  # a kind that is not ours
        folder(parent, f"loopcontract-run-{gone}-seats-abcd1234"),  # a contract id "run-<digits>"
        folder(parent, "loopcontract-scratch-kept-abcd1234"),  # --keep-scratch
        folder(parent, "loopcontract-scratch-abcd1234"),  # an older version's, no owner in it
        folder(parent, f"other-scratch-{gone}-abcd1234"),
        folder(parent, f"loopcontract-Scratch-{gone}-abcd1234"),
    ]
    a_file = parent / f"loopcontract-scratch-{gone}-file1234"
    a_file.write_text("not a folder", "utf-8")
    link = parent / f"loopcontract-scratch-{gone}-link1234"
    link.symlink_to(precious)

    assert sweep_scratch([parent]) == []

    time.sleep(0.3)  # what a removal in the background would have needed
    assert all(p.is_dir() for p in kept)
    assert a_file.is_file() and link.is_symlink()
    assert (precious / "sub" / "file.py").is_file()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user takes root")
def test_another_users_folder_is_never_swept(parent: Path) -> None:
    theirs = folder(parent, f"loopcontract-scratch-{dead_pid()}-abcd1234")
    os.chown(theirs, 65534, 65534)

    assert sweep_scratch([parent]) == []
    assert theirs.is_dir()


def test_make_scratch_names_the_owner_and_its_lock_outlives_a_misleading_pid(
    parent: Path,
) -> None:
    """A folder's pid can mislead: an owner in another PID namespace (a container sharing the
    folder) has a pid that means nothing here. Its lock still says it is alive."""
    owner = Owner(parent)
    try:
        assert owner.path.parent == parent
        assert owner.path.name.startswith(f"loopcontract-scratch-{owner.proc.pid}-")
        assert sweep_scratch([parent]) == []  # the owner's pid is alive

        seen_elsewhere = owner.path.with_name(f"loopcontract-scratch-{dead_pid()}-abcd1234")
        owner.path.rename(seen_elsewhere)  # the same folder, and lock, under a dead pid
        assert sweep_scratch([parent]) == []
        assert seen_elsewhere.is_dir()
    finally:
        owner.end()

    assert sweep_scratch([parent]) == [seen_elsewhere]  # the kernel dropped the lock with it
    assert wait_until(lambda: not seen_elsewhere.exists())


def test_a_kept_scratch_folder_outlives_its_owner(parent: Path) -> None:
    owner = Owner(parent, keep=True)
    owner.end()

    assert owner.path.name.startswith("loopcontract-scratch-kept-")
    assert sweep_scratch([parent]) == []
    assert owner.path.is_dir()


def test_make_scratch_refuses_a_kind_the_sweep_would_not_know(parent: Path) -> None:
    with pytest.raises(ValueError, match="names none of"):
        make_scratch("loopcontract-demo-")
    assert list(parent.iterdir()) == []


def test_every_temporary_folder_the_package_makes_is_one_the_sweep_knows() -> None:
    """A folder made with ``tempfile`` directly carries no owner, so a killed run's copy of it
    would stay forever: the package makes its folders through ``make_scratch`` only."""
    package = Path(__file__).resolve().parents[1] / "pytest_loopcontract"
    makers = ("TemporaryDirectory(", "mkdtemp(")
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "workspace.py"
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if any(maker in line for maker in makers)
    ]
    assert offenders == []
