"""Human clearance of checkpoints, recorded in the history.

A dangerous action gets a stable id derived from what was matched, so asking again for the same
action finds the same pending request instead of piling up new ones. Only a named person
resolves it, once. A cleared *command* is single-use (the next identical command asks again);
a cleared *diff* finding stands for that exact content, because the same tree is verified many
times while the loop runs; a cleared *push* is spent only by a push that went through (a push
its gates blocked leaves it for the fixed one, see :mod:`pytest_loopcontract.loop.agent_hooks`).

A request the *tree* raised (:data:`TREE_KINDS`: content in the candidate's diff, a drifted
harness file, a touched ``stop_when`` path) is looked at again whenever the tree is: while it
is pending and its cause is gone, it is withdrawn (:func:`withdraw`, a ``checkpoint_withdrawn``
record saying why), so nothing waits on a file that is no longer there. If the same cause comes
back it is asked again under the next generation's id (``cp-XXXX.2``). A request an agent made
(a command, a push, a flag) and any decided request stay as they are.

Every message that tells a person how to decide prints the command whole
(:func:`resolve_command`), with a real name from git's ``user.name`` or the login name.
"""

from __future__ import annotations

import getpass
import hashlib
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record

__all__ = [
    "TREE_KINDS",
    "Clearance",
    "ClearanceError",
    "checkpoint_id",
    "latest_id",
    "pending",
    "person_name",
    "request",
    "resolve",
    "resolve_command",
    "spend",
    "status_of",
    "withdraw",
]

RAISED = "checkpoint_raised"
RESOLVED = "checkpoint_resolved"
USED = "checkpoint_used"
WITHDRAWN = "checkpoint_withdrawn"

TREE_KINDS = frozenset({"diff", "harness", "stop_rule"})
"""Kinds of request the tree raises (what a verify finds in the candidate's files and diff, the
governed harness files, the paths a loop's ``stop_when`` guards), as opposed to those an agent
asks for (``command``, ``push``, ``flag``). Only these are withdrawn when their cause is gone."""

UNKNOWN_PERSON = '"<your name>"'


class ClearanceError(LoopContractError):
    """An unknown id, a decision already made, or a missing name."""


@dataclass(frozen=True)
class Clearance:
    id: str
    status: str  # cleared | pending | denied | withdrawn
    by: str = ""
    message: str = ""


def person_name(root: Path | None = None) -> str:
    """The name a printed resolve command carries: git's ``user.name`` where ``root`` is (the
    person who works in this repository), else the login name; "" when neither is known."""
    try:
        found = subprocess.run(
            ["git", "config", "user.name"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        name = found.stdout.strip() if found.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError, UnicodeError):
        name = ""
    if name:
        return name
    try:
        return getpass.getuser().strip()
    except (KeyError, OSError):
        return ""


def _shell_word(text: str) -> str:
    """``text`` as one shell word: bare when it can be, else in double quotes (messages put a
    command in single quotes), else quoted by :func:`shlex.quote`."""
    quoted = shlex.quote(text)
    if quoted == text:
        return text
    if not any(c in text for c in '"$`\\!\n'):
        return f'"{text}"'
    return quoted


def resolve_command(cid: str, by: str, *, deny: bool = False) -> str:
    """``loop-contract checkpoint resolve ID --by NAME [--deny]`` as a shell runs it: the real
    id, ``by`` quoted where it needs it (``--by "<your name>"`` only when no name is known)."""
    name = _shell_word(by.strip()) if by.strip() else UNKNOWN_PERSON
    command = f"loop-contract checkpoint resolve {_shell_word(cid)} --by {name}"
    return command + " --deny" if deny else command


def checkpoint_id(subject: str, matches: Sequence[Any]) -> str:
    """Stable id of one request: the subject (a command, a ref, a path) and what matched."""
    hasher = hashlib.sha256(subject.encode("utf-8", "surrogateescape"))
    for match in sorted((m.pattern_id, m.path, m.line or 0, m.evidence) for m in matches):
        hasher.update(repr(match).encode("utf-8", "surrogateescape"))
    return "cp-" + hasher.hexdigest()[:10]


@dataclass(frozen=True)
class _Events:
    """The records about one id: raised, then resolved by a person or withdrawn (first of each)."""

    raised: Record | None = None
    resolved: Record | None = None
    withdrawn: Record | None = None


def _events(records: Iterable[Record], cid: str) -> _Events:
    found: dict[str, Record] = {}
    for record in records:
        if record.data.get("id") == cid and record.kind in (RAISED, RESOLVED, WITHDRAWN):
            found.setdefault(record.kind, record)
    return _Events(found.get(RAISED), found.get(RESOLVED), found.get(WITHDRAWN))


def _withdrawn_first(events: _Events) -> bool:
    """Withdrawn while it was pending (a decision recorded before it stands)."""
    if events.withdrawn is None:
        return False
    return events.resolved is None or events.withdrawn.seq < events.resolved.seq


def status_of(records: Sequence[Record], cid: str) -> Clearance | None:
    """What the history says about ``cid``: None if it was never raised."""
    events = _events(records, cid)
    raised, resolved = events.raised, events.resolved
    if raised is None:
        return None
    if _withdrawn_first(events):
        assert events.withdrawn is not None
        return Clearance(cid, "withdrawn", message=str(events.withdrawn.data.get("why", "")))
    if resolved is None:
        return Clearance(cid, "pending", message=str(raised.data.get("message", "")))
    by = str(resolved.data.get("by", ""))
    if resolved.data.get("decision") == "deny":
        return Clearance(cid, "denied", by, f"denied by {by}")
    return Clearance(cid, "cleared", by, f"cleared by {by}")


def request(
    history: History,
    subject: str,
    matches: Sequence[Any],
    *,
    kind: str,
    standing: bool = False,
    spend_now: bool = True,
) -> Clearance:
    """Ask for clearance: returns cleared (and spends a single-use approval), pending or denied.

    Atomic under the history lock, so two agents asking at once raise one request. A spent
    single-use approval, or a withdrawn request, moves the request to its next generation
    (``cp-XXXX.2``), which needs a new decision. ``spend_now=False`` leaves a cleared approval
    unspent, for a caller that spends it (:func:`spend`) only once the action it clears went
    through.
    """
    base = checkpoint_id(subject, matches)
    with history.transaction() as tx:
        spent = (
            0
            if standing
            else sum(1 for r in tx.records if r.kind == USED and r.data.get("base") == base)
        )
        spent += sum(1 for r in tx.records if r.kind == WITHDRAWN and r.data.get("base") == base)
        cid = base if spent == 0 else f"{base}.{spent + 1}"
        known = status_of(tx.records, cid)
        if known is not None:
            if known.status == "cleared" and not standing and spend_now:
                tx.append(USED, {"id": cid, "base": base, "subject": subject})
            return known
        message = "; ".join(dict.fromkeys(m.message for m in matches))
        tx.append(
            RAISED,
            {
                "id": cid,
                "base": base,
                "kind": kind,
                "subject": subject,
                "pattern_id": ",".join(sorted({m.pattern_id for m in matches})),
                "message": message,
                "evidence": [m.evidence for m in matches][:10],
                "always": any(getattr(m, "always", False) for m in matches),
                "matches": [
                    {
                        "pattern_id": m.pattern_id,
                        "kind": m.kind,
                        "message": m.message,
                        "evidence": m.evidence,
                        "path": m.path,
                        "line": m.line,
                    }
                    for m in matches
                ][:50],
            },
        )
    return Clearance(cid, "pending", message=message)


def spend(history: History, cleared: Clearance, subject: str) -> None:
    """Spend a single-use approval :func:`request` returned unspent (``spend_now=False``):
    the next request for the same action moves to the next generation."""
    base = cleared.id.split(".", 1)[0]
    with history.transaction() as tx:
        if not any(r.kind == USED and r.data.get("id") == cleared.id for r in tx.records):
            tx.append(USED, {"id": cleared.id, "base": base, "subject": subject})


def resolve(history: History, cid: str, *, by: str, deny: bool = False, note: str = "") -> Record:
    """Record a named person's decision on a pending request. A decision is made once."""
    if not by.strip():
        raise ClearanceError("a checkpoint is resolved by a named person: pass --by NAME")
    with history.transaction() as tx:
        events = _events(tx.records, cid)
        raised, resolved = events.raised, events.resolved
        if raised is None:
            raise ClearanceError(f"no checkpoint {cid!r} (see 'loop-contract checkpoint list')")
        if events.withdrawn is not None and resolved is None:
            raise ClearanceError(
                f"checkpoint {cid} was withdrawn ({events.withdrawn.data.get('why')}); "
                "nothing waits for a decision"
            )
        if resolved is not None:
            done = "denied" if resolved.data.get("decision") == "deny" else "approved"
            raise ClearanceError(
                f"checkpoint {cid} was already {done} by "
                f"{resolved.data.get('by')}; a decision is made once"
            )
        return tx.append(
            RESOLVED,
            {
                "id": cid,
                "by": by.strip(),
                "decision": "deny" if deny else "approve",
                "note": note,
            },
        )


def pending(records: Sequence[Record]) -> list[Record]:
    """Raised requests with no decision yet (and not withdrawn), oldest first."""
    decided = {r.data.get("id") for r in records if r.kind in (RESOLVED, WITHDRAWN)}
    return [r for r in records if r.kind == RAISED and r.data.get("id") not in decided]


Why = Callable[[Mapping[str, Any], Sequence[Record]], str | None]
"""Why a pending request no longer holds (None: it still does), from its ``checkpoint_raised``
data and the whole history."""


def latest_id(records: Sequence[Record], base: str) -> str:
    """The id the newest request of ``base`` was raised under (``base`` when none was)."""
    found = base
    for record in records:
        if record.kind == RAISED and record.data.get("base") == base:
            found = str(record.data.get("id"))
    return found


def withdraw(history: History, kind: str, why: Why) -> list[Record]:
    """Withdraw the pending requests of ``kind`` (one of :data:`TREE_KINDS`) whose cause is
    gone: ``why`` says why a request no longer holds, or None to leave it pending. One
    ``checkpoint_withdrawn`` record each (id, base, kind, subject, why), under the history
    lock; the records are returned.

    Nothing is written, and no history file is made, when nothing is withdrawn.
    """
    if kind not in TREE_KINDS:
        raise ValueError(f"only a request the tree raised is withdrawn, not kind {kind!r}")

    def stale(records: Sequence[Record]) -> list[tuple[Record, str]]:
        found = []
        for record in pending(records):
            if record.data.get("kind") == kind and (reason := why(record.data, records)):
                found.append((record, reason))
        return found

    if not stale(history.read().records):
        return []
    with history.transaction() as tx:
        return [
            tx.append(
                WITHDRAWN,
                {
                    "id": record.data.get("id"),
                    "base": record.data.get("base"),
                    "kind": kind,
                    "subject": record.data.get("subject"),
                    "why": reason,
                },
            )
            for record, reason in stale(tx.records)
        ]
