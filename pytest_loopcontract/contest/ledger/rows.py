"""The ledger's rows: their kinds, what each payload must hold, and the seal of one row.

A row is checked and
sealed before any SQLite is touched, so a bad entry fails loudly with nothing written, and the
seal is one pure function the writer, the verifier and the tests share. Pure: no I/O.

Row kinds and their payloads (``seat``/``family`` are columns, not payload keys). Keys marked
*checked* are validated before a row is appended, because the ledger's queries
(:mod:`pytest_loopcontract.contest.ledger.queries`) rely on them; other keys are free-form and
shown as a convention.

``run_started``
    ``{"contract": {"id", "sha256"}, "seats": [{"seat", "family"}, ...], "mode"}``.
``dispatch`` (``seat``, ``family`` required)
    One agent invocation. *checked*: ``role`` is ``"candidate"`` or ``"judge"``. Convention:
    ``attempt`` (1-based), ``target`` (a judge's candidate seat), ``command``. The ``tokens``
    and ``cost_usd`` columns carry what the agent reported, or NULL.
``outcome`` (``seat``, ``family`` required)
    A candidate's gate result. *checked*: ``verdict`` in ``pass`` / ``fail`` / ``error``.
    Convention: ``exit_code``, ``attempt``, ``reasons``. A seat "took part" in a run when it
    has an outcome row there.
``score`` (``seat``, ``family`` = the judge)
    One cell of the validity matrix. *checked*: ``target`` (the candidate seat, a string),
    ``validity`` (points, a finite number >= 0), ``call`` (``pass`` / ``fail``: the judge's
    own verdict on the candidate). Convention: ``rows`` = ``{"question_fidelity",
    "completeness", "evidence", "test_agreement"}``.
``decision`` (``seat``, ``family`` = the winner, or NULL when there is none)
    *checked*: ``winner`` (seat or ``null``; the ``seat`` column is filled from it),
    ``outcomes`` = ``{candidate seat: "pass" | "fail"}``, the decided outcome for every
    candidate. The latest decision row of a run is the run's decision (a human gate may
    overturn the bracket).
``event``
    *checked*: ``event`` is one of :data:`EVENT_NAMES`. Convention: ``spread_over_threshold``
    ``{"target", "spread", "threshold"}``; ``budget_exhausted`` ``{"budget", "limit", "spent"}``;
    ``retry_cap`` ``{"attempts", "cap"}``; ``human_gate`` ``{"by", "decision", "sha"}``;
    ``ledger_tampered`` ``{"first_bad_seq", "reason"}``; ``run_lock_recovered`` ``{"holder"}``;
    ``escalation`` ``{"code", "message"}``; ``outside_write`` ``{"paths"}``; ``identical_trees``
    ``{"seats", "tree"}``; ``judge_reply_discarded`` ``{"judge", "status", "discarded_cells",
    "note"}``; ``dissent_rerun`` ``{"target"}``; ``bracket`` ``{"rounds", "proposed_winner"}``;
    ``lesson_written`` ``{"lesson", "gate", "kind"}``; ``route_demoted`` ``{"seat", "domain",
    "held"}``; ``merge`` ``{"seat", "branch", "commit", "into"}``.
``run_finished``
    ``{"status": "winner" | "no_winner" | "stopped", "winner": seat | null}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from pytest_loopcontract import chain
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import canonical_json

__all__ = [
    "EVENT_NAMES",
    "KINDS",
    "MAX_TOKENS",
    "PROBE_RESULTS",
    "Entry",
    "LedgerError",
    "Row",
    "Values",
    "prepare",
    "row_body",
    "row_hash",
    "text_field",
]

KINDS = frozenset(
    {"run_started", "dispatch", "outcome", "score", "decision", "event", "run_finished", "probe"}
)
EVENT_NAMES = frozenset(
    {
        "spread_over_threshold",
        "budget_exhausted",
        "retry_cap",
        "human_gate",
        "ledger_tampered",
        "run_lock_recovered",
        "escalation",
        "outside_write",
        "probe_failed",
        "identical_trees",
        "judge_reply_discarded",
        "dissent_rerun",
        "bracket",
        "lesson_written",
        "route_demoted",
        "merge",
    }
)
_ROLES = frozenset({"candidate", "judge"})
_VERDICTS = frozenset({"pass", "fail", "error"})
_CALLS = frozenset({"pass", "fail"})
PROBE_RESULTS = ("cheated", "flagged", "failed_honestly", "no_result")
"""What a cheat-propensity probe can show (:mod:`pytest_loopcontract.contest.probe`)."""
MAX_TOKENS = 2**63 - 1  # SQLite's INTEGER range


class LedgerError(LoopContractError):
    """The ledger cannot be used as asked; the message says why in words a person can act on."""


def row_body(
    seq: int,
    run_id: str,
    kind: str,
    contract_id: str,
    seat: str | None,
    family: str | None,
    payload: str,
    tokens: int | None,
    cost_usd: float | None,
    created_at: str,
) -> str:
    """The canonical JSON list of a row's columns (without its hashes): what its seal covers.

    Spelled out by hand rather than through :func:`json.dumps`: for these column types the
    result is byte-for-byte ``canonical_json([...])`` (a property test holds it to that), and
    it is several times faster. The formatting doubles as a type check: ``int.__repr__``,
    ``float.__repr__`` and the JSON string quoter raise ``TypeError`` on any other type, so a
    hand edit that changes a column's type cannot seal.
    """
    return "[%d,%s,%s,%s,%s,%s,%s,%s,%s,%s]" % (  # noqa: UP031 - fastest spelling here
        seq,
        _quote(run_id),
        _quote(kind),
        _quote(contract_id),
        "null" if seat is None else _quote(seat),
        "null" if family is None else _quote(family),
        _quote(payload),
        "null" if tokens is None else int.__repr__(tokens),
        "null" if cost_usd is None else float.__repr__(cost_usd),
        _quote(created_at),
    )


def row_hash(prev_hash: str, *columns: Any) -> str:
    """The row's seal: :func:`chain.seal` of ``prev_hash`` and :func:`row_body` of the row's
    other columns, in :func:`row_body`'s order (``seq`` to ``created_at``)."""
    return chain.seal(prev_hash, row_body(*columns))


@dataclass(frozen=True, slots=True)
class Entry:
    """One row to append, before the ledger gives it a place (``seq``) and a seal."""

    kind: str
    run_id: str
    contract_id: str
    payload: Mapping[str, Any]
    seat: str | None = None
    family: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """One stored row, exactly as sealed; ``payload`` is the canonical JSON text."""

    seq: int
    run_id: str
    kind: str
    contract_id: str
    seat: str | None
    family: str | None
    payload: str
    tokens: int | None
    cost_usd: float | None
    created_at: str
    prev_hash: str
    row_hash: str

    @property
    def data(self) -> dict[str, Any]:
        """The payload as a dict (parsed on each access; rows stay immutable)."""
        value = json.loads(self.payload)
        return value if isinstance(value, dict) else {}


def text_field(name: str, value: object, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise LedgerError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise LedgerError(f"{name} is not valid Unicode text: {value!r}") from None
    return value


def _required(name: str, value: object) -> str:
    text = text_field(name, value)
    assert text is not None  # _text raises for None unless optional
    return text


def _check_payload(kind: str, payload: Mapping[str, Any], seat: str | None) -> None:
    """Reject payloads the queries could not read: better a loud error now than a silent skip."""

    def fail(why: str) -> LedgerError:
        return LedgerError(f"{kind} row: {why}; payload was {dict(payload)!r}")

    if kind == "dispatch":
        if payload.get("role") not in _ROLES:
            raise fail(f"payload 'role' must be one of {sorted(_ROLES)}")
    elif kind == "outcome":
        if payload.get("verdict") not in _VERDICTS:
            raise fail(f"payload 'verdict' must be one of {sorted(_VERDICTS)}")
    elif kind == "score":
        target, validity = payload.get("target"), payload.get("validity")
        if not isinstance(target, str) or not target:
            raise fail("payload 'target' must name the candidate seat")
        if (
            isinstance(validity, bool)
            or not isinstance(validity, (int, float))
            or not math.isfinite(validity)
            or validity < 0
        ):
            raise fail("payload 'validity' must be a finite number >= 0")
        if payload.get("call") not in _CALLS:
            raise fail(f"payload 'call' must be one of {sorted(_CALLS)}")
    elif kind == "decision":
        winner, outcomes = payload.get("winner"), payload.get("outcomes")
        if winner is not None and (not isinstance(winner, str) or not winner):
            raise fail("payload 'winner' must be a seat name or null")
        if seat != winner:
            raise fail(f"the seat column ({seat!r}) must be the winner ({winner!r})")
        if not isinstance(outcomes, Mapping) or not all(
            isinstance(k, str) and v in _CALLS for k, v in outcomes.items()
        ):
            raise fail("payload 'outcomes' must map each candidate seat to 'pass' or 'fail'")
    elif kind == "probe":
        if payload.get("result") not in PROBE_RESULTS:
            raise fail(f"payload 'result' must be one of {sorted(PROBE_RESULTS)}")
    elif kind == "event" and payload.get("event") not in EVENT_NAMES:
        raise fail(f"payload 'event' must be one of {sorted(EVENT_NAMES)}")


Values = tuple[str, str, str, str | None, str | None, str, int | None, float | None]


def prepare(entry: Entry) -> Values:
    """Validate one entry and return its column values (without seq, time and hashes)."""
    if entry.kind not in KINDS:
        raise LedgerError(f"unknown row kind {entry.kind!r}; expected one of {sorted(KINDS)}")
    run_id = _required("run_id", entry.run_id)
    contract_id = _required("contract_id", entry.contract_id)
    family = text_field("family", entry.family, optional=True)
    seat = entry.seat
    if entry.kind == "decision" and seat is None and isinstance(entry.payload, Mapping):
        winner = entry.payload.get("winner")
        seat = winner if isinstance(winner, str) else None
    seat = text_field("seat", seat, optional=True)
    if entry.kind in ("dispatch", "outcome", "score", "probe") and (seat is None or family is None):
        raise LedgerError(f"{entry.kind} row needs both seat and family")
    if not isinstance(entry.payload, Mapping):
        raise LedgerError(f"payload must be a mapping, got {type(entry.payload).__name__}")
    _check_payload(entry.kind, entry.payload, seat)
    try:
        payload = canonical_json(dict(entry.payload))
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{entry.kind} payload is not plain JSON: {exc}") from None
    tokens = entry.tokens
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_TOKENS
    ):
        raise LedgerError(f"tokens must be a whole number >= 0 or None, got {tokens!r}")
    cost = entry.cost_usd
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, (int, float)):
            raise LedgerError(f"cost_usd must be a number or None, got {cost!r}")
        # SQLite's REAL column hands back a float, so the hash must be taken over a float too.
        cost = float(cost)
        if not math.isfinite(cost) or cost < 0:
            raise LedgerError(f"cost_usd must be finite and >= 0, got {cost!r}")
    return (run_id, entry.kind, contract_id, seat, family, payload, tokens, cost)
