"""``loop-contract checkpoint check|list|resolve``: dangerous actions wait for a named person."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.cli.commands.loop import strip_separator
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.loop.agent_hooks import check_command
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN

__all__ = ["check", "list_checkpoints", "resolve"]


def check(words: Sequence[str], *, as_json: bool = False) -> int:
    """0 when the command is clear (or cleared), 24 with a pending id when a person must."""
    root = repo_root()
    command = strip_separator(words)
    if not command:
        raise CommandError("usage: loop-contract checkpoint check -- COMMAND...")
    matches, request = check_command(root, command if len(command) > 1 else command[0])
    if as_json:
        print_json(
            {
                "status": request.status if request else "clear",
                "id": request.id if request else None,
                "matches": [
                    {"pattern_id": m.pattern_id, "message": m.message, "evidence": m.evidence}
                    for m in matches
                ],
            }
        )
    else:
        _print_check(matches, request, root)
    return 0 if request is None or request.status == "cleared" else EXIT_AWAIT_HUMAN


def _print_check(matches: Sequence[Match], request: clearance.Clearance | None, root: Path) -> None:
    if request is None:
        print("clear: no checkpoint matches")
        return
    for match in matches:
        print(f"  {match.pattern_id}: {match.message} ({match.evidence})")
    advice = (
        ""
        if request.status != "pending"
        else " - a person clears it: "
        + clearance.resolve_command(request.id, clearance.person_name(root))
    )
    print(f"{request.status}: {request.id}{advice}")


def list_checkpoints(*, show_all: bool = False, as_json: bool = False) -> int:
    """The pending checkpoints (every one with ``show_all``)."""
    records = loop_history(repo_root()).read().records
    checkpoints = reduce(records)["checkpoints"].values()
    entries = [cp for cp in checkpoints if show_all or cp.get("status") == "pending"]
    if as_json:
        print_json(entries)
        return 0
    if not entries:
        print("no pending checkpoints")
    for cp in entries:
        print(_describe(cp))
    return 0


def _describe(cp: Mapping[str, Any]) -> str:
    by = f" by {cp['by']}" if cp.get("by") else ""
    gone = f" (withdrawn: {cp['withdrawn']})" if cp.get("status") == "withdrawn" else ""
    return (
        f"{cp['id']} [{cp.get('status')}{by}] {cp.get('kind')}: "
        f"{cp.get('message')} :: {cp.get('subject')}{gone}"
    )


def resolve(cid: str, *, by: str, deny: bool = False, note: str = "") -> int:
    """A named person approves (or denies) one checkpoint; it is recorded in the history."""
    record = clearance.resolve(loop_history(repo_root()), cid, by=by, deny=deny, note=note)
    done = "approved" if record.data["decision"] == "approve" else "denied"
    print(f"{cid} {done} by {record.data['by']}")
    return 0
