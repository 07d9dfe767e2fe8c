"""The ``loop-contract/winner`` commit status: pending on the proposed winner (publish), success
only after a person's approval (the gate), failure elsewhere.

Why it is built this way:

* **A status belongs to a commit, not to a pull request.** Branch protection reads the status
  of the head commit, so two pull requests with the same head SHA share one status. If the
  winner's head commit is also another candidate's head, a success there would mark the other
  pull request as the winner too, so no success is set at all: the shared SHA gets a failure
  saying why. At most one success is ever set; a plan that proposes more sets none.
* **Plan, then write.** :func:`plan_statuses` is pure (what to post per SHA, sanitised), so the
  rules are tested without a server; :func:`set_winner_statuses` posts the plan, failures and
  pendings first and the one success last, so a run that dies halfway leaves no premature
  success. A status already present with the same state, description and URL is not posted
  again.
* **Descriptions are data.** They may quote seat text; control characters are removed,
  whitespace is collapsed and the text is cut to GitHub's 140 characters.
* Posting a status twice has the effect of posting it once, so a failed POST is retried here
  (the transport does not repeat POSTs).
"""

from __future__ import annotations

import logging
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import urlsplit

from github.Commit import Commit
from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.github.pulls import is_commit_sha

__all__ = [
    "MAX_DESCRIPTION",
    "WINNER_CONTEXT",
    "PlannedStatus",
    "StatusDecision",
    "plan_statuses",
    "sanitize_description",
    "set_winner_statuses",
]

log = logging.getLogger("loopcontract.github")

WINNER_CONTEXT = "loop-contract/winner"
MAX_DESCRIPTION = 140
POST_ATTEMPTS = 3
StatusState = Literal["success", "failure", "pending"]
_STATES = ("success", "failure", "pending")


@dataclass(frozen=True)
class StatusDecision:
    """What the contest decided for one candidate pull request."""

    pr: int
    sha: str
    state: StatusState
    description: str
    target_url: str | None = None


@dataclass(frozen=True)
class PlannedStatus:
    """One status to post on one commit (``prs``: the candidates whose head it is)."""

    sha: str
    state: StatusState
    description: str
    target_url: str | None
    prs: tuple[int, ...]


def sanitize_description(text: str) -> str:
    """One line of printable text, at most 140 characters."""
    cleaned = "".join(
        " " if unicodedata.category(ch).startswith(("C", "Z")) else ch for ch in str(text)
    )
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > MAX_DESCRIPTION:
        cleaned = cleaned[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return cleaned


def _clean_url(url: str | None) -> str | None:
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or any(c.isspace() for c in url):
        log.warning("dropping status target_url %r: not an http(s) URL", url)
        return None
    return url


def _validate(decision: StatusDecision) -> StatusDecision:
    if decision.state not in _STATES:
        raise ValueError(f"#{decision.pr}: unknown status state {decision.state!r}")
    if not is_commit_sha(decision.sha):
        raise ValueError(f"#{decision.pr}: {decision.sha!r} is not a commit SHA")
    return replace(
        decision,
        description=sanitize_description(decision.description),
        target_url=_clean_url(decision.target_url),
    )


def _refs(numbers: Sequence[int]) -> str:
    return ", ".join(f"#{n}" for n in sorted(numbers))


def plan_statuses(decisions: Sequence[StatusDecision]) -> list[PlannedStatus]:
    """One status per distinct SHA, the rules of the module docstring applied; winner last."""
    cleaned = [_validate(d) for d in decisions]
    if len({d.pr for d in cleaned}) != len(cleaned):
        raise ValueError("two decisions for the same pull request")
    if sum(d.state == "success" for d in cleaned) > 1:
        winners = _refs([d.pr for d in cleaned if d.state == "success"])
        log.error("more than one winner proposed (%s): no success is set", winners)
        cleaned = [
            replace(d, state="failure", description="more than one winner proposed: no winner")
            if d.state == "success"
            else d
            for d in cleaned
        ]
    by_sha: dict[str, list[StatusDecision]] = {}
    for d in sorted(cleaned, key=lambda d: d.pr):
        by_sha.setdefault(d.sha, []).append(d)
    plan: list[PlannedStatus] = []
    for sha, group in by_sha.items():
        prs = tuple(d.pr for d in group)
        first = group[0]
        if len(group) == 1:
            plan.append(PlannedStatus(sha, first.state, first.description, first.target_url, prs))
            continue
        winner = next((d for d in group if d.state == "success"), None)
        if winner is not None:
            others = [d.pr for d in group if d is not winner]
            text = f"head commit shared with {_refs(others)}: no winner status"
            plan.append(
                PlannedStatus(sha, "failure", sanitize_description(text), winner.target_url, prs)
            )
            continue
        state: StatusState = "failure" if any(d.state == "failure" for d in group) else "pending"
        lead = next(d for d in group if d.state == state)
        text = f"head commit shared by {_refs(list(prs))}: {lead.description}"
        plan.append(PlannedStatus(sha, state, sanitize_description(text), lead.target_url, prs))
    plan.sort(key=lambda p: (p.state == "success", p.prs))
    return plan


def _already_set(commit: Commit, status: PlannedStatus, context: str) -> bool:
    combined = commit.get_combined_status()
    for current in combined.statuses:
        if current.context == context:
            return (
                current.state == status.state
                and (current.description or "") == status.description
                and (current.target_url or None) == status.target_url
            )
    return False


def _post(commit: Commit, status: PlannedStatus, context: str) -> None:
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            if status.target_url:
                commit.create_status(
                    status.state,
                    target_url=status.target_url,
                    description=status.description,
                    context=context,
                )
            else:
                commit.create_status(status.state, description=status.description, context=context)
            return
        except (GithubException, OSError) as exc:
            transient = not isinstance(exc, GithubException) or exc.status >= 500
            if not transient or attempt == POST_ATTEMPTS:
                raise
            log.warning("posting status on %s failed (%s); posting again", status.sha[:12], exc)
            time.sleep(0.5 * attempt)


def set_winner_statuses(
    repo: Repository,
    decisions: Sequence[StatusDecision],
    *,
    context: str = WINNER_CONTEXT,
    check_existing: bool = True,
) -> list[str]:
    """Post the planned statuses; returns one line per SHA, e.g.
    ``"success abc123def456 #12: winner"`` or ``"unchanged ... "`` when already set.

    ``check_existing=False`` skips the read of the current status (one request per SHA): the
    publisher passes it when it already knows the state changed (its comment digest moved)."""
    lines: list[str] = []
    for status in plan_statuses(decisions):
        label = f"{status.sha[:12]} {_refs(list(status.prs))}: {status.description}"
        commit = repo.get_commit(status.sha)
        if check_existing and _already_set(commit, status, context):
            lines.append(f"unchanged {status.state} {label}")
            continue
        _post(commit, status, context)
        lines.append(f"{status.state} {label}")
        log.info("status %s: %s", context, lines[-1])
    return lines
