"""The human gate from pull-request reviews: every variant GitHub can produce decides rightly.

The reviews are built from GitHub's recorded ``pull_request_review`` webhook examples (each
variant schema-checked by :mod:`tests.github_events`) and from PyGithub's recorded REST
responses; the head SHA and the author are given as the API would report them, never read
from the payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import jsonschema
import pytest
from github import Auth, Github
from github.Repository import Repository
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopcontract.github.review_gate import (
    COUNTING_PERMISSIONS,
    GateDecision,
    Review,
    ReviewGateError,
    decide_from_reviews,
    gate_for_pr,
    is_bot,
    logins_needing_permission,
    review_from_json,
)
from testing import github_data
from testing import github_events as events
from testing.fake_github import FakeGitHub


@pytest.fixture(autouse=True)
def _recorded_data() -> None:
    github_data.require()  # skips without tests/data/github, fails under CI's REQUIRE_TOOLS=1


HEAD = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c"
OLD = events.RECORDED_HEAD_SHA
AUTHOR = "seat-author"
SEATS = ("claude-seat", "codex-seat")
PERMISSIONS = {
    "writer": "write",
    "maintainer": "maintain",
    "owner": "admin",
    "second-writer": "write",
    "reader": "read",
    "triager": "triage",
    AUTHOR: "admin",
    "claude-seat": "write",
    "renovate[bot]": "write",
    "sneaky-bot": "write",
}
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def at(minutes: int) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def review(
    state: str,
    reviewer: str,
    *,
    minute: int = 0,
    commit: str = HEAD,
    fork: bool = False,
    dismissed: bool = False,
    reviewer_type: str | None = None,
    review_id: int | None = None,
) -> Review:
    """A review parsed from a recorded webhook variant (validated against its schema)."""
    event = events.review_event(
        state,
        reviewer=reviewer,
        commit_id=commit,
        author=AUTHOR,
        fork=fork,
        dismissed=dismissed,
        review_id=review_id if review_id is not None else 1000 + minute,
        submitted_at=at(minute),
        reviewer_type=reviewer_type,
        # The payload claims its own head; the gate must never look at it.
        head_sha=OLD,
    )
    return review_from_json(event["review"])


def decide(reviews: Sequence[Review], **overrides: Any) -> GateDecision:
    options: dict[str, Any] = {
        "head_sha": HEAD,
        "author": AUTHOR,
        "permissions": PERMISSIONS,
        "seat_logins": SEATS,
    }
    options.update(overrides)
    return decide_from_reviews(reviews, **options)


# ---------------------------------------------------------------------------- the variants

CASES: list[
    tuple[str, list[tuple[str, dict[str, Any]]], str, str | None, tuple[str, str] | None]
] = [
    # (id, reviews as (state, kwargs), decision, by, one expected ignored entry)
    ("writer-on-head", [("approved", {"reviewer": "writer"})], "approve", "writer", None),
    (
        "writer-on-older-commit",
        [("approved", {"reviewer": "writer", "commit": OLD})],
        "pending",
        None,
        ("writer", "not on the current head"),
    ),
    (
        "read-only-user",
        [("approved", {"reviewer": "reader"})],
        "pending",
        None,
        ("reader", "permission read"),
    ),
    (
        "triage-user",
        [("approved", {"reviewer": "triager"})],
        "pending",
        None,
        ("triager", "permission triage"),
    ),
    (
        "permission-unknown",
        [("approved", {"reviewer": "stranger"})],
        "pending",
        None,
        ("stranger", "permission unknown"),
    ),
    ("author", [("approved", {"reviewer": AUTHOR})], "pending", None, (AUTHOR, "author")),
    (
        "bot-by-login",
        [("approved", {"reviewer": "renovate[bot]"})],
        "pending",
        None,
        ("renovate[bot]", "bot"),
    ),
    (
        "bot-by-type",
        [("approved", {"reviewer": "sneaky-bot", "reviewer_type": "Bot"})],
        "pending",
        None,
        ("sneaky-bot", "bot"),
    ),
    (
        "seat-account",
        [("approved", {"reviewer": "claude-seat"})],
        "pending",
        None,
        ("claude-seat", "seat account"),
    ),
    (
        "dismissed-approval",
        [("approved", {"reviewer": "writer", "dismissed": True})],
        "pending",
        None,
        ("writer", "dismissed"),
    ),
    (
        "changes-requested-by-maintainer",
        [("changes_requested", {"reviewer": "maintainer"})],
        "reject",
        "maintainer",
        None,
    ),
    (
        "approve-then-changes-requested",
        [
            ("approved", {"reviewer": "writer", "minute": 1}),
            ("changes_requested", {"reviewer": "writer", "minute": 2}),
        ],
        "reject",
        "writer",
        ("writer", "superseded by a later review"),
    ),
    (
        "changes-requested-then-approve",
        [
            ("changes_requested", {"reviewer": "writer", "minute": 1}),
            ("approved", {"reviewer": "writer", "minute": 2}),
        ],
        "approve",
        "writer",
        ("writer", "superseded by a later review"),
    ),
    (
        "two-reviewers-one-rejecting",
        [
            ("approved", {"reviewer": "writer", "minute": 1}),
            ("changes_requested", {"reviewer": "owner", "minute": 2}),
        ],
        "reject",
        "owner",
        None,
    ),
    (
        "comment-after-approval-keeps-it",
        [
            ("approved", {"reviewer": "writer", "minute": 1}),
            ("commented", {"reviewer": "writer", "minute": 2}),
        ],
        "approve",
        "writer",
        ("writer", "commented"),
    ),
    (
        "comment-only",
        [("commented", {"reviewer": "writer"})],
        "pending",
        None,
        ("writer", "commented"),
    ),
    (
        "changes-requested-on-older-commit-still-stands",
        [
            ("changes_requested", {"reviewer": "maintainer", "minute": 1, "commit": OLD}),
            ("approved", {"reviewer": "writer", "minute": 2}),
        ],
        "reject",
        "maintainer",
        None,
    ),
    (
        "dismissed-rejection-does-not-revive-approval",
        [
            ("approved", {"reviewer": "writer", "minute": 1}),
            ("changes_requested", {"reviewer": "writer", "minute": 2, "dismissed": True}),
        ],
        "pending",
        None,
        ("writer", "superseded by a later review"),
    ),
    (
        "dismissed-rejection-lets-other-approval-through",
        [
            ("changes_requested", {"reviewer": "owner", "minute": 1, "dismissed": True}),
            ("approved", {"reviewer": "writer", "minute": 2}),
        ],
        "approve",
        "writer",
        ("owner", "dismissed"),
    ),
    (
        "read-only-rejection-does-not-reject",
        [
            ("changes_requested", {"reviewer": "reader", "minute": 1}),
            ("approved", {"reviewer": "writer", "minute": 2}),
        ],
        "approve",
        "writer",
        ("reader", "permission read"),
    ),
    (
        "seat-rejection-does-not-reject",
        [
            ("changes_requested", {"reviewer": "claude-seat", "minute": 1}),
            ("approved", {"reviewer": "maintainer", "minute": 2}),
        ],
        "approve",
        "maintainer",
        ("claude-seat", "seat account"),
    ),
    (
        "first-approver-by-time",
        [
            ("approved", {"reviewer": "second-writer", "minute": 5}),
            ("approved", {"reviewer": "writer", "minute": 3}),
        ],
        "approve",
        "writer",
        None,
    ),
    (
        "approval-on-old-commit-then-new-head-approval",
        [
            ("approved", {"reviewer": "writer", "minute": 1, "commit": OLD}),
            ("approved", {"reviewer": "writer", "minute": 2}),
        ],
        "approve",
        "writer",
        ("writer", "superseded by a later review"),
    ),
    (
        "latest-approval-on-old-commit",
        [
            ("approved", {"reviewer": "writer", "minute": 1}),
            ("approved", {"reviewer": "writer", "minute": 2, "commit": OLD}),
        ],
        "pending",
        None,
        ("writer", "not on the current head"),
    ),
]


def build(spec: list[tuple[str, dict[str, Any]]], *, fork: bool = False) -> list[Review]:
    return [review(state, **{**kwargs, "fork": fork}) for state, kwargs in spec]


@pytest.mark.parametrize(
    ("spec", "decision", "by", "ignored"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_variant_decides(
    spec: list[tuple[str, dict[str, Any]]],
    decision: str,
    by: str | None,
    ignored: tuple[str, str] | None,
) -> None:
    result = decide(build(spec))
    assert (result.decision, result.by) == (decision, by), result
    assert result.head_sha == HEAD
    if ignored is not None:
        assert ignored in result.ignored
    if by is not None:
        assert by in result.counted
        assert by in result.reason
    # Every review is accounted for exactly once.
    assert len(result.counted) + len(result.ignored) == len(spec)


@pytest.mark.parametrize(
    ("spec", "decision"), [case[1:3] for case in CASES], ids=[c[0] for c in CASES]
)
def test_fork_pull_request_decides_the_same(
    spec: list[tuple[str, dict[str, Any]]], decision: str
) -> None:
    """A fork's review payload differs (head repo, association) but the decision does not."""
    assert decide(build(spec, fork=True)) == decide(build(spec))


def test_reason_names_every_rejecting_reviewer_and_a_stale_commit() -> None:
    result = decide(
        [
            review("changes_requested", "maintainer", minute=1, commit=OLD),
            review("changes_requested", "owner", minute=2),
        ]
    )
    assert result.decision == "reject"
    assert result.by == "maintainer"
    assert "maintainer (on older commit ec26c3e)" in result.reason
    assert "owner" in result.reason


def test_payload_head_is_never_used() -> None:
    """The event claims OLD as head; the gate decides on the head it is given."""
    approval = review("approved", "writer", commit=OLD)
    assert decide([approval]).decision == "pending"
    assert decide([approval], head_sha=OLD).decision == "approve"


def test_logins_compare_case_insensitively() -> None:
    assert decide([review("approved", "Seat-Author")]).ignored == (("Seat-Author", "author"),)
    assert decide([review("approved", "CLAUDE-seat")]).ignored == (("CLAUDE-seat", "seat account"),)
    assert decide([review("approved", "Writer")]).decision == "approve"
    later = [
        review("approved", "writer", minute=1),
        review("changes_requested", "WRITER", minute=2),
    ]
    assert decide(later).decision == "reject"


def test_same_time_orders_by_review_id() -> None:
    first = review("approved", "writer", minute=1, review_id=10)
    second = review("changes_requested", "writer", minute=1, review_id=11)
    assert decide([second, first]).decision == "reject"


def test_pending_review_and_deleted_user_never_count() -> None:
    pending = Review(7, "writer", "User", "PENDING", HEAD, None)
    ghost = review_from_json({"id": 8, "user": None, "state": "APPROVED", "commit_id": HEAD})
    result = decide([pending, ghost])
    assert result.decision == "pending"
    assert set(result.ignored) == {("writer", "pending"), ("", "deleted user")}


def test_no_reviews_is_pending() -> None:
    result = decide([])
    assert result == GateDecision(
        "pending",
        None,
        f"no approving review by a reviewer with write access on head {HEAD[:7]}",
        head_sha=HEAD,
    )


def test_ledger_payload_carries_the_sha_and_why() -> None:
    result = decide(
        [review("approved", "writer", minute=1), review("approved", "reader", minute=2)]
    )
    payload = result.ledger_payload()
    assert payload == {
        "by": "writer",
        "decision": "approve",
        "sha": HEAD,
        "reason": f"approved by writer on head {HEAD[:7]}",
        "counted": ["writer"],
        "ignored": [{"login": "reader", "why": "permission read"}],
    }
    json.dumps(payload)


# ---------------------------------------------------------------------------- parsing


def test_rest_and_webhook_states_normalise_to_one_form() -> None:
    """PyGithub's recorded REST list (upper case) and the webhook (lower case) agree."""
    lines = (events.DATA / "pygithub-replay" / "PullRequestReview.testAttributes.txt").read_text()
    body = next(line for line in lines.splitlines() if line.startswith("[{"))
    rest = [review_from_json(item) for item in json.loads(body)]
    assert {r.state for r in rest} <= {"APPROVED", "COMMENTED", "CHANGES_REQUESTED", "DISMISSED"}
    assert rest[0] == Review(
        28482091,
        "jzelinskie",
        "User",
        "APPROVED",
        "7a0fcb27b7cd6c346fc3f76216ccb6e0f4ca3bcc",
        datetime(2017, 3, 22, 19, 6, 59, tzinfo=timezone.utc),
    )
    hook = review_from_json(events.load_payload("pull_request_review", "submitted")["review"])
    assert hook.state == "COMMENTED"
    assert hook.submitted_at == datetime(2019, 5, 15, 15, 20, 38, tzinfo=timezone.utc)


def test_review_validates_state_and_makes_time_aware() -> None:
    with pytest.raises(ValueError, match="unknown review state"):
        Review(1, "writer", "User", "LGTM", HEAD, None)
    naive = Review(1, "writer", "User", "approved", HEAD, datetime(2026, 1, 1))
    assert naive.state == "APPROVED"
    assert naive.submitted_at == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_is_bot() -> None:
    assert is_bot("github-actions[bot]", "Bot")
    assert is_bot("Renovate[BOT]", "User")
    assert is_bot("copilot", "Bot")
    assert not is_bot("botanist", "User")


def test_permissions_that_count() -> None:
    assert {"admin", "maintain", "write"} == COUNTING_PERMISSIONS
    for level in ("ADMIN", "Maintain", "write"):
        assert decide([review("approved", "x")], permissions={"x": level}).decision == "approve"
    for level in ("triage", "read", "none", ""):
        assert decide([review("approved", "x")], permissions={"x": level}).decision == "pending"


def test_only_reviews_that_could_count_need_a_permission() -> None:
    reviews = [
        review("approved", "writer", minute=1),
        review("approved", "reader", minute=2, commit=OLD),  # stale: no lookup
        review("commented", "triager", minute=3),  # comment: no lookup
        review("approved", AUTHOR, minute=4),
        review("approved", "renovate[bot]", minute=5),
        review("approved", "claude-seat", minute=6),
        review("changes_requested", "maintainer", minute=7, commit=OLD),  # stands: lookup
        review("approved", "owner", minute=8, dismissed=True),
        review("approved", "second-writer", minute=9),
        review("changes_requested", "second-writer", minute=10),
    ]
    wanted = logins_needing_permission(reviews, head_sha=HEAD, author=AUTHOR, seat_logins=SEATS)
    assert wanted == ("writer", "maintainer", "second-writer")


# ---------------------------------------------------------------------------- the schemas bite


def test_event_builders_refuse_what_github_could_not_send() -> None:
    event = events.review_event("approved", reviewer="writer", commit_id=HEAD, author=AUTHOR)
    event["review"]["state"] = "APPROVED"  # REST spelling: not in a webhook
    with pytest.raises(jsonschema.ValidationError):
        events.validate_event("pull_request_review", event)
    with pytest.raises(jsonschema.ValidationError):
        events.review_event("approve", reviewer="writer", commit_id=HEAD, author=AUTHOR)
    dismissed = events.review_event(
        "approved", reviewer="writer", commit_id=HEAD, author=AUTHOR, dismissed=True
    )
    dismissed["review"]["state"] = "approved"
    with pytest.raises(jsonschema.ValidationError):
        events.validate_event("pull_request_review.dismissed", dismissed)
    labeled = events.pull_request_event(
        "labeled", head_ref="feature", head_sha=HEAD, labels=["loop-contract:demo"]
    )
    labeled["surprise"] = True
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        events.validate_event("pull_request", labeled)
    with pytest.raises(ValueError, match="fork needs another author"):
        events.pull_request_event("opened", head_ref="x", head_sha=HEAD, fork=True)


def test_fork_variants_look_like_forks() -> None:
    hook = events.review_event(
        "approved", reviewer="writer", commit_id=HEAD, author=AUTHOR, fork=True
    )
    head = hook["pull_request"]["head"]
    assert head["repo"]["fork"] is True
    assert head["repo"]["full_name"] == f"{AUTHOR}/Hello-World"
    assert head["repo"]["full_name"] != hook["repository"]["full_name"]
    opened = events.pull_request_event(
        "opened",
        head_ref="loop-contract/demo/seat-a",
        head_sha=HEAD,
        fork=True,
        author=AUTHOR,
        labels=["loop-contract:demo"],
    )
    assert opened["pull_request"]["head"]["label"] == f"{AUTHOR}:loop-contract/demo/seat-a"
    assert [label["name"] for label in opened["pull_request"]["labels"]] == ["loop-contract:demo"]
    run = events.workflow_run_event(
        head_sha=HEAD,
        head_branch="loop-contract/demo/seat-a",
        pull_requests=None,
        head_repository=f"{AUTHOR}/octo-repo",
    )
    assert run["workflow_run"]["pull_requests"] == []
    assert run["workflow_run"]["head_sha"] == HEAD
    same_repo = events.workflow_run_event(
        head_sha=HEAD, head_branch="loop-contract/demo/seat-a", pull_requests=[5]
    )
    (entry,) = same_repo["workflow_run"]["pull_requests"]
    assert (entry["number"], entry["head"]["sha"]) == (5, HEAD)


# ---------------------------------------------------------------------------- properties

LOGINS = ["writer", "maintainer", "reader", AUTHOR, "claude-seat", "renovate[bot]", "x"]


@st.composite
def review_lists(draw: st.DrawFn) -> list[Review]:
    count = draw(st.integers(min_value=0, max_value=8))
    ids = draw(st.lists(st.integers(1, 10_000), min_size=count, max_size=count, unique=True))
    out = []
    for review_id in ids:
        out.append(
            Review(
                id=review_id,
                login=draw(st.sampled_from(LOGINS)),
                user_type=draw(st.sampled_from(["User", "User", "Bot"])),
                state=draw(
                    st.sampled_from(["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED"])
                ),
                commit_id=draw(st.sampled_from([HEAD, OLD])),
                # few distinct times, so ties (broken by id) are common
                submitted_at=T0 + timedelta(minutes=draw(st.integers(0, 3))),
            )
        )
    return out


@settings(max_examples=300, deadline=None)
@given(reviews=review_lists(), data=st.data())
def test_decision_does_not_depend_on_listing_order(
    reviews: list[Review], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(reviews))
    assert decide(shuffled) == decide(reviews)


@settings(max_examples=300, deadline=None)
@given(reviews=review_lists())
def test_what_counts_is_a_writer_and_comments_change_nothing(reviews: list[Review]) -> None:
    result = decide(reviews)
    assert len(result.counted) + len(result.ignored) == len(reviews)
    for login in result.counted:
        assert PERMISSIONS.get(login) in COUNTING_PERMISSIONS
        assert login != AUTHOR and login not in SEATS and not login.endswith("[bot]")
    if result.decision != "pending":
        assert result.by in result.counted
    comment = Review(99_999, "writer", "User", "COMMENTED", HEAD, T0 + timedelta(hours=1))
    with_comment = decide([*reviews, comment])
    assert (with_comment.decision, with_comment.by) == (result.decision, result.by)


def test_an_unknown_head_is_refused() -> None:
    ghost_commit = review_from_json(
        {"id": 9, "user": {"login": "writer"}, "state": "APPROVED", "commit_id": None}
    )
    with pytest.raises(ValueError, match="head_sha is required"):
        decide([ghost_commit], head_sha="")


# ---------------------------------------------------------------------------- over the API

REPO = "octo/demo"
PR = 7
FORK_PR = 8


def _reviewers_type(spec: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    return {kw["reviewer"]: kw["reviewer_type"] for _, kw in spec if "reviewer_type" in kw}


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        owner, name = REPO.split("/")
        gh.add_repo(owner, name)
        gh.add_pull(PR, "loop-contract/demo/seat-author", HEAD, AUTHOR)
        gh.add_pull(FORK_PR, "loop-contract/demo/seat-author", HEAD, AUTHOR, fork=True)
        for login, level in PERMISSIONS.items():
            if login != "sneaky-bot":
                gh.set_permission(login, level)
        gh.add_user("sneaky-bot", type="Bot")
        gh.set_permission("sneaky-bot", "write")
        yield gh


def api_repo(fake: FakeGitHub, *, per_page: int = 30) -> Repository:
    """A real PyGithub client on the fake server (no retries: every request is counted once)."""
    client = Github(
        auth=Auth.Token("test-token"),
        base_url=fake.base_url,
        per_page=per_page,
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    return client.get_repo(REPO)


def store(fake: FakeGitHub, pr: int, reviews: Sequence[Review]) -> None:
    """Put reviews, parsed from webhook variants, where GitHub keeps them: behind the API."""
    for item in reviews:
        when = item.submitted_at
        assert when is not None
        fake.add_review(
            pr, item.login, item.state, item.commit_id, when.strftime("%Y-%m-%dT%H:%M:%SZ")
        )


@pytest.mark.parametrize(
    ("spec", "decision", "by"),
    [case[1:4] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_api_gate_decides_like_the_pure_rule(
    fake: FakeGitHub, spec: list[tuple[str, dict[str, Any]]], decision: str, by: str | None
) -> None:
    for login, kind in _reviewers_type(spec).items():
        fake.add_user(login, type=kind)
    store(fake, PR, build(spec))
    store(fake, FORK_PR, build(spec, fork=True))
    repo = api_repo(fake)
    result = gate_for_pr(repo, PR, seat_logins=SEATS)
    assert (result.decision, result.by, result.head_sha) == (decision, by, HEAD)
    # The pure rule on the same reviews agrees (the API reports maintain as write, triage as
    # read, an unknown user as none, so only the decision and the person are compared).
    pure = decide(build(spec))
    assert (pure.decision, pure.by, pure.counted) == (result.decision, result.by, result.counted)
    # A pull request from a fork decides the same: nothing comes from the event payload.
    assert gate_for_pr(repo, FORK_PR, seat_logins=SEATS) == result


def test_api_head_comes_from_the_pull_request_now(fake: FakeGitHub) -> None:
    """A fork's review event says the head is OLD; only the API's head counts."""
    event = events.review_event(
        "approved",
        reviewer="writer",
        commit_id=OLD,
        author=AUTHOR,
        fork=True,
        head_sha=OLD,
        number=FORK_PR,
    )
    store(fake, FORK_PR, [review_from_json(event["review"])])
    repo = api_repo(fake)
    stale = gate_for_pr(repo, FORK_PR, seat_logins=SEATS)
    assert stale.decision == "pending"
    assert stale.ignored == (("writer", "not on the current head"),)
    fake.set_pull_head(FORK_PR, OLD)
    assert gate_for_pr(repo, FORK_PR, seat_logins=SEATS).decision == "approve"
    fake.set_pull_head(FORK_PR, "9" * 40)  # a new push: the approval is stale again
    assert gate_for_pr(repo, FORK_PR, seat_logins=SEATS).decision == "pending"


def test_api_request_count_is_minimal(fake: FakeGitHub) -> None:
    store(
        fake,
        PR,
        [
            review("approved", "writer", minute=1),
            review("approved", "reader", minute=2, commit=OLD),  # stale: no lookup
            review("commented", "triager", minute=3),  # comment: no lookup
            review("approved", AUTHOR, minute=4),  # author: no lookup
            review("approved", "renovate[bot]", minute=5),  # bot: no lookup
            review("approved", "claude-seat", minute=6),  # seat: no lookup
            review("approved", "owner", minute=7, dismissed=True),  # dismissed: no lookup
            review("approved", "second-writer", minute=8),  # superseded by the next
            review("changes_requested", "second-writer", minute=9),
        ],
    )
    repo = api_repo(fake, per_page=2)
    before = len(fake.requests)
    result = gate_for_pr(repo, PR, seat_logins=SEATS)
    made = fake.requests[before:]
    assert result.decision == "reject"
    assert result.by == "second-writer"
    assert result.counted == ("writer", "second-writer")
    pull = f"/repos/{REPO}/pulls/{PR}"
    permission = f"/repos/{REPO}/collaborators/{{}}/permission"
    assert sorted(made) == sorted(
        [("GET", pull)]
        + [("GET", f"{pull}/reviews")] * 5  # 9 reviews, 2 a page
        + [("GET", permission.format("writer")), ("GET", permission.format("second-writer"))]
    )


def test_api_no_reviews_needs_no_permission_lookup(fake: FakeGitHub) -> None:
    repo = api_repo(fake)
    before = len(fake.requests)
    assert gate_for_pr(repo, PR, seat_logins=SEATS).decision == "pending"
    assert fake.count("GET", r"/permission$") == 0
    assert len(fake.requests) - before == 2  # the pull request, one page of (no) reviews


def test_api_permission_not_found_means_none(fake: FakeGitHub) -> None:
    store(fake, PR, [review("approved", "writer")])
    fake.fail_next("GET", r"/collaborators/writer/permission$", 404)
    result = gate_for_pr(api_repo(fake), PR, seat_logins=SEATS)
    assert result.decision == "pending"
    assert result.ignored == (("writer", "permission none"),)


def test_api_permission_refused_fails_closed(fake: FakeGitHub) -> None:
    """A token without push access cannot read permissions (recorded by PyGithub): refuse."""
    recorded = (
        events.DATA / "pygithub-replay" / "Repository.testCollaboratorPermissionNoPushAccess.txt"
    ).read_text("utf-8")
    body = json.loads(recorded.strip().splitlines()[-1])
    store(fake, PR, [review("approved", "writer")])
    fake.fail_next("GET", r"/collaborators/writer/permission$", 403, body=body)
    with pytest.raises(ReviewGateError, match=r"HTTP 403.*Must have push access"):
        gate_for_pr(api_repo(fake), PR, seat_logins=SEATS)
