"""Who takes part in a contest, and so never opens its human gate.

Why: the gate's approval must come from a person outside the contest. Seat names alone (the
last stored state's) missed the author of a competing candidate, a seat listed in
``loopcontract.yml`` under another login, a seat whose pull request was not in a published
round yet, and the account whose token the action uses. So the participants are the union of:
the authors of every candidate pull request (open now, from the API, and recorded in the
state), every seat name and every ``seats[].github`` login of the default branch's contract,
the bot login that writes the comments, and the token's own identity (``GET /user``; an
installation token may not read it, and is then the bot). Bots are refused separately, by
login suffix and user type (:func:`.review_gate.is_bot`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.pulls import CandidatePR
from pytest_loopcontract.github.seat_claims import seat_logins

__all__ = ["contract_logins", "participant_logins", "token_login"]

log = logging.getLogger("loopcontract.github")


def contract_logins(contract: Contract) -> frozenset[str]:
    """Seat names and the ``seats[].github`` logins the contract names."""
    logins: set[str] = set()
    for seat in contract.seats:
        logins.add(str(seat.get("name") or ""))
        logins.update(seat_logins(seat))
    return frozenset(login for login in logins if login)


def token_login(repo: Repository) -> str | None:
    """The login of the token publish and gate use, or None when GitHub will not say."""
    try:
        _, data = repo.requester.requestJsonAndCheck("GET", "/user")
    except GithubException as exc:
        # GITHUB_TOKEN (an installation token) gets 403 "Resource not accessible by
        # integration" here; it acts as the bot, whose login is a participant anyway.
        log.info("the token's login is not readable (%s): the bot login stands for it", exc.status)
        return None
    login = data.get("login") if isinstance(data, dict) else None
    return str(login) if login else None


def participant_logins(
    *,
    candidates: Iterable[CandidatePR],
    recorded_pulls: Mapping[str, Any],
    named: Iterable[str],
    bot_login: str,
    token: str | None,
) -> frozenset[str]:
    """Every login whose approval cannot count (compared case-insensitively by the gate)."""
    logins = {bot_login, *named, *recorded_pulls}
    logins.update(c.author for c in candidates)
    logins.update(c.seat for c in candidates)
    for pull in recorded_pulls.values():
        if isinstance(pull, Mapping) and pull.get("author"):
            logins.add(str(pull["author"]))
    if token:
        logins.add(token)
    return frozenset(login for login in logins if login)
