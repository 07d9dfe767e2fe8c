"""The lesson a failed verdict teaches: its deciding gate, in rank order, turned into a rule.

Which gate decides (tampering, then the first failing hard gate, then the
first failing measured gate, else the reason codes) is the one rule that keeps a lesson's cause
unambiguous; the wording is in :mod:`.drafts`, the record in :mod:`.model`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_loopcontract.contest.lessons.drafts import (
    error_draft,
    hard_draft,
    measured_draft,
    tamper_draft,
)
from pytest_loopcontract.contest.lessons.evidence import (
    PASSING,
    as_list,
    as_map,
    is_one_of,
    one_line,
)
from pytest_loopcontract.contest.lessons.model import (
    CAUSE_CHARS,
    DOMAIN_PATTERN,
    EVIDENCE_CHARS,
    RULE_CHARS,
    WHAT_CHARS,
    Draft,
    Lesson,
    lesson_id,
    utc_stamp,
)

__all__ = [
    "lesson_from_verdict",
]


def _deciding(verdict: Mapping[str, Any]) -> Draft | None:
    draft = tamper_draft(verdict)
    if draft is not None:
        return draft
    gates = as_map(verdict.get("gates"))
    for gate in as_list(gates.get("hard")):
        gate = as_map(gate)
        if not is_one_of(gate.get("status"), PASSING):
            return hard_draft(gate, verdict)
    for gate in as_list(gates.get("measured")):
        gate = as_map(gate)
        if not is_one_of(gate.get("status"), PASSING):
            return measured_draft(gate)
    if is_one_of(verdict.get("verdict"), ("fail", "error")):
        return error_draft(verdict)
    return None


def lesson_from_verdict(
    verdict: Mapping[str, Any],
    *,
    domain: str,
    tags: Iterable[str] = (),
    contract_id: str,
    run_id: str,
    seat: str,
    now: dt.datetime | str | None = None,
) -> Lesson | None:
    """The lesson a failed verdict teaches, or ``None`` when the verdict passed.

    The deciding gate is, in order: the first blocking tamper finding, the first hard gate
    that did not pass, the first measured gate that did not pass, else (for a ``fail`` or
    ``error`` verdict) the reason codes. Only verifier-produced fields are read (see the
    module docstring); ``domain``, ``tags``, ``contract_id``, ``run_id`` and ``seat`` come from
    the contract and the orchestrator. ``now`` (default: the current time) stamps ``created``.
    """
    if not DOMAIN_PATTERN.fullmatch(domain):
        raise ValueError(f"domain {domain!r} is not a dotted lower-case domain")
    if verdict.get("verdict") == "pass":
        return None
    draft = _deciding(verdict)
    if draft is None:
        return None
    what = one_line(draft.what, WHAT_CHARS)
    evidence = one_line(draft.evidence, EVIDENCE_CHARS)
    cause = one_line(draft.cause, CAUSE_CHARS)
    rule = one_line(draft.rule, RULE_CHARS)
    return Lesson(
        id=lesson_id(domain, draft.gate, draft.kind, rule),
        domain=domain,
        tags=tuple(dict.fromkeys(str(t) for t in tags)),
        contract_id=contract_id,
        run_id=run_id,
        seat=seat,
        gate=draft.gate,
        kind=draft.kind,
        what=what,
        evidence=evidence,
        cause=cause,
        rule=rule,
        created=utc_stamp(now),
    )
