"""The human gate on GitHub: does a pull request carry an approval that counts?

Why this module exists: the contest only *proposes* a winner; merging is a person's act, and on
GitHub that act is an approving pull-request review. But "there is a green tick" is not enough.
An approval counts only when all of these hold:

* the reviewer has ``write``, ``maintain`` or ``admin`` permission on the repository (asked of
  the collaborator permission API, never taken from ``author_association`` in a payload);
* the review is on the pull request's *current* head commit, as the API reports it now;
* the reviewer is not the pull request's author, not a bot (login ending in ``[bot]`` or user
  type ``Bot``) and not a seat account (an agent that competes in the contest);
* it is that reviewer's latest review, and it was not dismissed.

A ``CHANGES_REQUESTED`` review by such a reviewer rejects. The decision is computed from the
REST API by a trusted trigger (``workflow_run``, a schedule): review events on pull requests from
forks run with a read-only token and their payload is written by whoever opened the pull
request's branch, so nothing here reads an event payload. The result goes to the ledger
(:meth:`GateDecision.ledger_payload`, the ``human_gate`` event).

Semantics chosen, checked against GitHub's own behaviour:

* **A comment does not supersede an opinion.** GitHub lists plain comments (and replies posted
  after an approval) as ``COMMENTED`` reviews, but a reviewer's standing in branch protection
  (GraphQL ``latestOpinionatedReviews``) is their latest ``APPROVED``, ``CHANGES_REQUESTED`` or
  ``DISMISSED`` review. So "latest review" here means the latest of those three, ordered by
  ``submitted_at`` and then review id; ``COMMENTED`` reviews never count and never cancel.
* **Dismissal is final for that opinion.** A dismissed review (state ``DISMISSED``) is the
  reviewer's latest opinion and counts for nothing; an older approval by the same person does
  not come back.
* **A request for changes does not go stale.** GitHub dismisses stale *approvals* on a push (if
  configured) but a request for changes blocks until the same reviewer approves or someone
  dismisses it ("the pull request cannot be merged until the same collaborator submits another
  review approving the changes"). So the head-commit rule applies to approvals only: a standing
  ``CHANGES_REQUESTED`` on an older commit still rejects, and the reason names the commit.
* **Logins compare case-insensitively**, as GitHub's do.
* **Fail closed.** A reviewer whose permission is unknown does not count; a permission lookup
  that fails for any reason other than "no such user" (404, read as ``none``) raises
  :class:`ReviewGateError` rather than guessing.

Requests: one for the pull request, one per page of reviews, and one permission lookup per
reviewer whose latest opinion could still count after every check that needs no request
(:func:`logins_needing_permission`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pytest_loopcontract.errors import LoopContractError

if TYPE_CHECKING:
    from github.PullRequestReview import PullRequestReview
    from github.Repository import Repository

__all__ = [
    "COUNTING_PERMISSIONS",
    "REVIEW_STATES",
    "Decision",
    "GateDecision",
    "Review",
    "ReviewGateError",
    "decide_from_reviews",
    "gate_for_pr",
    "is_bot",
    "logins_needing_permission",
    "review_from_github",
    "review_from_json",
]

logger = logging.getLogger("loopcontract.github")

Decision = Literal["approve", "reject", "pending"]

#: Review states in their normalised (REST, upper case) form.
REVIEW_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"})
#: Permissions (``permission`` or ``role_name`` of the collaborator permission API) that count.
COUNTING_PERMISSIONS = frozenset({"admin", "maintain", "write"})

_OPINIONS = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})
_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


class ReviewGateError(LoopContractError):
    """The gate cannot be decided from the API (the message says why); nothing was recorded."""


@dataclass(frozen=True)
class Review:
    """One pull-request review, from the REST API or a webhook payload.

    ``state`` is normalised to upper case (REST spells ``APPROVED``, webhooks ``approved``);
    ``submitted_at`` is made timezone-aware (UTC when naive) so reviews always compare; it is
    ``None`` only for a ``PENDING`` (not yet submitted) review. ``login`` is empty for a review
    whose author account was deleted.
    """

    id: int
    login: str
    user_type: str
    state: str
    commit_id: str
    submitted_at: datetime | None

    def __post_init__(self) -> None:
        state = self.state.upper()
        if state not in REVIEW_STATES:
            raise ValueError(f"unknown review state {self.state!r}")
        object.__setattr__(self, "state", state)
        when = self.submitted_at
        if when is not None and when.tzinfo is None:
            object.__setattr__(self, "submitted_at", when.replace(tzinfo=timezone.utc))


@dataclass(frozen=True)
class GateDecision:
    """What the reviews on one pull request decide.

    ``counted`` lists the logins whose review counted (in review order); ``ignored`` gives
    ``(login, why)`` for every other review, where ``why`` is one of: ``"not on the current
    head"``, ``"author"``, ``"bot"``, ``"seat account"``, ``"permission <level>"`` (``read``,
    ``triage``, ``none``, ``unknown``...), ``"superseded by a later review"``, ``"dismissed"``,
    ``"commented"``, ``"pending"`` (not submitted) or ``"deleted user"``. ``head_sha`` is the
    commit the decision is about.
    """

    decision: Decision
    by: str | None
    reason: str
    counted: tuple[str, ...] = ()
    ignored: tuple[tuple[str, str], ...] = ()
    head_sha: str = ""
    merged: bool = False
    """The pull request is merged: its recorded decision is final (set by :func:`gate_for_pr`)."""

    def ledger_payload(self) -> dict[str, Any]:
        """The ``human_gate`` ledger event payload (``by``, ``decision``, ``sha`` and why)."""
        return {
            "by": self.by,
            "decision": self.decision,
            "sha": self.head_sha,
            "reason": self.reason,
            "counted": list(self.counted),
            "ignored": [{"login": login, "why": why} for login, why in self.ignored],
        }


def is_bot(login: str, user_type: str) -> bool:
    """A GitHub App or bot account: login ending in ``[bot]``, or user type ``Bot``."""
    return login.casefold().endswith("[bot]") or user_type.casefold() == "bot"


def _parse_time(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def review_from_json(data: Mapping[str, Any]) -> Review:
    """A :class:`Review` from a REST review object or a webhook payload's ``review``."""
    user = data.get("user") or {}
    return Review(
        id=int(data["id"]),
        login=str(user.get("login") or ""),
        user_type=str(user.get("type") or ""),
        state=str(data["state"]),
        commit_id=str(data.get("commit_id") or ""),
        submitted_at=_parse_time(data.get("submitted_at")),
    )


def review_from_github(review: PullRequestReview) -> Review:
    """A :class:`Review` from PyGithub's object, reading only fields the list response carries."""
    user = review.user
    state = str(review.state or "")
    return Review(
        id=int(review.id),
        login=user.login if user is not None else "",
        user_type=(user.type or "") if user is not None else "",
        state=state,
        commit_id=str(review.commit_id or ""),
        submitted_at=None if state.upper() == "PENDING" else review.submitted_at,
    )


def _order(review: Review) -> tuple[datetime, int, str, str, str]:
    """Review order: time, then id; the rest only makes duplicate ids deterministic."""
    return (
        review.submitted_at or _EPOCH,
        review.id,
        review.state,
        review.commit_id,
        review.login,
    )


def _ordered(reviews: Iterable[Review]) -> list[Review]:
    """Reviews sorted by :func:`_order`, one per id (the last in order wins a duplicate id)."""
    by_id: dict[int, Review] = {}
    for review in sorted(reviews, key=_order):
        by_id[review.id] = review
    return sorted(by_id.values(), key=_order)


def _screen(
    reviews: Sequence[Review], *, head_sha: str, author: str, seat_logins: Collection[str]
) -> list[tuple[Review, str | None]]:
    """Every review with why it cannot count, or ``None`` if only its permission is left."""
    ordered = _ordered(reviews)
    latest: dict[str, Review] = {}
    for review in ordered:
        if review.login and review.state in _OPINIONS:
            latest[review.login.casefold()] = review
    author_key = author.casefold()
    seats = {seat.casefold() for seat in seat_logins}
    head = head_sha.casefold()
    screened: list[tuple[Review, str | None]] = []
    for review in ordered:
        key = review.login.casefold()
        why: str | None
        if not review.login:
            why = "deleted user"
        elif review.state == "PENDING":
            why = "pending"
        elif review.state == "DISMISSED":
            why = "dismissed"
        elif review.state == "COMMENTED":
            why = "commented"
        elif latest.get(key) is not review:
            why = "superseded by a later review"
        elif key == author_key:
            why = "author"
        elif is_bot(review.login, review.user_type):
            why = "bot"
        elif key in seats:
            why = "seat account"
        elif review.state == "APPROVED" and review.commit_id.casefold() != head:
            why = "not on the current head"
        else:
            why = None
        screened.append((review, why))
    return screened


def logins_needing_permission(
    reviews: Sequence[Review], *, head_sha: str, author: str, seat_logins: Collection[str] = ()
) -> tuple[str, ...]:
    """Reviewers whose latest opinion counts if, and only if, they have write access.

    These are the only logins :func:`gate_for_pr` asks the permission API about.
    """
    screened = _screen(reviews, head_sha=head_sha, author=author, seat_logins=seat_logins)
    return tuple(review.login for review, why in screened if why is None)


def decide_from_reviews(
    reviews: Sequence[Review],
    *,
    head_sha: str,
    author: str,
    permissions: Mapping[str, str],
    seat_logins: Collection[str] = (),
) -> GateDecision:
    """The gate decision from a pull request's reviews (pure; the order of ``reviews`` is
    irrelevant).

    ``permissions`` maps a login to its permission on the repository; a reviewer missing from
    it does not count. Any counted ``CHANGES_REQUESTED`` rejects (``by`` the earliest such
    reviewer); else any counted approval approves (``by`` the earliest approver); else pending.
    """
    if not head_sha:
        raise ValueError("head_sha is required: an approval counts only on a known head commit")
    counted, ignored = _counted(reviews, head_sha, author, permissions, seat_logins)
    decision, by, reason = _verdict_of(counted, head_sha)
    if decision == "pending" and ignored:
        reason += f" ({len(ignored)} review{'s' if len(ignored) != 1 else ''} did not count)"
    logins = tuple(review.login for review in counted)
    return GateDecision(decision, by, reason, logins, tuple(ignored), head_sha)


def _counted(
    reviews: Sequence[Review],
    head_sha: str,
    author: str,
    permissions: Mapping[str, str],
    seat_logins: Collection[str],
) -> tuple[list[Review], list[tuple[str, str]]]:
    """The reviews that count, and ``(login, why not)`` for those that do not."""
    levels = {login.casefold(): level.casefold() for login, level in permissions.items()}
    counted: list[Review] = []
    ignored: list[tuple[str, str]] = []
    for review, why in _screen(reviews, head_sha=head_sha, author=author, seat_logins=seat_logins):
        if why is None:
            level = levels.get(review.login.casefold())
            if level not in COUNTING_PERMISSIONS:
                why = f"permission {level or 'unknown'}"
        if why is None:
            counted.append(review)
        else:
            ignored.append((review.login, why))
    return counted, ignored


def _verdict_of(counted: Sequence[Review], head_sha: str) -> tuple[Decision, str | None, str]:
    """``(decision, by, reason)``: a change request rejects, else an approval approves."""
    rejecting = [review for review in counted if review.state == "CHANGES_REQUESTED"]
    approving = [review for review in counted if review.state == "APPROVED"]
    if rejecting:
        detail = ", ".join(
            review.login
            + (
                ""
                if review.commit_id.casefold() == head_sha.casefold()
                else f" (on older commit {review.commit_id[:7]})"
            )
            for review in rejecting
        )
        return "reject", rejecting[0].login, f"changes requested by {detail}"
    if approving:
        names = ", ".join(review.login for review in approving)
        return "approve", approving[0].login, f"approved by {names} on head {head_sha[:7]}"
    return (
        "pending",
        None,
        f"no approving review by a reviewer with write access on head {head_sha[:7]}",
    )


def _permission(repo: Repository, login: str) -> str:
    from github.GithubException import GithubException

    try:
        return repo.get_collaborator_permission(login)
    except GithubException as exc:
        if exc.status == 404:
            return "none"
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise ReviewGateError(
            f"cannot read the repository permission of {login!r}: HTTP {exc.status}"
            + (f" ({message})" if message else "")
            + "; the token needs push access to read collaborator permissions"
        ) from exc


def gate_for_pr(repo: Repository, pr_number: int, *, seat_logins: Collection[str]) -> GateDecision:
    """The gate decision for pull request ``pr_number``, read from the API now.

    The head SHA and the author come from ``GET /pulls/{n}``, never from an event payload.
    ``seat_logins`` is required: forgetting the contest's seats would let a competing agent
    approve its own candidate.
    """
    pull = repo.get_pull(pr_number)
    head_sha = pull.head.sha
    author = pull.user.login
    reviews = [review_from_github(review) for review in pull.get_reviews()]
    wanted = logins_needing_permission(
        reviews, head_sha=head_sha, author=author, seat_logins=seat_logins
    )
    # One lookup per reviewer: ``wanted`` holds at most one (latest) review per login.
    permissions = {login: _permission(repo, login) for login in wanted}
    decision = decide_from_reviews(
        reviews,
        head_sha=head_sha,
        author=author,
        permissions=permissions,
        seat_logins=seat_logins,
    )
    decision = replace(decision, merged=bool(pull.merged))
    logger.info(
        "review gate for #%d at %s: %s%s (%s)",
        pr_number,
        head_sha[:7],
        decision.decision,
        f" by {decision.by}" if decision.by else "",
        decision.reason,
    )
    return decision
