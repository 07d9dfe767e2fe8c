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


def _caches(tree: Path, sources: Iterable[str]) -> Iterable[tuple[str, Path, Path]]:
    """(relative source, its path, its ``__pycache__``) for the Python files among sources."""
    for rel in sources:
        if rel.endswith(".py"):
            path = tree / rel
            yield rel, path, path.parent / CACHE


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
    for rel, source, cache in _caches(tree, frozen):
        if not source.parent.is_dir() or source.parent.is_symlink():
            continue
        if cache.is_symlink() or cache.is_file():
            cache.unlink()
        cache.mkdir(exist_ok=True)
        kept = store / rel if store is not None else None
        if kept is None or not kept.parent.joinpath(CACHE).is_dir() or not source.is_file():
            continue
        data = source.read_bytes()
        stem = source.name[:-3] + "."
        for pyc in (kept.parent / CACHE).glob(f"{stem}*{_PYTEST_MARK}*.pyc"):
            content = pyc.read_bytes()
            if _matches(content, data):
                (cache / pyc.name).write_bytes(content)


def planted(tree: Path, frozen: Iterable[str]) -> list[str]:
    """Bytecode beside a pinned Python file (relative paths): the launcher's own copies
    before a run; after it, anything more was written by code under test."""
    found = []
    for rel, source, cache in _caches(tree, frozen):
        stem = source.name[:-3] + "."
        if cache.is_dir() and not cache.is_symlink():
            found += [
                str(Path(rel).parent / CACHE / e.name)
                for e in sorted(cache.iterdir())
                if e.name.startswith(stem)
            ]
    return found
