"""``loop-contract github publish``: score the contest from artifacts, post it, mark the winner.

Runs in the privileged ``workflow_run`` workflow, which never checks out or runs pull-request
code. Everything that came from the candidates is data:

* the list of candidates, their head SHAs and authors come from the API, never from an
  artifact (for a fork ``workflow_run.pull_requests`` is empty, so the open pull requests are
  listed instead);
* each artifact is checked (layout, sizes, JSON, the verdict schema, the SHA it claims) and a
  verdict measured against another contract, or not by the isolated launcher, is refused;
* the judges (commands from the default branch's contract) get the diffs inside scrubbed
  packets, exactly as in a local contest, and run in empty folders.

Then the same pure matrix and bracket decide, one sticky comment per pull request carries the
report, and the commit status ``loop-contract/winner`` marks the proposed winner. Requests: two
to list the repository's candidates, at most three per candidate (find the comment, write it,
set the status) and two for the state file on the data branch, so ``4 + 3N`` when something
changed and only reads when nothing did.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github.Repository import Repository

from ..contest.bracket import Entrant, run_bracket
from ..contest.lessons import Lesson, lesson_from_verdict
from ..contest.markup import escape_markdown_inline
from ..contest.matrix import score_matrix
from ..contest.packets import CandidateView
from ..contest.panel import (
    PanelSettings,
    bracket_document,
    convene,
    lesson_document,
    lesson_scope,
    matrix_document,
    task_of,
)
from ..contest.report import render_markdown
from ..contest.seats import Seat, seats_from_contract
from ..contest.standing import gate_stage, gate_summary
from ..contract import Contract
from ..evaluate import utc_now
from .artifacts import ArtifactCheck, check_artifacts, verdict_problems
from .comments import upsert_sticky_comment
from .contest_state import DATA_BRANCH, read_state, read_state_and_sha, state_path, write_state
from .pulls import CandidatePR, list_candidates
from .statuses import StatusDecision, set_winner_statuses

__all__ = [
    "DATA_BRANCH",
    "PublishOutcome",
    "comment_body",
    "publish",
    "read_state",
    "state_path",
    "write_state",
]

log = logging.getLogger("loopcontract.github")

COMMENT_LIMIT = 60_000
SUMMARY_CHARS = 900_000
STATE_DIFF_CHARS = 200_000
"""A recorded candidate's diff kept on the data branch for the judges of later rounds."""
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


def publish(
    repo: Repository,
    *,
    contract: Contract,
    artifacts: Path,
    workdir: Path,
    bot_login: str,
    run_id: str,
    run_head_sha: str | None = None,
    summary_pointer: str = "The full report is in the job summary of the publish run.",
) -> PublishOutcome:
    """Score the contest of ``contract`` from the artifacts in ``artifacts`` and publish it.

    ``run_head_sha`` is the verify run's head commit (from the ``workflow_run`` event). A
    pull request controls the verify run it triggered, so only the artifact of the candidate
    whose head *is* that commit is taken from this run; every other candidate keeps the
    verification recorded on the data branch for its current head (or waits for its own run).
    ``None`` (a local call) takes every artifact.
    """
    candidates = list_candidates(repo, contract.id)
    if not candidates:
        log.info(
            "no open pull request is a candidate of contest %s: nothing to publish", contract.id
        )
    state, state_sha = read_state_and_sha(repo, contract.id)
    verified: dict[str, Any] = dict(state.get("verified") or {}) if state else {}
    own = [c for c in candidates if run_head_sha is None or c.head_sha == run_head_sha]
    checks = check_artifacts(artifacts, expected={c.number: c.head_sha for c in own})
    configured = {seat.name: seat for seat in seats_from_contract(contract)}
    entries = []
    for pull in candidates:
        check = _check_for(pull, checks, verified, run_head_sha)
        if check is None:
            log.info(
                "#%d: not verified yet at %s; left out of this round",
                pull.number,
                pull.head_sha[:12],
            )
            continue
        entries.append(_entry(pull, check, configured, contract))
    lessons = contest_lessons(contract, entries, f"github-{run_id}")
    result = _score(contract, entries, configured, workdir, run_id, bot_login, repo.full_name)
    result["lessons"] = [lesson_document(lesson) for lesson in lessons]
    by_seat = {e["doc"]["seat"]: e for e in entries}
    comments: dict[int, str] = {}
    decisions: list[StatusDecision] = []
    for entry in entries:
        cand: CandidatePR = entry["pr"]
        body = comment_body(result, entry["doc"], summary_pointer)
        comments[cand.number] = upsert_sticky_comment(
            repo, cand.number, contract_id=contract.id, body=body, bot_login=bot_login
        )
        if comments[cand.number] == "unchanged":
            continue  # nothing changed for this pull request: no status write either
        decisions.append(_status(result, entry["doc"], cand))
    statuses = set_winner_statuses(repo, decisions, check_existing=False) if decisions else []
    winner = result.get("winner")
    winner_pr = by_seat[winner]["pr"].number if winner in by_seat else None
    if any(action != "unchanged" for action in comments.values()):
        new_state = {
            "result": result,
            "pulls": _pulls(entries),
            "verified": verified,
            "lessons": [lesson.to_json() for lesson in lessons],
            "domain": lesson_scope(contract)[0],
        }
        write_state(repo, contract.id, new_state, known_sha=state_sha)
    summary = render_markdown(result, max_chars=SUMMARY_CHARS)
    return PublishOutcome(result, comments, statuses, winner_pr, summary)


def _check_for(
    cand: CandidatePR,
    checks: Mapping[int, ArtifactCheck],
    verified: dict[str, Any],
    run_head_sha: str | None,
) -> ArtifactCheck | None:
    """This run's artifact for the run's own candidate; the recorded one for the others."""
    key = str(cand.number)
    if run_head_sha is None or cand.head_sha == run_head_sha:
        check = checks.get(cand.number)
        if check is not None and check.ok and check.verdict is not None:
            verified[key] = {
                "head_sha": cand.head_sha,
                "verdict": dict(check.verdict),
                "diff": (check.diff or "")[:STATE_DIFF_CHARS],
            }
        return check
    record = verified.get(key)
    if not isinstance(record, Mapping) or record.get("head_sha") != cand.head_sha:
        return None
    verdict = record.get("verdict")
    problems = verdict_problems(verdict, cand.head_sha)
    return ArtifactCheck(
        cand.number,
        verdict if isinstance(verdict, Mapping) and not problems else None,
        str(record.get("diff") or ""),
        [f"recorded verification: {p}" for p in problems],
    )


def _entry(
    cand: CandidatePR,
    check: ArtifactCheck | None,
    configured: Mapping[str, Seat],
    contract: Contract,
) -> dict[str, Any]:
    seat = configured.get(cand.seat)
    family = seat.family if seat else cand.seat
    problems = list(check.problems) if check else ["no artifact for this pull request"]
    verdict = dict(check.verdict) if check and check.verdict is not None else None
    if verdict is not None and not problems:
        sha = (verdict.get("contract") or {}).get("sha256")
        if sha != contract.sha256:
            problems.append(
                f"verdict measured against another contract (sha256 {str(sha)[:12]}, the base "
                f"branch's is {contract.sha256[:12]})"
            )
        if verdict.get("trust") != "isolated":
            problems.append("verdict not produced by the isolated launcher")
    if problems:
        for problem in problems:
            log.warning("pull request #%d: artifact rejected: %s", cand.number, problem)
        verdict = None
    stage = "hard" if verdict is None else (gate_stage(verdict) or "passed")
    reasons = (
        [{"code": "artifact_rejected", "message": "; ".join(problems)[:1000]}]
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
        "gates": gate_summary(verdict) if verdict else {"hard": [], "measured": [], "tamper": []},
        "reasons": reasons,
    }
    return {
        "pr": cand,
        "doc": doc,
        "verdict": verdict,
        "diff": check.diff if check and verdict is not None else None,
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
    settings = PanelSettings.of(contract)
    survivors = [e for e in entries if e["doc"]["stage"] == "passed"]
    matrix_doc: dict[str, Any] | None = None
    bracket_doc: dict[str, Any] | None = None
    escalations: list[dict[str, str]] = []
    winner: str | None = None
    if len(survivors) == 1:
        winner = survivors[0]["doc"]["seat"]
        bracket_doc = {
            "rounds": [],
            "finalists": [winner],
            "proposed_winner": winner,
            "decided_by": None,
            "reason": "the only candidate through the gates wins without a matrix",
        }
    elif survivors:
        views = [
            CandidateView(
                seat=e["doc"]["seat"],
                family=e["doc"]["family"],
                diff=e["diff"] or "",
                gates=gate_summary(e["verdict"]),
                tests=dict(e["verdict"].get("summary") or {}),
            )
            for e in survivors
        ]
        identities = [bot_login, repo_name]
        for e in entries:
            cand: CandidatePR = e["pr"]
            identities += [cand.seat, cand.author, cand.head_ref, e["doc"]["family"]]
        judges = [seat for seat in configured.values() if seat.judge]
        outcomes = convene(
            run_id=run_id,
            task=task_of(contract),
            views=views,
            judges=judges,
            identities=identities,
            rows=settings.rows,
            folder=workdir / "judges",
            parallel=4,
        )
        cells = [cell for o in outcomes for cell in o.cells]
        matrix = score_matrix(
            cells,
            {e["doc"]["seat"]: e["doc"]["family"] for e in survivors},
            min_score=settings.min_score,
            spread_threshold=settings.spread_threshold,
            dissent_threshold=settings.dissent_threshold,
        )
        matrix_doc = matrix_document(matrix, outcomes, cells, settings)
        entrants = []
        for e in survivors:
            score = matrix.candidates[e["doc"]["seat"]]
            if not score.passed:
                e["doc"]["stage"] = "matrix"
                e["doc"]["reasons"] = [
                    {"code": f.code, "message": f.message} for f in score.failures
                ]
            escalations += [
                {"code": x.code, "message": f"{e['doc']['seat']}: {x.message}"}
                for x in score.escalations
            ]
            entrants.append(Entrant(e["doc"]["seat"], score.overall, score.passed))
        bracket = run_bracket(
            entrants,
            cut=contract.bracket.get("cut", 2),
            final=int(contract.bracket.get("final", 2)),
        )
        bracket_doc = bracket_document(bracket)
        winner = bracket.proposed_winner
        for e in survivors:
            seat = e["doc"]["seat"]
            if e["doc"]["stage"] == "passed":
                e["doc"]["stage"] = "finalist" if seat in bracket.finalists else "bracket"
    for e in entries:
        if winner and e["doc"]["seat"] == winner:
            e["doc"]["stage"] = "winner"
        elif e["doc"]["stage"] == "passed":
            e["doc"]["stage"] = "finalist"
    status = "awaiting_human" if winner else "no_winner"
    if winner and escalations:
        status = "escalated"
    now = utc_now()
    return {
        "schema_version": 1,
        "run_id": f"github-{run_id}",
        "contract": {
            "id": contract.id,
            "path": contract.path.name,
            "sha256": contract.sha256,
            "goal": contract.goal,
            "mode": contract.mode,
            "dod": [{"id": i.id, "text": i.text} for i in contract.dod],
        },
        "started": now,
        "finished": now,
        "status": status,
        "attempts": 1,
        "seats": [
            {"name": e["doc"]["seat"], "family": e["doc"]["family"], "scripted": e["scripted"]}
            for e in entries
        ],
        "candidates": [e["doc"] for e in entries],
        "matrix": matrix_doc,
        "bracket": bracket_doc,
        "winner": winner,
        "escalations": escalations,
        "lessons": [],  # filled by the caller, from the same verdicts
        "decision": None,
        "certificate": None,
        "ledger": {
            "path": f"{DATA_BRANCH}:{state_path(contract.id)}",
            "head_seq": 0,
            "head": _ZERO,
        },
    }


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
    head = f"**This pull request is seat `{seat}`**: {stage}.\n\n"
    return head + render_markdown(
        result, max_chars=COMMENT_LIMIT - len(head) - 500, summary_pointer=pointer
    )


def _status(result: Mapping[str, Any], doc: Mapping[str, Any], cand: CandidatePR) -> StatusDecision:
    if result.get("winner") == doc["seat"]:
        return StatusDecision(
            cand.number, cand.head_sha, "success", "proposed winner: approve it with a review"
        )
    reason = doc["reasons"][0]["code"] if doc["reasons"] else doc["stage"]
    return StatusDecision(
        cand.number, cand.head_sha, "failure", f"not the winner: {doc['stage']} ({reason})"
    )


def _pulls(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        e["doc"]["seat"]: {
            "pr": e["pr"].number,
            "head_sha": e["pr"].head_sha,
            "author": e["pr"].author,
        }
        for e in entries
    }
