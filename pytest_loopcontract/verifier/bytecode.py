"""The referee's bytecode: pytest's rewritten test modules, kept and sealed.

Python and pytest read a cached ``.pyc`` before the source. pytest's own cache (since 9.2) is
a checked-hash pyc: it is used when its header carries the source's hash, and that hash is a
public function of the source, so code under test that runs before a test file is collected
could plant a forged one in ``__pycache__``. :func:`seal` therefore gives every folder holding
a pinned Python file an empty ``__pycache__`` of the launcher's (the sandbox binds it
read-only; :func:`planted` lists what appears there anyway).

The same seal makes rewriting the tests once enough. The baseline run, the reference every
verification is judged against, is the one run allowed to write bytecode; :func:`keep` takes
the pytest-format files it wrote whose header matches the file's bytes, and :func:`seal` puts
each back beside a pinned file whose bytes it still matches, before the sandbox starts. Each
verification then skips rewriting the unchanged test files (mutated copies, whose hash differs,
are rewritten as always). A file whose interpreter is not the launcher's (another magic
number) is never kept: the launcher could not check its hash.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["keep", "planted", "seal", "sealed_folders"]

_PYTEST_MARK = "-pytest-"
_CHECKED_HASH = b"\x03\x00\x00\x00"
CACHE = "__pycache__"


def _matches(pyc: bytes, source: bytes) -> bool:
    """Whether ``pyc`` is a checked-hash pyc of this interpreter for exactly ``source``."""
    return (
        len(pyc) > 16
        and pyc[:4] == importlib.util.MAGIC_NUMBER
        and pyc[4:8] == _CHECKED_HASH
        and pyc[8:16] == importlib.util.source_hash(source)[:8]
    )


def _caches(tree: Path, sources: Iterable[str]) -> dict[str, list[str]]:
    """The pinned Python files grouped by folder: relative folder -> the file names in it.

    Each ``__pycache__`` is then listed once, however many pinned files share it (a suite
    keeps a hundred test modules in one folder)."""
    folders: dict[str, list[str]] = {}
    for rel in sources:
        if rel.endswith(".py"):
            folder, _, name = rel.rpartition("/")
            folders.setdefault(folder, []).append(name)
    return folders


def _listing(folder: Path) -> list[str]:
    """The names in a real folder (not a symlink), sorted; empty when there is none."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(os.listdir(folder))


def _stem_of(pyc_name: str) -> str:
    """``test_x.cpython-311-pytest-9.2.0.pyc`` -> ``test_x``: the source it is cached for."""
    return pyc_name.split(".", 1)[0]


def keep(tree: Path, store: Path) -> int:
    """Replace ``store`` by the pytest-format bytecode in ``tree`` that matches its source
    (the baseline run's scratch copy); returns how many files were kept."""
    staging = store.with_name(store.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    kept = 0
    for cache in tree.rglob(CACHE):
        if cache.is_symlink() or not cache.is_dir():
            continue
        for pyc in cache.glob(f"*{_PYTEST_MARK}*.pyc"):
            source = cache.parent / (pyc.name.split(".", 1)[0] + ".py")
            if pyc.is_symlink() or not source.is_file() or source.is_symlink():
                continue
            data = pyc.read_bytes()
            if not _matches(data, source.read_bytes()):
                continue
            target = staging / pyc.relative_to(tree)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            kept += 1
    shutil.rmtree(store, ignore_errors=True)
    if kept:
        os.replace(staging, store)
    return kept


def sealed_folders(frozen: Sequence[str]) -> list[str]:
    """The ``__pycache__`` folder (relative) beside each pinned Python file."""
    return sorted({str(Path(rel).parent / CACHE) for rel in frozen if rel.endswith(".py")})


def seal(tree: Path, frozen: Sequence[str], store: Path | None) -> None:
    """An empty ``__pycache__`` beside every pinned Python file, holding only the kept
    bytecode of the pinned files whose bytes it matches."""
    for folder, names in _caches(tree, frozen).items():
        source_dir = tree / folder
        if not source_dir.is_dir() or source_dir.is_symlink():
            continue
        cache = source_dir / CACHE
        if cache.is_symlink() or cache.is_file():
            cache.unlink()
        cache.mkdir(exist_ok=True)
        if store is None:
            continue
        kept_dir = store / folder / CACHE
        wanted = {name[:-3] for name in names}
        for pyc_name in _listing(kept_dir):
            stem = _stem_of(pyc_name)
            source = source_dir / f"{stem}.py"
            pytest_format = _PYTEST_MARK in pyc_name and pyc_name.endswith(".pyc")
            if stem not in wanted or not pytest_format or not source.is_file():
                continue
            content = (kept_dir / pyc_name).read_bytes()
            if _matches(content, source.read_bytes()):
                (cache / pyc_name).write_bytes(content)


def planted(tree: Path, frozen: Iterable[str]) -> list[str]:
    """Bytecode beside a pinned Python file (relative paths): the launcher's own copies
    before a run; after it, anything more was written by code under test."""
    found = []
    for folder, names in _caches(tree, frozen).items():
        stems = {name[:-3] for name in names}
        prefix = f"{folder}/{CACHE}/" if folder else f"{CACHE}/"
        found += [
            prefix + entry for entry in _listing(tree / folder / CACHE) if _stem_of(entry) in stems
        ]
    return found
