"""Who may hold a seat: a candidate is its pull request, its author and its head repository.

Why it is built this way:

* **A seat name is attacker text.** Anyone can open a fork pull request from the branch
  ``loop-contract/<id>/<seat>`` or label it ``loop-contract:<id>`` (:mod:`.events`). Stages,
  the proposed-winner comment, the pending status and the gate all follow the seat, so if the
  name alone made the candidate, a stranger reusing the winning seat's name would take its
  place. So every seat the contract names is bound to where its pull requests come from:

  - its ``github`` logins: the author is one of them, and the head lives in this repository
    or in a fork one of them owns (the owner of the head repository can push to the pull
    request);
  - this repository's own propose job (a dispatched seat; the only source of a seat without
    logins): a same-repository head authored by the Actions bot or the action's
    ``bot-login``. Only a workflow of this repository with a write token opens those; a
    fork's run never gets one.

  Anyone else's claim is refused with the reason ``seat_claimed`` and is never that seat's
  candidate: the real seat keeps its stage, comment, status and gate.
* **Two claims, no guess.** When two admitted pull requests claim one seat, neither is its
  candidate until a person closes one: the older is no safer (an attacker can be first) and the
  newer no more genuine. Each is told the other's number (``seat_shared``).
* **Unbound names stay open.** A seat the contract does not name may be held by any author (a
  label's seat is the author's login): it can take no named seat's place, and two claims to it
  refuse both. Seat names and logins are compared case-insensitively, so ``Good`` is a claim
  on ``good``.
* Pure: no I/O. The refusal travels as ``verification_untrusted`` with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.pulls import CandidatePR

__all__ = [
    "ACTIONS_BOT",
    "REFUSAL_CODE",
    "SeatBinding",
    "SeatClaims",
    "SeatRefusal",
    "seat_bindings",
    "seat_logins",
    "settle_claims",
]

ACTIONS_BOT = "github-actions[bot]"
"""The author of the pull requests the dispatch's propose job opens with ``GITHUB_TOKEN``."""
REFUSAL_CODE = "verification_untrusted"


def seat_logins(raw: Mapping[str, Any]) -> frozenset[str]:
    """The ``github`` login(s) of one contract seat (a login or a list; none: empty)."""
    github = raw.get("github")
    logins = [github] if isinstance(github, str) else [str(g) for g in github or ()]
    return frozenset(login for login in logins if login)


@dataclass(frozen=True)
class SeatBinding:
    """Where the pull requests of one contract seat may come from (module docstring)."""

    seat: str
    logins: frozenset[str]  # casefolded; empty: the dispatch's propose job only

    def admits(self, pull: CandidatePR, action_logins: frozenset[str]) -> bool:
        author = pull.author.casefold()
        if not pull.fork and author in action_logins:
            return True  # the propose job
        owner = pull.head_repo.partition("/")[0].casefold()
        return author in self.logins and (not pull.fork or owner in self.logins)

    def describe(self) -> str:
        job = "this repository's propose job (a branch of this repository, opened by the action)"
        if not self.logins:
            return job
        return "the GitHub login(s) " + ", ".join(sorted(self.logins)) + " and " + job


@dataclass(frozen=True)
class SeatRefusal:
    """A pull request that claims a seat and is not its candidate, and why."""

    pull: CandidatePR
    reason: str  # seat_claimed | seat_shared
    message: str

    code: ClassVar[str] = REFUSAL_CODE


@dataclass(frozen=True)
class SeatClaims:
    """The contest's pull requests sorted out: the candidates, and the refused claims."""

    candidates: tuple[CandidatePR, ...]
    refused: tuple[SeatRefusal, ...]


def seat_bindings(contract: Contract) -> dict[str, SeatBinding]:
    """Every seat the contract names, bound (keyed by its casefolded name)."""
    bindings = {}
    for raw in contract.seats:
        name = str(raw.get("name") or "")
        logins = frozenset(login.casefold() for login in seat_logins(raw))
        bindings[name.casefold()] = SeatBinding(name, logins)
    return bindings


def settle_claims(
    pulls: Sequence[CandidatePR], bindings: Mapping[str, SeatBinding], *, bot_login: str
) -> SeatClaims:
    """Which pull requests hold the seats they claim: bound seats first (``seat_claimed``),
    then one pull request per seat (``seat_shared``)."""
    action_logins = frozenset({ACTIONS_BOT, bot_login.casefold()})
    admitted: list[CandidatePR] = []
    refused: list[SeatRefusal] = []
    for pull in pulls:
        binding = bindings.get(pull.seat.casefold())
        if binding is None or binding.admits(pull, action_logins):
            admitted.append(pull)
        else:
            refused.append(SeatRefusal(pull, "seat_claimed", _claimed(pull, binding)))
    candidates, shared = _one_per_seat(admitted)
    return SeatClaims(candidates, tuple(sorted([*refused, *shared], key=lambda r: r.pull.number)))


def _one_per_seat(
    admitted: Sequence[CandidatePR],
) -> tuple[tuple[CandidatePR, ...], list[SeatRefusal]]:
    """The pull requests alone on their seat, and a refusal for each one that is not."""
    by_seat: dict[str, list[int]] = {}
    for pull in admitted:
        by_seat.setdefault(pull.seat.casefold(), []).append(pull.number)
    alone = tuple(pull for pull in admitted if len(by_seat[pull.seat.casefold()]) == 1)
    shared = [
        SeatRefusal(pull, "seat_shared", _shared(pull, by_seat[pull.seat.casefold()]))
        for pull in admitted
        if len(by_seat[pull.seat.casefold()]) > 1
    ]
    return alone, shared


def _claimed(pull: CandidatePR, binding: SeatBinding) -> str:
    where = pull.head_repo or "a deleted repository"
    return (
        f"#{pull.number} claims seat {binding.seat!r} (by its branch or label), which the "
        f"contract binds to {binding.describe()}; #{pull.number} was opened by {pull.author} "
        f"from {where}, so it is not that seat's candidate and its verification is not used. "
        "To compete, use a seat of your own (a branch loop-contract/<contest>/<your seat>); "
        "a maintainer can add a login to the seat's github entry in the contract on the base "
        "branch."
    )


def _shared(pull: CandidatePR, claimants: Iterable[int]) -> str:
    shown = ", ".join(f"#{n}" for n in sorted(claimants) if n != pull.number)
    return (
        f"seat {pull.seat!r} is also claimed by {shown}; one seat has one candidate, and which "
        "pull request it is is a person's call, not the action's. Close the pull request that "
        "should not compete (its author or a maintainer can); the one left counts again at "
        "the next publish (push to it, or re-run its verify workflow)."
    )
