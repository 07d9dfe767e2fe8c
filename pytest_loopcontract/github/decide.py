"""``loop-contract github gate``: the human gate, from the reviews on the proposed winner.

Why from the API and not from the event: a ``pull_request_review`` event from a fork runs with a
read-only token and its payload is whatever the event says; the decision must rest on what the
API says now (the pull request's current head, the reviewer's permission, their latest review).
So this mode reads the last published state from the data branch, asks
:func:`~.review_gate.gate_for_pr` about the proposed winner, and only then records anything:
the decision and the lessons go to the data branch, every candidate's sticky comment is
updated to say what was decided, and the winner's status follows the person: ``success`` only
after an approval that counts (publish never sets it), ``failure`` after a rejection, back to
``pending`` when the approval is dismissed. A decision is re-read on every review event while
the pull request is open; once it is merged, the recorded decision is final.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.fsio import utc_now
from pytest_loopcontract.github.comments import upsert_sticky_comment
from pytest_loopcontract.github.contest_state import DATA_BRANCH, read_trusted_state, write_state
from pytest_loopcontract.github.participants import participant_logins, token_login
from pytest_loopcontract.github.publish import PENDING_DESCRIPTION, comment_body
from pytest_loopcontract.github.pulls import CandidatePR, contest_pulls
from pytest_loopcontract.github.records import record_writer
from pytest_loopcontract.github.review_gate import GateDecision, gate_for_pr
from pytest_loopcontract.github.state_branch import update_files
from pytest_loopcontract.github.statuses import StatusDecision, StatusState, set_winner_statuses

__all__ = ["LESSONS_PATH", "ROUTES_PATH", "GateOutcome", "gate", "record_lessons"]

log = logging.getLogger("loopcontract.github")


LESSONS_PATH = "loop-contract/lessons.jsonl"
ROUTES_PATH = "loop-contract/routes.json"


def _not_ours(repo: Repository, path: str, bot_login: str) -> bool:
    problem = record_writer(repo, path, branch=DATA_BRANCH).problem(bot_login)
    if problem is not None:
        log.warning("not carried forward: %s", problem)
    return problem is not None


def record_lessons(repo: Repository, state: Mapping[str, Any], *, bot_login: str) -> str | None:
    """At the decision: append the contest's lessons (new ids only) to the data branch's
    ``lessons.jsonl`` and demote the first gate-failing seat in ``routes.json`` (held when
    the panel was degraded), in one commit that is recomputed if another writer got there
    first. Returns the new head, or None when there was nothing to write."""
    result = state["result"]
    lessons = [dict(item) for item in state.get("lessons") or []]
    failing = sorted(
        (c for c in result["candidates"] if c["stage"] in ("hard", "measured")),
        key=lambda c: int(state["pulls"][c["seat"]]["pr"]),
    )
    matrix = result.get("matrix") or {}
    degraded = any(v.get("degraded") for v in (matrix.get("candidates") or {}).values())
    domain = str(state.get("domain") or "")
    if not lessons and not (failing and domain):
        return None
    # Only what the action wrote is carried forward (:mod:`.records`): a file someone else
    # changed last is started again from this decision.
    untrusted = {path for path in (LESSONS_PATH, ROUTES_PATH) if _not_ours(repo, path, bot_login)}

    def change(read: Callable[[str], bytes | None]) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        existing = b"" if LESSONS_PATH in untrusted else read(LESSONS_PATH) or b""
        known = set()
        for line in existing.splitlines():
            try:
                known.add(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError):
                continue  # a hand-edited line is kept as it is, and not trusted
        new = [item for item in lessons if item.get("id") not in known]
        if new:
            lines = b"".join(json.dumps(i, sort_keys=True).encode() + b"\n" for i in new)
            out[LESSONS_PATH] = (
                existing + (b"" if existing.endswith(b"\n") or not existing else b"\n") + lines
            )
        if failing and domain:
            try:
                kept = b"{}" if ROUTES_PATH in untrusted else read(ROUTES_PATH) or b"{}"
                routes = json.loads(kept)
            except ValueError:
                routes = {}
            routes = routes if isinstance(routes, dict) else {}
            entry = routes.setdefault(domain, {}).setdefault(
                failing[0]["seat"], {"demotions": 0, "held": 0, "last_run": ""}
            )
            if entry.get("last_run") != result["run_id"]:
                entry["held" if degraded else "demotions"] = (
                    int(entry.get("held" if degraded else "demotions", 0)) + 1
                )
                entry["last_run"] = result["run_id"]
                out[ROUTES_PATH] = (json.dumps(routes, indent=1, sort_keys=True) + "\n").encode()
        return out

    return update_files(repo, change, f"loop-contract: lessons of {result['run_id']}")


@dataclass(frozen=True)
class GateOutcome:
    decision: str  # approve | reject | pending | none
    by: str | None
    reason: str
    winner_pr: int | None


def gate(
    repo: Repository,
    *,
    contract_id: str,
    bot_login: str,
    seat_logins: frozenset[str] = frozenset(),
    pr_number: int | None = None,
    summary_pointer: str = "The full report is in the job summary of the publish run.",
) -> GateOutcome:
    """Decide the contest from the reviews on its proposed winner, as they stand now.

    ``seat_logins``: the contract's seat names and ``seats[].github`` logins
    (:func:`.participants.contract_logins`). The reviews are read every time: a dismissal, a
    new push or a later ``changes_requested`` reopens a recorded decision while the pull
    request is open; a merged winner's decision is final. Only here does
    ``loop-contract/winner`` turn ``success``."""
    read = read_trusted_state(repo, contract_id, bot_login=bot_login)
    if read.problem is not None:
        reason = f"the recorded contest state cannot be used: {read.problem}"
        return GateOutcome("none", None, reason, None)
    state = read.document
    if state is None:
        return GateOutcome("none", None, "no published contest state yet", None)
    result: dict[str, Any] = state["result"]
    pulls: Mapping[str, Any] = state["pulls"]
    winner = result.get("winner")
    if not winner or winner not in pulls:
        return GateOutcome("none", None, "the contest has no proposed winner", None)
    winner_pr, verified_sha = int(pulls[winner]["pr"]), str(pulls[winner]["head_sha"])
    if pr_number is not None and pr_number != winner_pr:
        return GateOutcome(
            "none", None, f"#{pr_number} is not the proposed winner (#{winner_pr})", winner_pr
        )
    recorded = result.get("decision")
    # every pull request that claims the contest, on any base and refused or not: all of
    # their authors take part, and none of them may share the winner's head
    candidates = contest_pulls(repo, contract_id)
    participants = participant_logins(
        candidates=candidates,
        recorded_pulls=pulls,
        named=seat_logins,
        bot_login=bot_login,
        token=token_login(repo),
    )
    decision: GateDecision = gate_for_pr(repo, winner_pr, seat_logins=participants)
    if recorded and decision.merged:
        return GateOutcome(recorded["decision"], recorded.get("by"), "already decided", winner_pr)
    verb, reason, status = _verdict_of(decision, verified_sha, candidates, winner_pr)
    if verb == "pending" and not recorded:
        log.info("gate pending on #%d: %s", winner_pr, reason)
        return GateOutcome("pending", None, reason, winner_pr)
    if recorded and recorded.get("decision") == verb and recorded.get("by") == decision.by:
        return GateOutcome(verb, decision.by, "already decided", winner_pr)
    _record(result, verb, decision, reason, winner)
    state["gate"] = decision.ledger_payload()
    _announce(repo, contract_id, state, verb, bot_login, summary_pointer)
    set_winner_statuses(repo, [StatusDecision(winner_pr, verified_sha, *status)])
    return GateOutcome(verb, decision.by if verb != "pending" else None, reason, winner_pr)


def _announce(
    repo: Repository,
    contract_id: str,
    state: dict[str, Any],
    verb: str,
    bot_login: str,
    summary_pointer: str,
) -> None:
    """Write the decided state (and its lessons), then refresh every candidate's comment."""
    write_state(repo, contract_id, state)
    if verb != "pending":
        record_lessons(repo, state, bot_login=bot_login)
    result, pulls = state["result"], state["pulls"]
    for entry in result["candidates"]:
        upsert_sticky_comment(
            repo,
            int(pulls[entry["seat"]]["pr"]),
            contract_id=contract_id,
            body=comment_body(result, entry, summary_pointer),
            bot_login=bot_login,
        )


def _verdict_of(
    decision: GateDecision,
    verified_sha: str,
    candidates: Sequence[CandidatePR],
    winner_pr: int,
) -> tuple[str, str, tuple[StatusState, str]]:
    """The gate's answer, its reason, and the winner's status (state, description)."""
    if decision.head_sha and decision.head_sha != verified_sha:
        reason = "the winner's head moved since it was verified: wait for the next verification"
        return "pending", reason, ("failure", "head moved since verification: not approved")
    twins = [c.number for c in candidates if c.head_sha == verified_sha and c.number != winner_pr]
    if twins:
        shown = ", ".join(f"#{n}" for n in twins)
        reason = f"the winner's head commit is also the head of {shown}: no approval can count"
        return "pending", reason, ("failure", f"head commit shared with {shown}: no winner")
    if decision.decision == "approve":
        return "approve", decision.reason, ("success", f"approved by {decision.by}")
    if decision.decision == "reject":
        by = decision.by
        return "reject", decision.reason, ("failure", f"rejected at the human gate by {by}")
    return "pending", decision.reason, ("pending", PENDING_DESCRIPTION)


def _record(
    result: dict[str, Any], verb: str, decision: GateDecision, reason: str, winner: str
) -> None:
    """Write the decision into the result; ``pending`` reopens (clears) a recorded one."""
    if verb == "pending":
        log.info("gate reopened: %s", reason)
        result["decision"] = None
        result["status"] = "awaiting_human"
        return
    result["decision"] = {
        "decision": verb,
        "by": decision.by or "",
        "reason": reason,
        "at": utc_now(),
        "seat": winner if verb == "approve" else None,
    }
    result["status"] = "decided" if verb == "approve" else "rejected"
