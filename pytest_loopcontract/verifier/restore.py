"""Give the candidate's scratch copy the referee back: every pinned path its baseline bytes.

The candidate may have edited, deleted or replaced (by a symlink or a folder) any pinned file,
and may have added new files under protected patterns; the scratch copy the tests run in must
hold the referee exactly as the baseline recorded it, whatever the candidate's tree says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.bytecode import planted
from pytest_loopcontract.verifier.hidden import real_folders
from pytest_loopcontract.workspace import (
    TreeEntry,
    WorkspaceError,
    matches_any,
    read_blobs,
    remove_tree,
    sha256_bytes,
)

__all__ = ["referee_changes", "referee_digests", "restore_pins"]


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


def referee_digests(scratch: Path, paths: Iterable[str]) -> dict[str, str]:
    """The SHA-256 of each of the referee's regular files as the run is about to see them."""
    digests = {}
    for rel in [*paths, *planted(scratch, paths)]:  # with the launcher's own bytecode copies
        path = scratch / rel
        if path.is_file() and not path.is_symlink():
            digests[rel] = sha256_bytes(path.read_bytes())
    return digests


def referee_changes(scratch: Path, before: Mapping[str, str]) -> list[Finding]:
    """``referee_changed_during_run``: a pinned file whose bytes differ after the run from
    what the run started with, or a cached ``.pyc`` planted for one (see
    :func:`bytecode.planted`). The sandbox makes those read-only, so this catches what
    process isolation cannot prevent: candidate code that, once imported, rewrites a test not
    collected yet or the golden file a test reads after calling it."""
    after = referee_digests(scratch, before)
    changed = sorted(rel for rel, digest in before.items() if after.get(rel) != digest)
    changed += [rel for rel in planted(scratch, before) if rel not in before]
    if not changed:
        return []
    shown = ", ".join(changed[:5]) + (f" (+{len(changed) - 5} more)" if len(changed) > 5 else "")
    return [
        Finding(
            "referee_changed_during_run",
            f"pinned file(s) changed while the tests ran: {shown}; code under test rewrote "
            "the referee it is judged by",
            path=changed[0],
        )
    ]
