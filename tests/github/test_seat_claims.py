"""Seats are identities: which pull request holds which seat (pure; the attacks end to end
against the fake GitHub server are in test_publish.py)."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.github.pulls import CandidatePR
from pytest_loopcontract.github.seat_claims import (
    ACTIONS_BOT,
    SeatBinding,
    seat_bindings,
    settle_claims,
)

HERE = "octo/calc"
BOT = ACTIONS_BOT


def contract_of(seats: str) -> Contract:
    text = f"version: 1\nid: calc\nseats:\n{seats}"
    return parse_contract(text.encode(), Path("loopcontract.yml"))


BOUND = contract_of(
    "  - {name: good, family: a, github: good-bot}\n"
    "  - {name: pair, family: b, github: [Pair-One, pair-two]}\n"
    "  - {name: claude, agent: claude-code}\n"
)


def pull(number: int, seat: str, author: str, head_repo: str = HERE) -> CandidatePR:
    """A pull request claiming ``seat``; a head outside this repository is a fork."""
    return CandidatePR(
        number,
        f"{number:040x}",
        f"loop-contract/calc/{seat}",
        seat,
        author,
        head_repo != HERE,
        "open",
        head_repo,
        "main",
    )


def settle(*pulls: CandidatePR, contract: Contract = BOUND, bot_login: str = BOT) -> dict[int, str]:
    """Each pull request's fate: ``candidate``, ``seat_claimed`` or ``seat_shared``."""
    claims = settle_claims(pulls, seat_bindings(contract), bot_login=bot_login)
    fates = {c.number: "candidate" for c in claims.candidates}
    fates.update({r.pull.number: r.reason for r in claims.refused})
    assert len(fates) == len(pulls)
    return fates


def test_every_seat_of_the_contract_is_bound() -> None:
    assert seat_bindings(BOUND) == {
        "good": SeatBinding("good", frozenset({"good-bot"})),
        "pair": SeatBinding("pair", frozenset({"pair-one", "pair-two"})),
        "claude": SeatBinding("claude", frozenset()),  # no logins: the propose job
    }
    assert seat_bindings(contract_of("  []\n")) == {}


def test_a_stranger_reusing_a_bound_seat_is_refused_and_the_seat_keeps_its_candidate() -> None:
    claims = settle_claims(
        [pull(11, "good", "good-bot"), pull(20, "good", "mallory", "mallory/calc")],
        seat_bindings(BOUND),
        bot_login=BOT,
    )
    assert [c.number for c in claims.candidates] == [11]
    (refusal,) = claims.refused
    assert (refusal.pull.number, refusal.code, refusal.reason) == (
        20,
        "verification_untrusted",
        "seat_claimed",
    )
    assert "binds to the GitHub login(s) good-bot and this repository's propose job" in (
        refusal.message
    )
    assert "opened by mallory from mallory/calc" in refusal.message
    assert "a seat of your own" in refusal.message


def test_a_bound_seat_comes_from_its_login_here_or_from_its_own_fork() -> None:
    assert settle(
        pull(1, "good", "good-bot"),  # a branch of this repository
        pull(2, "pair", "PAIR-ONE", "pair-two/calc"),  # logins compare case-insensitively
    ) == {1: "candidate", 2: "candidate"}
    assert settle(pull(3, "good", "good-bot", "good-bot/calc")) == {3: "candidate"}
    # the seat's login opening a pull request from someone else's fork: that owner could push
    assert settle(pull(4, "good", "good-bot", "mallory/calc")) == {4: "seat_claimed"}
    # a deleted head repository cannot show whose it was
    assert settle(pull(5, "good", "good-bot", "")) == {5: "seat_claimed"}


def test_a_dispatched_seat_is_held_only_by_the_propose_job() -> None:
    assert settle(pull(1, "claude", BOT)) == {1: "candidate"}
    assert settle(pull(2, "claude", "maint")) == {2: "seat_claimed"}  # a writer, by hand
    assert settle(pull(3, "claude", BOT, "mallory/calc")) == {3: "seat_claimed"}
    # a workflow that uses an app's token: the action's bot-login opens them
    app = "loop-app[bot]"
    assert settle(pull(4, "claude", app), bot_login=app) == {4: "candidate"}
    assert settle(pull(5, "claude", app)) == {5: "seat_claimed"}
    # a seat with logins may be dispatched as well
    assert settle(pull(6, "good", BOT)) == {6: "candidate"}


def test_a_seat_name_is_compared_case_insensitively() -> None:
    assert settle(pull(20, "Good", "mallory", "mallory/calc")) == {20: "seat_claimed"}
    assert settle(pull(1, "x", "a", "a/calc"), pull(2, "X", "b", "b/calc")) == {
        1: "seat_shared",
        2: "seat_shared",
    }


def test_two_claims_to_one_seat_refuse_both_and_name_each_other() -> None:
    claims = settle_claims(
        [pull(7, "free", "ann", "ann/calc"), pull(9, "free", "bea", "bea/calc")],
        seat_bindings(BOUND),
        bot_login=BOT,
    )
    assert claims.candidates == ()
    seven, nine = claims.refused
    assert (seven.pull.number, seven.reason, nine.pull.number, nine.reason) == (
        7,
        "seat_shared",
        9,
        "seat_shared",
    )
    assert "also claimed by #9" in seven.message and "also claimed by #7" in nine.message
    assert "Close the pull request that should not compete" in seven.message
    # the seat's own login with two pull requests: both wait for a person too
    assert settle(pull(1, "good", "good-bot"), pull(2, "good", "good-bot", "good-bot/calc")) == {
        1: "seat_shared",
        2: "seat_shared",
    }


def test_a_refused_claim_does_not_make_the_real_seat_shared() -> None:
    assert settle(
        pull(11, "good", "good-bot"),
        pull(20, "good", "mallory", "mallory/calc"),
        pull(21, "good", "eve", "eve/calc"),
    ) == {11: "candidate", 20: "seat_claimed", 21: "seat_claimed"}


def test_a_contract_without_seats_lets_anyone_hold_one_seat_each() -> None:
    open_contest = contract_of("  []\n")
    assert settle(
        pull(1, "good", "good-bot"),
        pull(2, "alice", "alice", "alice/calc"),
        contract=open_contest,
    ) == {1: "candidate", 2: "candidate"}
    # seats the contract does not name stay open next to bound ones
    assert settle(pull(3, "zed", "zed", "zed/calc")) == {3: "candidate"}
