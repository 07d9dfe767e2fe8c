"""Give the candidate's scratch copy the referee back: every pinned path its baseline bytes.

The candidate may have edited, deleted or replaced (by a symlink or a folder) any pinned file,
and may have added new files under protected patterns; the scratch copy the tests run in must
hold the referee exactly as the baseline recorded it, whatever the candidate's tree says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_loopcontract.verifier.baseline import BaselineRecord
from pytest_loopcontract.verifier.hidden import real_folders
from pytest_loopcontract.verifier.workspace import (
    TreeEntry,
    WorkspaceError,
    matches_any,
    read_blobs,
    remove_tree,
    sha256_bytes,
)

__all__ = ["restore_pins"]


def restore_pins(
    root: Path,
    scratch: Path,
    baseline: BaselineRecord,
    candidate: Mapping[str, TreeEntry],
    globs: list[str],
) -> None:
    """Give every pinned path its baseline bytes (only where the candidate's differ) and drop
    new files under protected patterns."""
    differing = {
        path: pin
        for path, pin in baseline.pins.items()
        if (entry := candidate.get(path)) is None
        or entry.blob != pin.blob
        or entry.mode != pin.mode
    }
    blobs = read_blobs(root, (pin.blob for pin in differing.values()))
    for path, pin in differing.items():
        data = blobs[pin.blob]
        if sha256_bytes(data) != pin.sha256:
            raise WorkspaceError(f"pinned object for {path} does not match its SHA-256")
        # A folder the candidate replaced by a symlink (``tests -> /elsewhere``) would send the
        # pinned bytes outside the scratch copy: every folder on the way is made real first.
        target = real_folders(scratch, path)
        if target.is_symlink():
            target.unlink()
        elif target.is_dir():
            remove_tree(target)
        target.write_bytes(data)
        if pin.mode == "100755":
            target.chmod(0o755)
    for path in candidate:
        if path not in baseline.pins and matches_any(path, globs):
            (scratch / path).unlink(missing_ok=True)
