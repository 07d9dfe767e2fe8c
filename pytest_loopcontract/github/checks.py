"""The ``loop-contract`` check run on each candidate's head: the verdict's summary, and
annotations where the findings and the failing tests are.

Why beside the commit status: the status is one line for branch protection; a check run is
where GitHub shows a verdict to the person reading the pull request, with the failing lines
annotated in the diff. Built from the verdict publish accepted (never from the candidate's own
output), like the SARIF report.

* **Plan, then write.** :func:`plan_check_run` is pure (what the run says: conclusion, title,
  summary, annotations, cut to GitHub's limits); :func:`post_check_run` creates the run with the
  first 50 annotations and sends the rest 50 at a time by updating it (PATCH appends
  annotations), because GitHub accepts at most 50 per request.
* **Counted.** A check run costs ``1 + ceil((annotations - 50) / 50)`` requests; annotations
  are capped at :data:`MAX_ANNOTATIONS`, so one candidate costs at most
  :data:`MAX_REQUESTS` (the summary says how many were left out).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.contest.report.markup import escape_markdown_inline
from pytest_loopcontract.verdict import VerdictView
from pytest_loopcontract.verifier.reports.locate import test_place

__all__ = [
    "CHECK_NAME",
    "MAX_ANNOTATIONS",
    "MAX_REQUESTS",
    "PER_REQUEST",
    "CheckRunPlan",
    "plan_check_run",
    "post_check_run",
]

log = logging.getLogger("loopcontract.github")

CHECK_NAME = "loop-contract"
PER_REQUEST = 50  # GitHub's limit of annotations per create or update request
MAX_ANNOTATIONS = 200
MAX_REQUESTS = MAX_ANNOTATIONS // PER_REQUEST
SUMMARY_LIMIT = 65_535  # GitHub's limit on output.summary and output.text
MESSAGE_LIMIT = 4_000  # an annotation's message is shown inline: keep it readable
TITLE_LIMIT = 255


@dataclass(frozen=True)
class CheckRunPlan:
    """What one candidate's check run says."""

    head_sha: str
    conclusion: str  # success | failure
    title: str
    summary: str
    annotations: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0

    @property
    def requests(self) -> int:
        """Requests :func:`post_check_run` makes for this plan."""
        extra = max(0, len(self.annotations) - PER_REQUEST)
        return 1 + -(-extra // PER_REQUEST)


def _annotation(
    path: str, line: int | None, level: str, title: str, message: str
) -> dict[str, Any]:
    start = line if line is not None and line >= 1 else 1
    return {
        "path": path,
        "start_line": start,
        "end_line": start,
        "annotation_level": level,
        "title": title[:TITLE_LIMIT],
        "message": message[:MESSAGE_LIMIT] or title[:TITLE_LIMIT],
    }


def _annotations(view: VerdictView, contract_path: str) -> list[dict[str, Any]]:
    """Findings first (blocking ones as failures, allowed ones as notices), then failing tests."""
    out = []
    for finding in view.findings():
        level = "notice" if finding.get("allowed") else "failure"
        line = finding.get("line")
        out.append(
            _annotation(
                str(finding.get("path") or contract_path),
                line if isinstance(line, int) else None,
                level,
                f"tamper: {finding.get('code')}",
                str(finding.get("message") or ""),
            )
        )
    for record in view.records():
        outcome = str(record.get("outcome", ""))
        if outcome in ("passed", "xpassed", "xfailed", "skipped"):
            continue
        message = str(record.get("message") or f"{outcome}: {record['nodeid']}")
        place = test_place(str(record["nodeid"]), message)
        title = f"{outcome}: {record['nodeid']}"
        out.append(_annotation(place.file, place.line, "failure", title, message))
    return out


def _summary(verdict: Mapping[str, Any], seat: str, stage: str, left_out: int) -> str:
    view = VerdictView(verdict)
    counts = verdict.get("summary") or {}
    lines = [
        f"**Seat `{escape_markdown_inline(seat, limit=80)}`**: {stage}.",
        "",
        f"Verdict **{str(verdict.get('verdict')).upper()}** (exit {verdict.get('exit_code')}), "
        f"contract `{escape_markdown_inline(str((verdict.get('contract') or {}).get('id')))}`, "
        f"isolation `{verdict.get('isolation')}`.",
        "",
        f"Tests: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
        f"{counts.get('error', 0)} errors, {counts.get('skipped', 0)} skipped, "
        f"{counts.get('missing', 0)} missing.",
        "",
    ]
    lines += [
        f"- `{r.get('code')}`: {escape_markdown_inline(str(r.get('message')), limit=500)}"
        for r in view.reasons()[:50]
    ]
    if left_out:
        lines += ["", f"{left_out} more annotations were left out; the verdict has them all."]
    return "\n".join(lines)[:SUMMARY_LIMIT]


def plan_check_run(
    head_sha: str, verdict: Mapping[str, Any] | None, *, seat: str, stage: str, why: str = ""
) -> CheckRunPlan:
    """The check run of one candidate; ``verdict`` None when no verdict was accepted (``why``
    says why; the run then fails with no annotations)."""
    if verdict is None:
        summary = f"No verification of this head could be used: {why}"
        title = "verdict: none (verification not accepted)"
        return CheckRunPlan(head_sha, "failure", title, summary[:SUMMARY_LIMIT])
    contract_path = str((verdict.get("contract") or {}).get("path") or "loopcontract.yml")
    found = _annotations(VerdictView(verdict), contract_path)
    kept, left_out = found[:MAX_ANNOTATIONS], max(0, len(found) - MAX_ANNOTATIONS)
    conclusion = "success" if verdict.get("verdict") == "pass" else "failure"
    title = f"verdict: {str(verdict.get('verdict')).upper()} (exit {verdict.get('exit_code')})"
    summary = _summary(verdict, seat, stage, left_out)
    return CheckRunPlan(head_sha, conclusion, title, summary, kept, left_out)


def _chunks(items: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [list(items[i : i + PER_REQUEST]) for i in range(0, len(items), PER_REQUEST)] or [[]]


def post_check_run(repo: Repository, plan: CheckRunPlan, *, name: str = CHECK_NAME) -> int:
    """Create the check run (completed, first 50 annotations), then add the rest by updating
    it; returns the check run's id."""
    first, *rest = _chunks(plan.annotations)
    output: dict[str, Any] = {"title": plan.title, "summary": plan.summary, "annotations": first}
    run = repo.create_check_run(
        name=name,
        head_sha=plan.head_sha,
        status="completed",
        conclusion=plan.conclusion,
        output=output,
    )
    for chunk in rest:
        run.edit(output={"title": plan.title, "summary": plan.summary, "annotations": chunk})
    log.info("check run %s on %s: %s", name, plan.head_sha[:12], plan.title)
    return int(run.id)
