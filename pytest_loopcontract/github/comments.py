"""One sticky comment per pull request and contest, updated in place and only when it changes.

Why it is built this way:

* **Marker and author.** The comment is found by its first line
  ``<!-- loop-contract:<contract-id> -->`` *and* its author (the bot login). Anyone can paste
  the marker into a comment of their own; such a forgery is ignored, never edited (the bot
  could not edit it anyway) and never mistaken for the contest's report.
* **Unchanged means no write.** A second hidden line ``<!-- loop-contract-state:<sha256> -->``
  holds the digest of the markdown under it. When the digest of the new body equals the stored
  one, nothing is written: reruns make no notification noise and spend no write quota.
* **Create is not idempotent.** A POST that fails with a 5xx or a dropped connection may still
  have created the comment. The transport never repeats a POST after such an answer
  (:mod:`.client`); here the comments are listed again and the POST is repeated only if the
  comment is not there, so a lost answer never produces two reports.
* **Size.** GitHub refuses bodies over 65,536 characters. The markdown part is cut (at a line
  boundary when possible) and ends with a pointer to the job summary, which holds the full
  report. :func:`~pytest_loopcontract.contest.report.markdown.render_markdown` already fits its
  output to a budget; this is the last guard.
* A comment deleted by a person is simply created again on the next publish.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from github.GithubException import GithubException
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.Repository import Repository

from pytest_loopcontract.github.events import is_valid_id

__all__ = [
    "MAX_COMMENT_CHARS",
    "TRUNCATION_NOTE",
    "StickyState",
    "body_digest",
    "compose_body",
    "find_sticky_comment",
    "marker_line",
    "read_sticky_state",
    "upsert_sticky_comment",
]

log = logging.getLogger("loopcontract.github")

MAX_COMMENT_CHARS = 65_536
TRUNCATION_NOTE = (
    "\n\n---\n*Report cut to fit a comment; the full report is in the job summary of the "
    "workflow run.*\n"
)
CREATE_ATTEMPTS = 3
_STATE = re.compile(r"<!-- loop-contract-state:([0-9a-f]{64}) -->")


@dataclass(frozen=True)
class StickyState:
    """What the hidden header lines of a comment say."""

    contract_id: str
    digest: str | None


def marker_line(contract_id: str) -> str:
    """The first line that marks the contest's comment."""
    if not is_valid_id(contract_id):
        raise ValueError(f"invalid contract id {contract_id!r}")
    return f"<!-- loop-contract:{contract_id} -->"


def body_digest(markdown: str) -> str:
    """sha256 hex of the markdown part of a comment."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def _fit(markdown: str, budget: int) -> str:
    if len(markdown) <= budget:
        return markdown
    keep = max(0, budget - len(TRUNCATION_NOTE))
    cut = markdown[:keep]
    if "\n" in cut:
        cut = cut[: cut.rfind("\n")]
    return cut + TRUNCATION_NOTE


def compose_body(contract_id: str, markdown: str) -> str:
    """Marker line, state line, then the markdown (cut so the whole is <= 65,536 chars)."""
    marker = marker_line(contract_id)
    header_len = len(marker) + 1 + len("<!-- loop-contract-state: -->") + 64 + 1
    text = _fit(markdown, MAX_COMMENT_CHARS - header_len)
    return f"{marker}\n<!-- loop-contract-state:{body_digest(text)} -->\n{text}"


def read_sticky_state(body: str | None) -> StickyState | None:
    """The contest id and stored digest of a comment body, None when it has no marker."""
    if not body:
        return None
    first, _, rest = body.partition("\n")
    match = re.fullmatch(r"<!-- loop-contract:([^\s]+) -->", first.rstrip("\r"))
    if match is None or not is_valid_id(match[1]):
        return None
    second = rest.partition("\n")[0].rstrip("\r")
    state = _STATE.fullmatch(second)
    return StickyState(match[1], state[1] if state else None)


def _comments(issue: Issue | PullRequest) -> Iterable[IssueComment]:
    if isinstance(issue, PullRequest):
        return issue.get_issue_comments()
    return issue.get_comments()


def _create(issue: Issue | PullRequest, body: str) -> IssueComment:
    if isinstance(issue, PullRequest):
        return issue.create_issue_comment(body)
    return issue.create_comment(body)


def _same_login(a: str | None, b: str) -> bool:
    return a is not None and a.casefold() == b.casefold()


def _sticky_comments(
    issue: Issue | PullRequest, contract_id: str, bot_login: str
) -> list[IssueComment]:
    found: list[IssueComment] = []
    for comment in _comments(issue):
        state = read_sticky_state(comment.body)
        if state is None or state.contract_id != contract_id:
            continue
        author = comment.user.login if comment.user is not None else None
        if not _same_login(author, bot_login):
            log.warning(
                "comment %s carries the loop-contract:%s marker but is by %r, not %r: ignored",
                comment.id,
                contract_id,
                author,
                bot_login,
            )
            continue
        found.append(comment)
    return sorted(found, key=lambda c: c.id)


def find_sticky_comment(
    issue: Issue | PullRequest, *, contract_id: str, bot_login: str
) -> IssueComment | None:
    """The oldest comment with the contest's marker written by ``bot_login`` (all pages)."""
    marker_line(contract_id)
    found = _sticky_comments(issue, contract_id, bot_login)
    return found[0] if found else None


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, GithubException):
        return exc.status >= 500
    # requests' ConnectionError and Timeout derive from OSError.
    return isinstance(exc, OSError)


def _create_once(issue: Issue | PullRequest, contract_id: str, body: str, bot_login: str) -> None:
    digest = read_sticky_state(body)
    assert digest is not None
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            _create(issue, body)
            return
        except (GithubException, OSError) as exc:
            if not _is_transient(exc) or attempt == CREATE_ATTEMPTS:
                raise
            log.warning("creating the sticky comment failed (%s); checking whether it landed", exc)
        landed = find_sticky_comment(issue, contract_id=contract_id, bot_login=bot_login)
        if landed is not None and read_sticky_state(landed.body) == digest:
            log.info("the sticky comment had landed (comment %s); not posting again", landed.id)
            return


def upsert_sticky_comment(
    issue: Issue | PullRequest | Repository,
    number: int | None = None,
    *,
    contract_id: str,
    body: str,
    bot_login: str,
) -> str:
    """Create or update the contest's comment on ``issue``; returns what happened:
    ``"created"``, ``"edited"`` or ``"unchanged"`` (no write made).

    ``issue``: an ``Issue`` or ``PullRequest``, or a ``Repository`` with the pull request's
    ``number``. ``body`` is the markdown (e.g. from ``render_markdown``); the two hidden header
    lines are added here. Extra copies by the bot (left by an older failure) are deleted."""
    if isinstance(issue, Repository):
        if number is None:
            raise TypeError("upsert_sticky_comment(repo, number, ...) needs the number")
        target: Issue | PullRequest = issue.get_issue(number)
    elif number is not None:
        raise TypeError("number is only taken with a Repository")
    else:
        target = issue
    full = compose_body(contract_id, body)
    wanted = read_sticky_state(full)
    found = _sticky_comments(target, contract_id, bot_login)
    if not found:
        _create_once(target, contract_id, full, bot_login)
        return "created"
    keep, extra = found[0], found[1:]
    for comment in extra:
        log.info("deleting duplicate sticky comment %s", comment.id)
        comment.delete()
    if read_sticky_state(keep.body) == wanted:
        return "unchanged"
    keep.edit(full)
    return "edited"
