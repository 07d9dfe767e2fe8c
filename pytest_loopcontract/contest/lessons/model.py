"""The lesson record: one rule learned from a failed gate, with a stable id and a UTC stamp.

The store, the route table, the reports and the prompt all hold lessons,
and each must trust that a lesson it reads is whole (a dotted domain, a known kind, a 16-digit
id, one-line text fields); the checks live on the record itself, so no reader re-checks them."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

__all__ = [
    "CAUSE_CHARS",
    "DOMAIN_PATTERN",
    "EVIDENCE_CHARS",
    "KINDS",
    "RULE_CHARS",
    "WHAT_CHARS",
    "Draft",
    "Lesson",
    "lesson_id",
    "utc_stamp",
]

KINDS = (
    "acceptance",
    "pass_to_pass",
    "tests",
    "command",
    "empty_diff",
    "measured",
    "tamper",
    "error",
)
"""Lesson kinds: the hard-gate kinds of the verdict schema, ``measured``, ``tamper`` and
``error`` (no gate decided; the verdict's reason codes are the evidence)."""

DOMAIN_PATTERN = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
"""A dotted, lower-case domain such as ``python.numeric.rolling`` (the contract's pattern)."""


# Bounds on the text fields: each is one line of at most this many characters.
WHAT_CHARS = 200
EVIDENCE_CHARS = 300
CAUSE_CHARS = 200
RULE_CHARS = 240

_KIND_SET = frozenset(KINDS)
_HEX = "0123456789abcdef"
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


@lru_cache(maxsize=65536)
def _valid_domain(domain: str) -> bool:
    return DOMAIN_PATTERN.fullmatch(domain) is not None


@dataclass(frozen=True, slots=True)
class Draft:
    """A lesson's wording, drawn from the deciding gate's evidence (:mod:`.drafts`): the gate,
    the kind, what happened, the evidence, the cause and the rule. A :class:`Lesson` is a draft
    with its provenance (id, domain, tags, contract, run, seat, time), so the wording's fields
    are declared here once."""

    gate: str
    kind: str
    what: str
    evidence: str
    cause: str
    rule: str


@dataclass(frozen=True, slots=True, init=False)
class Lesson(Draft):
    """One rule learned from a failed gate. ``seat`` is for the route table, never a prompt.

    Frozen like every record here, but with a hand-written ``__init__``: a store lookup builds
    thousands of lessons, and a frozen dataclass's generated ``__init__`` (one
    ``object.__setattr__`` per field) costs about four times as much as filling the slots
    directly. The fields (the draft's first), their order and ``seen=1`` are the dataclass's;
    the tests hold the signature to them.
    """

    id: str
    domain: str
    tags: tuple[str, ...]
    contract_id: str
    run_id: str
    seat: str
    created: str
    seen: int = 1

    def __init__(
        self,
        gate: str,
        kind: str,
        what: str,
        evidence: str,
        cause: str,
        rule: str,
        id: str,
        domain: str,
        tags: tuple[str, ...],
        contract_id: str,
        run_id: str,
        seat: str,
        created: str,
        seen: int = 1,
    ) -> None:
        put = _SLOTS
        put[0](self, gate)
        put[1](self, kind)
        put[2](self, what)
        put[3](self, evidence)
        put[4](self, cause)
        put[5](self, rule)
        put[6](self, id)
        put[7](self, domain)
        put[8](self, tags)
        put[9](self, contract_id)
        put[10](self, run_id)
        put[11](self, seat)
        put[12](self, created)
        put[13](self, seen)
        self._check()

    def _check(self) -> None:
        # Plain type checks and a memo for domains: stores build thousands of these per lookup.
        if not (isinstance(self.domain, str) and _valid_domain(self.domain)):
            raise ValueError(f"lesson domain {self.domain!r} is not a dotted lower-case domain")
        if type(self.kind) is not str or self.kind not in _KIND_SET:
            raise ValueError(f"lesson kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not (isinstance(self.id, str) and len(self.id) == 16 and not self.id.strip(_HEX)):
            raise ValueError(f"lesson id {self.id!r} is not 16 lower-case hex digits")
        if type(self.tags) is not tuple:
            raise ValueError("lesson tags must be a tuple of strings")
        for tag in self.tags:
            if type(tag) is not str:
                raise ValueError("lesson tags must be a tuple of strings")
        if type(self.seen) is not int or self.seen < 1:
            raise ValueError(f"lesson seen must be an integer >= 1, got {self.seen!r}")
        if not (
            type(self.contract_id) is str
            and type(self.run_id) is str
            and type(self.seat) is str
            and type(self.gate) is str
            and type(self.what) is str
            and type(self.evidence) is str
            and type(self.cause) is str
        ):
            raise ValueError(
                "lesson contract_id, run_id, seat, gate, what, evidence and cause must be strings"
            )
        if type(self.rule) is not str or not self.rule:
            raise ValueError("a lesson needs a rule")
        if type(self.created) is not str or not self.created:
            raise ValueError("a lesson needs a created time")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "domain": self.domain,
            "tags": list(self.tags),
            "contract_id": self.contract_id,
            "run_id": self.run_id,
            "seat": self.seat,
            "gate": self.gate,
            "kind": self.kind,
            "what": self.what,
            "evidence": self.evidence,
            "cause": self.cause,
            "rule": self.rule,
            "created": self.created,
            "seen": self.seen,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Lesson:
        """The inverse of :meth:`to_json`; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError("a lesson must be a JSON object")
        text_fields = (
            "id",
            "domain",
            "contract_id",
            "run_id",
            "seat",
            "gate",
            "kind",
            "what",
            "evidence",
            "cause",
            "rule",
            "created",
        )
        values: dict[str, Any] = {}
        for name in text_fields:
            value = data.get(name)
            if not isinstance(value, str):
                raise ValueError(f"lesson field {name!r} must be a string")
            values[name] = value
        tags = data.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("lesson field 'tags' must be a list of strings")
        seen = data.get("seen", 1)
        if isinstance(seen, bool) or not isinstance(seen, int):
            raise ValueError("lesson field 'seen' must be an integer")
        return cls(tags=tuple(tags), seen=seen, **values)


_SLOTS: tuple[Callable[[Lesson, Any], None], ...] = tuple(
    getattr(Lesson, f.name).__set__ for f in fields(Lesson)
)
"""The slot setters of :class:`Lesson`, in field order, the draft's from :class:`Draft` (they
bypass the frozen guard)."""


def lesson_id(domain: str, gate: str, kind: str, rule: str) -> str:
    """First 16 hex digits of SHA-256 over domain, gate, kind and rule (unit-separated)."""
    text = "\x1f".join((domain, gate, kind, rule))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def utc_stamp(now: dt.datetime | str | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC; a string already in that form passes through."""
    if isinstance(now, str):
        if not _STAMP.fullmatch(now):
            raise ValueError(f"created time {now!r} is not YYYY-MM-DDTHH:MM:SSZ")
        return now
    moment = dt.datetime.now(dt.timezone.utc) if now is None else now
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no time zone; pass an aware one (UTC)")
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
