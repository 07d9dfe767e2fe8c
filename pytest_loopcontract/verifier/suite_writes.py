"""Which files of its own tree the honest suite writes, measured at baseline.

The referee's files are read-only while a candidate is verified, so candidate code cannot
rewrite a golden file or a test not collected yet. Some honest suites write into their own test
folder (a test refreshes a template's mtime, another writes its example data back through the
library under test); binding those read-only makes the honest fix fail where the baseline
passed. The baseline run is the measure: a file the unchanged suite wrote is the suite's, not
a lever only a cheat would pull. What kind of write it was decides what stays checked: a file
whose bytes the suite changed is left writable and unhashed (the tests rewrite it anyway); a
file whose bytes stayed (only its times or mode moved) is left writable and still hashed after
the run, so a candidate that rewrites its content is caught.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CONTENT", "METADATA", "FileStamp", "stamp_tree", "suite_writes"]

CONTENT = "content"
METADATA = "metadata"

FileStamp = tuple[int, int, int]  # size, mtime in ns, mode


def stamp_tree(root: Path) -> dict[str, FileStamp]:
    """Size, mtime and mode of every regular file under ``root`` (symlinks and bytecode
    caches left out), relative POSIX paths; cheap enough to take around every baseline run."""
    stamps: dict[str, FileStamp] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if os.path.isfile(path) and not os.path.islink(path):
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                stamps[rel] = (info.st_size, info.st_mtime_ns, info.st_mode)
    return stamps


def git_blob_id(data: bytes, id_length: int) -> str:
    """The id git gives ``data`` as a blob (SHA-1, or SHA-256 in a repository of that format)."""
    algorithm = hashlib.sha1 if id_length == 40 else hashlib.sha256
    return algorithm(b"blob %d\0" % len(data) + data).hexdigest()


def suite_writes(
    root: Path, before: Mapping[str, FileStamp], blobs: Mapping[str, str]
) -> dict[str, str]:
    """``{path: CONTENT | METADATA}`` for the files present before the run whose stamp the run
    changed: CONTENT when the bytes differ from the committed blob (or the file is gone, or it
    was not committed), METADATA when only the stamp moved."""
    after = stamp_tree(root)
    written: dict[str, str] = {}
    for rel, stamp in before.items():
        now = after.get(rel)
        if now == stamp:
            continue
        blob = blobs.get(rel)
        same = (
            now is not None
            and blob is not None
            and git_blob_id((root / rel).read_bytes(), len(blob)) == blob
        )
        written[rel] = METADATA if same else CONTENT
    return written
