"""``loop-contract github publish``: score the contest from artifacts, post it, mark the winner.

Runs in the privileged ``workflow_run`` workflow, which never checks out or runs pull-request
code. Everything that came from the candidates is data:

* the list of candidates, their head SHAs and authors come from the API, never from an
  artifact (for a fork ``workflow_run.pull_requests`` is empty, so the open pull requests are
  listed instead); only those against the contest's base branch count (:mod:`.pulls`), and
  only those that may hold the seat they claim (:mod:`.seat_claims`): a refused claim gets its
  comment and a ``failure`` status, and no stage, score or place in the state;
* each artifact is checked (layout, sizes, JSON, the verdict schema, the SHA it claims) and a
  verdict measured against another contract, or not by the isolated launcher, is refused;
* the judges (commands from the default branch's contract) get the diffs inside scrubbed
  packets, exactly as in a local contest, and run in empty folders inside a sandbox
  (:func:`.seats.seat_box`): this job holds the write token;
* the state read back from the data branch counts only when the action wrote it
  (:mod:`.records`), and a candidate whose head has no verification (its run was cancelled,
  or never started) is verified again through ``workflow_dispatch``, once per head.

Which verification stands for each candidate, and whether the run deserves trust at all, is
decided by :mod:`.verification` and :mod:`.trust`. Then the same pure matrix and bracket decide,
one sticky comment per pull request carries the report, and the commit status
``loop-contract/winner`` is ``pending`` on the proposed winner (only the gate sets ``success``).
Requests for the publish of one run: the pull list, the state read and write, the verify
workflow at the head and on the default branch, the run's pull request's files, and at most
four per candidate (find the comment, write it, set the status, create the check run): ``6 + 4N``
when something changed, plus one per 50 annotations past a check run's first 50
(:mod:`.checks`: at most three more per candidate), three per refused claim (no check run),
and only reads when nothing did. Reading the state back costs one more (who wrote it,
:mod:`.records`), and each recorded verification one per 100 files of its pull request (its
files are checked again, and its diff is the API's). When a candidate has no verification at
its head: two (the queued and running runs) and, when it is requested again, two per request
(:mod:`.verify_dispatch`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from github.GithubException import GithubException
from github.Repository import Repository

from pytest_loopcontract.contest.engine import (
    Contestant,
    Panel,
    ResultFrame,
    decide,
    result_document,
)
from pytest_loopcontract.contest.lessons.learn import lesson_from_verdict
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.panel import (
    lesson_document,
    lesson_scope,
)
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.markup import escape_markdown_inline
from pytest_loopcontract.contest.result_file import empty_gates
from pytest_loopcontract.contest.seat_model import Seat, seats_from_contract
from pytest_loopcontract.contest.seats import runner_folders, seat_box
from pytest_loopcontract.contest.standing import gate_stage, gate_summary
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.fsio import utc_now
from pytest_loopcontract.github.accepted_verifications import Verification, collect_verifications
from pytest_loopcontract.github.checks import plan_check_run, post_check_run
from pytest_loopcontract.github.comments import upsert_sticky_comment
from pytest_loopcontract.github.contest_state import (
    DATA_BRANCH,
    read_trusted_state,
    state_path,
    write_state,
)
from pytest_loopcontract.github.pulls import CandidatePR, contest_base, list_candidates
from pytest_loopcontract.github.seat_claims import SeatRefusal, seat_bindings, settle_claims
from pytest_loopcontract.github.statuses import StatusDecision, set_winner_statuses
from pytest_loopcontract.github.trust import VerifyRun
from pytest_loopcontract.github.verify_dispatch import reverify_missing
from pytest_loopcontract.verifier.sandbox import Confinement

__all__ = ["PENDING_DESCRIPTION", "PublishOutcome", "comment_body", "publish", "refusal_body"]

log = logging.getLogger("loopcontract.github")

COMMENT_LIMIT = 60_000
SUMMARY_CHARS = 900_000
PENDING_DESCRIPTION = "proposed winner, waiting for a maintainer's review"
_ZERO = "0" * 64


@dataclass(frozen=True)
class PublishOutcome:
    """What publishing did: the result document, per pull request the comment action
    (``created`` / ``edited`` / ``unchanged``), the status lines, and the winner's number."""

    result: dict[str, Any]
    comments: Mapping[int, str]
    statuses: Sequence[str]
    winner_pr: int | None
    summary: str
    # per pull request: its head and the accepted verdict (what the SARIF and check run show)
    verdicts: Mapping[int, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    checks: Mapping[int, int] = field(default_factory=dict)  # pull request -> check run id
    refused: Sequence[SeatRefusal] = ()  # pull requests that claim a seat they may not hold
    warnings: Sequence[str] = ()  # what a maintainer should know (an ignored record)


@dataclass(frozen=True)
class _Notice:
    """What one pull request is told: its sticky comment, and its status (None: left as is)."""

    number: int
    body: str
    status: StatusDecision | None


def _new_state(
    contract: Contract,
    result: dict[str, Any],
    entries: list[dict[str, Any]],
    verified: dict[str, Any],
    lessons: list[Lesson],
) -> dict[str, Any]:
    """The contest's state file after this publish (the gate's record is carried apart)."""
    return {
        "result": result,
        "pulls": _pulls(entries),
        "verified": verified,
        "lessons": [lesson.to_json() for lesson in lessons],
        "domain": lesson_scope(contract)[0],
    }


def publish(
    repo: Repository,
    *,
    contract: Contract,
    artifacts: Path,
    workdir: Path,
    bot_login: str,
    run_id: str,
    run: VerifyRun | None = None,
    summary_pointer: str = "The full report is in the job summary of the publish run.",
) -> PublishOutcome:
    """Score the contest of ``contract`` from the artifacts in ``artifacts`` and publish it.

    ``run`` is the verify run of the ``workflow_run`` event (:mod:`.verification` says what it
    may speak for, :mod:`.trust` whether it deserves trust); ``None`` is a local call that
    reads every artifact. A recorded approval of the same winner at the same head is kept (the
    gate re-reads the reviews); once that winner is merged, the contest is final.
    """
    pulls = list_candidates(repo, contract.id, base=contest_base(contract))
    claims = settle_claims(pulls, seat_bindings(contract), bot_login=bot_login)
    candidates = list(claims.candidates)
    read = read_trusted_state(repo, contract.id, bot_login=bot_login)
    state, state_sha = read.document, read.sha
    warnings = [f"recorded state ignored: {read.problem}"] if read.problem else []
    if _final(state, pulls):
        log.info("contest %s was decided and its winner merged: nothing to publish", contract.id)
        result = dict(state["result"]) if state else {}
        summary = render_markdown(result, max_chars=SUMMARY_CHARS)
        return PublishOutcome(result, {}, [], None, summary, warnings=warnings)
    verified: dict[str, Any] = dict(state.get("verified") or {}) if state else {}
    found = collect_verifications(
        repo,
        contract=contract,
        candidates=candidates,
        artifacts=artifacts,
        verified=verified,
        run=run,
    )
    missing = [c for c in candidates if c.number not in found]
    asked = dict(state.get("requested") or {}) if state else {}
    requested = reverify_missing(repo, contract, missing, asked)
    configured = {seat.name: seat for seat in seats_from_contract(contract)}
    entries = [_entry(c, found[c.number], configured) for c in candidates if c.number in found]
    lessons = contest_lessons(contract, entries, f"github-{run_id}")
    result = _score(contract, entries, configured, workdir, run_id, bot_login, repo.full_name)
    result["lessons"] = [lesson_document(lesson) for lesson in lessons]
    carried = _carry_decision(state, result, entries)
    notices = _notices(result, entries, claims.refused, carried, summary_pointer)
    comments, decisions = _post_notices(repo, contract.id, notices, bot_login)
    statuses = set_winner_statuses(repo, decisions, check_existing=False) if decisions else []
    checks = _check_runs(repo, entries, comments)
    by_seat = {e["doc"]["seat"]: e for e in entries}
    winner = result.get("winner")
    winner_pr = by_seat[winner]["pr"].number if winner in by_seat else None
    # A state the action did not write is replaced by one it did, changed or not.
    changed = any(action != "unchanged" for action in comments.values()) or requested != asked
    if read.problem is not None or changed:
        new_state = _new_state(contract, result, entries, verified, lessons)
        new_state["requested"] = requested
        if state and carried and state.get("gate"):
            new_state["gate"] = state["gate"]
        write_state(repo, contract.id, new_state, known_sha=state_sha)
    summary = render_markdown(result, max_chars=SUMMARY_CHARS)
    verdicts = {e["pr"].number: (e["pr"].head_sha, e["verdict"]) for e in entries if e["verdict"]}
    return PublishOutcome(
        result, comments, statuses, winner_pr, summary, verdicts, checks, claims.refused, warnings
    )


def _notices(
    result: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    refused: Sequence[SeatRefusal],
    carried: bool,
    pointer: str,
) -> list[_Notice]:
    """Each candidate's and each refused claim's comment and status. No status for a carried
    winner's approval, nor for a refused claim whose head is a candidate's: a status belongs
    to the commit, and that commit's status is the candidate's."""
    notices = []
    for entry in entries:
        cand: CandidatePR = entry["pr"]
        keep = carried and result.get("winner") == entry["doc"]["seat"]
        status = None if keep else _status(result, entry["doc"], cand)
        notices.append(_Notice(cand.number, comment_body(result, entry["doc"], pointer), status))
    heads = {entry["pr"].head_sha for entry in entries}
    for refusal in refused:
        pull = refusal.pull
        status = None if pull.head_sha in heads else _refusal_status(refusal)
        notices.append(_Notice(pull.number, refusal_body(result, refusal, pointer), status))
    return notices


def _post_notices(
    repo: Repository, contract_id: str, notices: Sequence[_Notice], bot_login: str
) -> tuple[dict[int, str], list[StatusDecision]]:
    """One sticky comment per pull request (what was done to it), and the statuses to set:
    none where the comment did not change."""
    comments: dict[int, str] = {}
    decisions: list[StatusDecision] = []
    for notice in notices:
        comments[notice.number] = upsert_sticky_comment(
            repo, notice.number, contract_id=contract_id, body=notice.body, bot_login=bot_login
        )
        if comments[notice.number] != "unchanged" and notice.status is not None:
            decisions.append(notice.status)
    return comments, decisions


def _check_runs(
    repo: Repository, entries: Sequence[Mapping[str, Any]], comments: Mapping[int, str]
) -> dict[int, int]:
    """A check run on each candidate's head whose report changed (as for the statuses). A
    refused request (a workflow without ``checks: write``) is logged, never fatal: the
    comment and the status already carry the decision."""
    posted: dict[int, int] = {}
    for entry in entries:
        cand: CandidatePR = entry["pr"]
        if comments.get(cand.number, "unchanged") == "unchanged":
            continue
        doc = entry["doc"]
        why = str(doc["reasons"][0]["message"]) if doc["reasons"] else ""
        plan = plan_check_run(
            cand.head_sha, entry["verdict"], seat=str(doc["seat"]), stage=str(doc["stage"]), why=why
        )
        try:
            posted[cand.number] = post_check_run(repo, plan)
        except GithubException as exc:
            log.warning("pull request #%d: no check run (%s %s)", cand.number, exc.status, exc)
    return posted


def _final(state: Mapping[str, Any] | None, pulls: Sequence[CandidatePR]) -> bool:
    """An approved winner that is no longer open (merged): its decision is final. ``pulls``
    are all the contest's open pull requests, refused claims included: a winner whose seat
    another pull request claims is still open."""
    if not state:
        return False
    result = state.get("result") or {}
    decision = result.get("decision") or {}
    if decision.get("decision") != "approve":
        return False
    pull = (state.get("pulls") or {}).get(result.get("winner")) or {}
    return pull.get("pr") not in {c.number for c in pulls}


def _carry_decision(
    state: Mapping[str, Any] | None, result: dict[str, Any], entries: Sequence[Mapping[str, Any]]
) -> bool:
    """Keep a person's recorded decision when the winner and its head are the same; a new
    winner or a new head reopens it. Returns whether a decision was carried."""
    old = (state or {}).get("result") or {}
    decision = old.get("decision")
    winner = result.get("winner")
    if not decision or not winner or old.get("winner") != winner:
        return False
    before = ((state or {}).get("pulls") or {}).get(winner) or {}
    now = next((e["pr"] for e in entries if e["doc"]["seat"] == winner), None)
    if now is None or before.get("head_sha") != now.head_sha:
        return False
    result["decision"] = decision
    result["status"] = "decided" if decision.get("decision") == "approve" else "rejected"
    return True


def _entry(
    cand: CandidatePR,
    found: Verification,
    configured: Mapping[str, Seat],
) -> dict[str, Any]:
    seat = configured.get(cand.seat)
    family = seat.family if seat else cand.seat
    verdict = dict(found.verdict) if found.accepted and found.verdict is not None else None
    if verdict is None:
        log.warning("pull request #%d: %s: %s", cand.number, found.code, found.message)
    stage = "hard" if verdict is None else (gate_stage(verdict) or "passed")
    reasons = (
        [{"code": found.code, "message": found.message[:1000]}]
        if verdict is None
        else [{"code": str(r["code"]), "message": str(r["message"])} for r in verdict["reasons"]]
    )
    doc: dict[str, Any] = {
        "seat": cand.seat,
        "family": family,
        "attempt": 1,
        "outcome": "ok",
        "branch": cand.head_ref,
        "commit": cand.head_sha,
        "tree": None,
        "same_tree_as": [],
        "provenance": {
            "command": [],
            "exit_code": None,
            "tokens": None,
            "cost_usd": None,
            "seconds": None,
            "reason": f"pull request #{cand.number} by {cand.author}",
        },
        "verdict": verdict.get("verdict") if verdict else None,
        "exit_code": verdict.get("exit_code") if verdict else None,
        "verdict_path": None,
        "stage": stage,
        "gates": gate_summary(verdict) if verdict else empty_gates(),
        "reasons": reasons,
    }
    return {
        "pr": cand,
        "doc": doc,
        "verdict": verdict,
        "diff": found.diff if verdict is not None else None,
        "scripted": bool(seat and seat.scripted),
    }


def _score(
    contract: Contract,
    entries: list[dict[str, Any]],
    configured: Mapping[str, Seat],
    workdir: Path,
    run_id: str,
    bot_login: str,
    repo_name: str,
) -> dict[str, Any]:
    """The engine's decision over the pull requests that passed their gates, as a result."""
    survivors = [e for e in entries if e["doc"]["stage"] == "passed"]
    identities = [bot_login, repo_name]
    for e in entries:
        cand: CandidatePR = e["pr"]
        identities += [cand.seat, cand.author, cand.head_ref, e["doc"]["family"]]
    panel = Panel(
        judges=[seat for seat in configured.values() if seat.judge],
        identities=identities,
        folder=workdir / "judges",
        parallel=4,
        confine=partial(judge_box, contract),
    )
    contestants = [
        Contestant(e["doc"]["seat"], e["doc"]["family"], e["diff"] or "", e["verdict"])
        for e in survivors
    ]
    # No re-run of a dissent's gates here: this job never runs pull-request code.
    decision = decide(contract, run_id, contestants, panel)
    if decision.scoring is not None:
        for e in entries:
            seat = e["doc"]["seat"]
            e["doc"]["stage"] = decision.scoring.stages.get(seat, e["doc"]["stage"])
            e["doc"]["reasons"] = decision.scoring.reasons.get(seat, e["doc"]["reasons"])
    now = utc_now()
    frame = ResultFrame(
        run_id=f"github-{run_id}",
        contract_path=contract.path.name,
        started=now,
        finished=now,
        attempts=1,
        seats=[
            {"name": e["doc"]["seat"], "family": e["doc"]["family"], "scripted": e["scripted"]}
            for e in entries
        ],
        candidates=[e["doc"] for e in entries],
        ledger={"path": f"{DATA_BRANCH}:{state_path(contract.id)}", "head_seq": 0, "head": _ZERO},
        escalations=decision.escalations(),
    )
    return result_document(contract, decision, frame)


def judge_box(contract: Contract, judge: Seat) -> Confinement:
    """A judge's sandbox in the publish job, whose runner holds the write token: no view of
    the job's processes, the runner's home, temporary folder or workspace. Required unless
    the contract says ``github: {require_sandbox: false}``."""
    required = contract.github.require_sandbox
    return seat_box(judge, "judge", required=required, hidden=runner_folders(os.environ))


def contest_lessons(
    contract: Contract, entries: Sequence[Mapping[str, Any]], run_id: str
) -> list[Lesson]:
    """One lesson per candidate stopped by a gate, from its verdict (never its text)."""
    domain, tags = lesson_scope(contract)
    found: dict[str, Lesson] = {}
    for entry in entries:
        verdict = entry.get("verdict")
        if verdict is None or entry["doc"]["stage"] not in ("hard", "measured"):
            continue
        lesson = lesson_from_verdict(
            verdict,
            domain=domain,
            tags=tags,
            contract_id=contract.id,
            run_id=run_id,
            seat=str(entry["doc"]["seat"]),
        )
        if lesson is not None:
            found.setdefault(lesson.id, lesson)
    return list(found.values())


_REFUSALS = {
    "verification_untrusted": "its verification cannot be trusted, so it cannot win",
    "duplicate_head": "it shares its head commit with another candidate, so it cannot win",
}


def comment_body(result: Mapping[str, Any], doc: Mapping[str, Any], pointer: str) -> str:
    seat = escape_markdown_inline(str(doc["seat"]), limit=80)
    stage = {
        "winner": "the proposed winner: an approving review by a maintainer decides",
        "finalist": "a finalist, not the proposed winner",
        "bracket": "cut in the bracket",
        "matrix": "did not pass the judges' validity matrix",
        "measured": "failed a measured gate",
        "hard": "failed a hard gate (or its verification could not be used)",
    }.get(str(doc["stage"]), str(doc["stage"]))
    reason = doc["reasons"][0] if doc["reasons"] else {}
    refusal = _REFUSALS.get(str(reason.get("code")))
    if refusal is not None:
        why = escape_markdown_inline(str(reason.get("message") or ""), limit=1500)
        stage = f"{refusal}.\n\n**Why** (`{reason['code']}`): {why}"
    return _with_report(f"**This pull request is seat `{seat}`**: {stage}.\n\n", result, pointer)


def refusal_body(result: Mapping[str, Any], refusal: SeatRefusal, pointer: str) -> str:
    """The comment of a pull request that claims a seat it may not hold: why, what to do."""
    seat = escape_markdown_inline(refusal.pull.seat, limit=80)
    why = escape_markdown_inline(refusal.message, limit=1500)
    head = (
        f"**This pull request claims seat `{seat}` but is not its candidate**, so it cannot "
        f"win.\n\n**Why** (`{refusal.code}`, `{refusal.reason}`): {why}\n\n"
    )
    return _with_report(head, result, pointer)


def _with_report(head: str, result: Mapping[str, Any], pointer: str) -> str:
    return head + render_markdown(
        result, max_chars=COMMENT_LIMIT - len(head) - 500, summary_pointer=pointer
    )


def _status(result: Mapping[str, Any], doc: Mapping[str, Any], cand: CandidatePR) -> StatusDecision:
    if result.get("winner") == doc["seat"]:
        # Never success here: only the gate sets it, after an approval that counts.
        return StatusDecision(cand.number, cand.head_sha, "pending", PENDING_DESCRIPTION)
    reason = doc["reasons"][0]["code"] if doc["reasons"] else doc["stage"]
    return StatusDecision(
        cand.number, cand.head_sha, "failure", f"not the winner: {doc['stage']} ({reason})"
    )


def _refusal_status(refusal: SeatRefusal) -> StatusDecision:
    pull = refusal.pull
    text = f"not a candidate of seat {pull.seat}: {refusal.code} ({refusal.reason})"
    return StatusDecision(pull.number, pull.head_sha, "failure", text)


def _pulls(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        e["doc"]["seat"]: {
            "pr": e["pr"].number,
            "head_sha": e["pr"].head_sha,
            "author": e["pr"].author,
        }
        for e in entries
    }
