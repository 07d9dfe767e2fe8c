"""Harness integrity: the files that govern the agent keep the bytes a person installed.

Why: the hooks in ``.claude/settings.json``, the git ``pre-push`` hook (and the hook it chains)
and ``.pre-commit-config.yaml`` are the guard rails of an unattended agent. They are not test
files, so the baseline's pins do not cover them, and an agent that can write files can remove
its own guard rails. So each one gets a digest when it is installed (``hook install``) or
adopted (``baseline``), kept in ``.loop-contract/harness.json``; the loop checks them before
every turn and the verifier at every run. A file that is changed, removed, or (for one that was
absent) added raises a checkpoint that names it: a person restores it, or accepts the new bytes
with the ``loop-contract checkpoint resolve`` command the message prints. An acceptance stands
for those exact bytes; any later change asks again. A request still pending when the file is
back to its recorded bytes (or changed again) is withdrawn: nothing waits on bytes that are gone.

A git hook's executable bit is part of its digest: git skips a hook that is not executable.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.fsio import dumps_json, utc_now, write_bytes_atomic
from pytest_loopcontract.history import History
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import Reason

__all__ = [
    "GIT_HOOKS",
    "SETTINGS_FILES",
    "HarnessChange",
    "compare",
    "current",
    "governed",
    "harness_checkpoints",
    "names_of",
    "record",
]

SETTINGS_FILES = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/hooks.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".pre-commit-config.yaml",
)
"""Files in the work tree that steer the agent's hooks (the local settings can disable them)."""
GIT_HOOKS = ("pre-push", "pre-push.before-loop-contract")
"""Git hooks, in git's hooks folder: ours and the user's hook that ours chains."""
FORMAT = 1


@dataclass(frozen=True)
class HarnessChange:
    """One governed file whose bytes differ from the recorded digest."""

    name: str
    change: str  # changed | removed | added
    recorded: str | None
    current: str | None
    by: str

    @property
    def pattern_id(self) -> str:
        return f"harness-{self.change}"

    @property
    def message(self) -> str:
        return f"harness file {self.name} was {self.change} since {self.by} recorded it"

    # the shape clearance.request reads from a match
    kind: str = "harness"
    line: int | None = None

    @property
    def path(self) -> str:
        return self.name

    @property
    def evidence(self) -> str:
        return self.current or "absent"


def _hooks_dir(root: Path) -> Path | None:
    """git's hooks folder (``core.hooksPath`` and worktrees honoured); None outside git."""
    from pytest_loopcontract.workspace import WorkspaceError, git

    try:
        out = git(root, "rev-parse", "--git-path", "hooks").decode().strip()
    except WorkspaceError:
        return None
    hooks = Path(out)
    return hooks if hooks.is_absolute() else root / hooks


def governed(root: Path) -> dict[str, Path]:
    """Every governed file of ``root`` by its name (relative to ``root`` when inside it)."""
    files = {name: root / name for name in SETTINGS_FILES}
    hooks = _hooks_dir(root)
    if hooks is not None:
        for hook in GIT_HOOKS:
            path = hooks / hook
            try:
                name = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                name = str(path)
            files[name] = path
    return files


def digest(path: Path) -> str | None:
    """SHA-256 of the bytes plus the executable bit; None when there is no file."""
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "directory"
    executable = b"x" if mode & stat.S_IXUSR else b"-"
    return hashlib.sha256(executable + b"\0" + data).hexdigest()


def current(root: Path, names: Iterable[str] | None = None) -> dict[str, str | None]:
    """The digests of the governed files now (all of them, or ``names``)."""
    files = governed(root)
    chosen = files if names is None else {n: files[n] for n in names if n in files}
    return {name: digest(path) for name, path in chosen.items()}


def _read(root: Path) -> dict[str, Any] | None:
    """The recorded entries; None when nothing was ever recorded. Raises ValueError when the
    record cannot be read (a damaged record is a finding, never "nothing recorded")."""
    path = StateDir.of(root).harness
    try:
        document = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read ({exc})") from None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict):
        raise ValueError(f"{path} holds no 'files' table")
    return files


def record(
    root: Path,
    names: Iterable[str] | None = None,
    *,
    by: str,
    before: Mapping[str, str | None] | None = None,
) -> Path:
    """Record the digests of ``names`` (all governed files when None) as installed by ``by``.

    ``before`` is what the files held before an installer wrote them: a file whose earlier
    bytes had already drifted from its record keeps that record, so reinstalling a hook does
    not launder a change made in between (the drift still asks a person).
    """
    try:
        files = _read(root) or {}
    except ValueError:
        files = {}
    now = current(root, names)
    for name, sha in now.items():
        old = files.get(name)
        if before is not None and isinstance(old, dict) and old.get("sha256") != before.get(name):
            continue
        files[name] = {"sha256": sha, "by": by, "at": utc_now()}
    StateDir.of(root).ensure()
    target = StateDir.of(root).harness
    text = dumps_json({"format": FORMAT, "files": files}, indent=2, sort_keys=True) + "\n"
    write_bytes_atomic(target, text.encode("utf-8"))
    return target


def compare(recorded: Mapping[str, Any], now: Mapping[str, str | None]) -> list[HarnessChange]:
    """The governed files whose digest differs from the record (pure)."""
    changes = []
    for name in sorted(recorded):
        entry = recorded[name]
        if not isinstance(entry, Mapping):
            entry = {}
        was = entry.get("sha256")
        was = was if isinstance(was, str) else None
        is_now = now.get(name)
        if was == is_now:
            continue
        change = "removed" if is_now is None else "added" if was is None else "changed"
        changes.append(HarnessChange(name, change, was, is_now, str(entry.get("by") or "?")))
    return changes


def harness_checkpoints(root: Path, history: History | None = None) -> list[Reason]:
    """Checkpoint reasons for the governed files that drifted from their record.

    ``checkpoint_pending`` (exit 24) until a person accepts the new bytes, ``checkpoint_denied``
    when a person refused them (the agent restores the file). An unreadable record is pending
    too: a damaged record must not read as "nothing to check". A pending request whose drift
    is gone (the file restored, changed again, the record readable again) is withdrawn.
    """
    from pytest_loopcontract.checkpoints import clearance

    history = history or History(StateDir.of(root).folder)
    try:
        recorded = _read(root)
    except ValueError as exc:
        damaged = HarnessChange(StateDir.NAME + "/harness.json", "damaged", None, "?", "?")
        request = clearance.request(
            history, f"harness-record:{exc}", [damaged], kind="harness", standing=True
        )
        what = f"{exc}: restore it or record again with 'loop-contract baseline'"
        return [_reason(root, request, what)]
    if not recorded:
        return []
    changes = compare(recorded, current(root, list(recorded)))
    reasons = []
    for change in changes:
        request = clearance.request(
            history, _subject(change), [change], kind="harness", standing=True
        )
        if request.status != "cleared":
            reasons.append(_reason(root, request, change.message))
    _withdraw_gone(history, changes)
    return reasons


def _subject(change: HarnessChange) -> str:
    return f"harness:{change.name}:{change.evidence}"


def _withdraw_gone(history: History, changes: Sequence[HarnessChange]) -> None:
    """Withdraw the pending harness requests the files (and a readable record) no longer
    raise: a restored file, one changed again (asked again under its own id)."""
    from pytest_loopcontract.checkpoints import clearance

    now = {c.name: clearance.checkpoint_id(_subject(c), [c]) for c in changes}
    raised_now = set(now.values())

    def why(raised: Mapping[str, Any], records: Sequence[Any]) -> str | None:
        if raised.get("base") in raised_now:
            return None
        subject = str(raised.get("subject") or "")
        if subject.startswith("harness-record:"):
            return "the harness record can be read again"
        found = raised.get("matches") or [{}]
        name = str(found[0].get("path") or "") if isinstance(found[0], Mapping) else ""
        name = name or subject.removeprefix("harness:").rpartition(":")[0]
        if name in now:
            return f"{name} changed again; it waits as {clearance.latest_id(records, now[name])}"
        return f"{name} is back to its recorded bytes"

    clearance.withdraw(history, "harness", why)


def _reason(root: Path, request: Any, what: str) -> Reason:
    from pytest_loopcontract.checkpoints.clearance import person_name, resolve_command

    if request.status == "denied":
        return Reason(
            "checkpoint_denied",
            f"{request.id}: {what} ({request.message}): restore the file",
        )
    return Reason(
        "checkpoint_pending",
        f"{request.id}: {what} - a person restores it, or accepts it with "
        f"'{resolve_command(request.id, person_name(root))}'",
    )


def names_of(root: Path, paths: Sequence[Path]) -> list[str]:
    """The governed names of ``paths`` (files an installer just wrote)."""
    wanted = {os.path.realpath(p) for p in paths}
    return [n for n, p in governed(root).items() if os.path.realpath(p) in wanted]
