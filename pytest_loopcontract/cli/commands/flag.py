"""``loop-contract flag``: the agent's honest way out of a task it cannot do as specified.

An agent that finds the acceptance tests contradicting the goal, or a permission it needs
missing, has two moves left in a loop that only rewards green: cheat, or say so. This makes the
second one a command. The flag becomes a checkpoint (kind ``flag``) carrying the agent's reason
and evidence, so the loop stops for a person at once (exit 24), the way any other checkpoint
stops it; the person reads it (``loop-contract checkpoint list``) and resolves it: approving
agrees the task must change (fix the contract or the tests, then resume), denying sends the
agent back to work. ImpossibleBench measured that offering this exit cut one frontier model's
cheating on impossible tasks from 54% to 9%.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pytest_loopcontract.checkpoints import clearance
from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import loop_history, repo_root
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN

__all__ = ["FLAG_KIND", "MAX_REASON_CHARS", "flag", "flag_match"]

FLAG_KIND = "flag"
MAX_REASON_CHARS = 2000
MAX_EVIDENCE = 10


def flag_match(reason: str, evidence: Sequence[str] = ()) -> Match:
    """The checkpoint match a flag raises (also used for a seat report's ``flag`` field)."""
    text = " ".join(reason.split())[:MAX_REASON_CHARS]
    shown = "; ".join(" ".join(e.split())[:500] for e in evidence[:MAX_EVIDENCE])
    return Match(
        pattern_id="agent-flag",
        kind=FLAG_KIND,
        message=f"the agent says the task cannot be done as specified: {text}",
        evidence=shown or text,
        always=True,
    )


def flag(reason: str, *, evidence: Sequence[str] = (), as_json: bool = False) -> int:
    """Raise the flag as a pending checkpoint; exit 24 (a person decides)."""
    if not reason.strip():
        raise CommandError(
            "loop-contract flag needs --reason TEXT: what makes the task impossible as specified"
        )
    match = flag_match(reason, evidence)
    subject = "flag:" + hashlib.sha256(match.message.encode()).hexdigest()[:12]
    root = repo_root()
    request = clearance.request(loop_history(root), subject, [match], kind=FLAG_KIND)
    by = clearance.person_name(root)
    advice = (
        f"a person reads it (loop-contract checkpoint list) and resolves it: "
        f"'{clearance.resolve_command(request.id, by)}' agrees the task must change; "
        f"'{clearance.resolve_command(request.id, by, deny=True)}' sends the agent back to work"
    )
    if as_json:
        print_json({"id": request.id, "status": request.status, "message": match.message})
    else:
        print(f"flagged: {request.id} ({request.status}) - {advice}")
    return EXIT_AWAIT_HUMAN if request.status == "pending" else 0
