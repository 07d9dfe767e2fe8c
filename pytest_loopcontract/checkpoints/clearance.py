"""Human clearance of checkpoints, recorded in the history.

A dangerous action gets a stable id derived from what was matched, so asking again for the same
action finds the same pending request instead of piling up new ones. Only a named person
resolves it, once. A cleared *command* is single-use (the next identical command asks again);
a cleared *diff* finding stands for that exact content, because the same tree is verified many
times while the loop runs; a cleared *push* is spent only by a push that went through (a push
its gates blocked leaves it for the fixed one, see :mod:`pytest_loopcontract.loop.agent_hooks`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record

__all__ = [
    "Clearance",
    "ClearanceError",
    "checkpoint_id",
    "pending",
    "request",
    "resolve",
    "spend",
    "status_of",
]

RAISED = "checkpoint_raised"
RESOLVED = "checkpoint_resolved"
USED = "checkpoint_used"


class ClearanceError(LoopContractError):
    """An unknown id, a decision already made, or a missing name."""


@dataclass(frozen=True)
class Clearance:
    id: str
    status: str  # cleared | pending | denied
    by: str = ""
    message: str = ""


def checkpoint_id(subject: str, matches: Sequence[Any]) -> str:
    """Stable id of one request: the subject (a command, a ref, a path) and what matched."""
    hasher = hashlib.sha256(subject.encode("utf-8", "surrogateescape"))
    for match in sorted((m.pattern_id, m.path, m.line or 0, m.evidence) for m in matches):
        hasher.update(repr(match).encode("utf-8", "surrogateescape"))
    return "cp-" + hasher.hexdigest()[:10]


def _events(records: Iterable[Record], cid: str) -> tuple[Record | None, Record | None]:
    raised = resolved = None
    for record in records:
        if record.data.get("id") != cid:
            continue
        if record.kind == RAISED and raised is None:
            raised = record
        elif record.kind == RESOLVED and resolved is None:
            resolved = record
    return raised, resolved


def status_of(records: Sequence[Record], cid: str) -> Clearance | None:
    """What the history says about ``cid``: None if it was never raised."""
    raised, resolved = _events(records, cid)
    if raised is None:
        return None
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
    single-use approval moves the request to its next generation (``cp-XXXX.2``), which needs a
    new decision. ``spend_now=False`` leaves a cleared approval unspent, for a caller that
    spends it (:func:`spend`) only once the action it clears went through.
    """
    base = checkpoint_id(subject, matches)
    with history.transaction() as tx:
        spent = (
            0
            if standing
            else sum(1 for r in tx.records if r.kind == USED and r.data.get("base") == base)
        )
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
        raised, resolved = _events(tx.records, cid)
        if raised is None:
            raise ClearanceError(f"no checkpoint {cid!r} (see 'loop-contract checkpoint list')")
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
    """Raised requests with no decision yet, oldest first."""
    decided = {r.data.get("id") for r in records if r.kind == RESOLVED}
    return [r for r in records if r.kind == RAISED and r.data.get("id") not in decided]
