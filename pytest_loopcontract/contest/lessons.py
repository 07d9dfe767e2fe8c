"""Lessons: one rule per failed candidate, written from the deciding gate's own evidence.

Why lessons exist: a seat that failed a gate in one run should not walk into the same wall in
the next. So when a candidate fails, the verdict's *deciding* gate is turned into a short rule
("keep metric.ops_per_tick <= 4 — ..."), stored under the task's dotted domain, and the next
session's prompt carries the rules that apply to its domain.

Why they are built the way they are:

* **Verifier evidence only.** A lesson ends up in another agent's prompt, so anything a
  candidate could have written into it is a prompt-injection channel: failure messages,
  ``longrepr``, captured output, a command's ``output_tail``, a tamper finding's ``message``
  (which quotes the candidate's added line), judge rationales, a seat's report. None of those
  are read. A lesson is built only from fields the verifier itself produced: gate ids, kinds
  and statuses, metric names, observed numbers, operators, thresholds and units, node ids and
  outcomes, exit codes, finding codes and paths, reason codes. Node ids and paths can still
  carry text a candidate chose (a new test file, a parametrize id), so each is squeezed through
  :func:`_token`: a short run of path-and-identifier characters, everything else replaced by
  ``?``. Every text field is then one line of bounded length.
* **One deciding gate, in rank order.** Tampering outranks everything (a run that was
  interfered with proves nothing else), then the first failing hard gate, then the first
  failing measured gate; a verdict that failed or errored with no failing gate gets an
  ``error`` lesson from its reason codes. One lesson per failed candidate keeps the prompt
  short and the cause unambiguous.
* **Stable ids.** ``id`` is the SHA-256 of domain, gate, kind and rule. Rules are worded from
  the stable parts of a gate (its id, metric, operator, threshold, the finding's path), and the
  run-specific numbers go into ``evidence``; so the same wall hit again in a later run has the
  same id, and the store counts it (``seen``) instead of repeating it.
* **Domain, not similarity.** Lessons are ranked by the dotted domain path: the exact domain,
  then its ancestors and descendants (nearer first), never siblings; then by tag overlap, then
  newest first. ``python.numeric`` lessons apply to ``python.numeric.rolling`` and vice versa;
  ``python.text`` lessons do not.
* **A hard character cap.** :func:`prompt_block` never exceeds its budget and says how many
  lessons the cap dropped, so a prompt never silently loses rules.

The seat whose candidate failed is kept (the route table needs it) but never printed into a
prompt: a lesson is about the task, not about who failed it.

Pure: stdlib only, no I/O, nothing else from the package.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any, Literal

__all__ = [
    "CAUSE_CHARS",
    "DOMAIN_PATTERN",
    "EVIDENCE_CHARS",
    "HEADER",
    "KINDS",
    "RULE_CHARS",
    "WHAT_CHARS",
    "Lesson",
    "PromptBlock",
    "Relation",
    "ancestors",
    "bullet",
    "domain_distance",
    "domain_relation",
    "lesson_from_verdict",
    "lesson_id",
    "prompt_block",
    "rank_lessons",
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

HEADER = "Lessons from earlier runs (verifier evidence, not agent text):"

Relation = Literal["exact", "ancestor", "descendant"]

# Bounds on the text fields: each is one line of at most this many characters.
WHAT_CHARS = 200
EVIDENCE_CHARS = 300
CAUSE_CHARS = 200
RULE_CHARS = 240
_TOKEN_CHARS = 120
_MAX_LISTED = 4  # node ids / findings named in one evidence line

_PASSING = frozenset({"pass", "not_measurable"})
_OUTCOMES = frozenset(
    {"passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected", "missing"}
)
_OPS = frozenset({">=", ">", "<=", "<", "==", "!="})
_CODE = re.compile(r"[a-z][a-z0-9_]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/\[\]()+=,@#%-]")
_KIND_SET = frozenset(KINDS)
_HEX = "0123456789abcdef"
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
# Reason codes that only restate a gate; an ``error`` lesson names the others.
_GATE_REASONS = frozenset(
    {
        "contract_met",
        "hard_gate_failed",
        "measured_gate_failed",
        "metric_missing",
        "tamper_detected",
    }
)


# --------------------------------------------------------------------------- the lesson


@lru_cache(maxsize=65536)
def _valid_domain(domain: str) -> bool:
    return DOMAIN_PATTERN.fullmatch(domain) is not None


@dataclass(frozen=True, slots=True, init=False)
class Lesson:
    """One rule learned from a failed gate. ``seat`` is for the route table, never a prompt.

    Frozen like every record here, but with a hand-written ``__init__``: a store lookup builds
    thousands of lessons, and a frozen dataclass's generated ``__init__`` (one
    ``object.__setattr__`` per field) costs about four times as much as filling the slots
    directly. The fields, their order and ``seen=1`` are the dataclass's; the tests hold the
    signature to them.
    """

    id: str
    domain: str
    tags: tuple[str, ...]
    contract_id: str
    run_id: str
    seat: str
    gate: str
    kind: str
    what: str
    evidence: str
    cause: str
    rule: str
    created: str
    seen: int = 1

    def __init__(
        self,
        id: str,
        domain: str,
        tags: tuple[str, ...],
        contract_id: str,
        run_id: str,
        seat: str,
        gate: str,
        kind: str,
        what: str,
        evidence: str,
        cause: str,
        rule: str,
        created: str,
        seen: int = 1,
    ) -> None:
        put = _SLOTS
        put[0](self, id)
        put[1](self, domain)
        put[2](self, tags)
        put[3](self, contract_id)
        put[4](self, run_id)
        put[5](self, seat)
        put[6](self, gate)
        put[7](self, kind)
        put[8](self, what)
        put[9](self, evidence)
        put[10](self, cause)
        put[11](self, rule)
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
    Lesson.__dict__[f.name].__set__ for f in fields(Lesson)
)
"""The slot setters of :class:`Lesson`, in field order (they bypass the frozen guard)."""


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


# --------------------------------------------------------------------------- text hygiene


def _line(text: str, limit: int) -> str:
    """One line (whitespace collapsed) of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _token(value: Any, limit: int = _TOKEN_CHARS) -> str:
    """A verifier-produced name (gate id, node id, path, metric) made inert for a prompt.

    Only path-and-identifier characters survive; anything else (spaces, quotes, newlines,
    non-ASCII) becomes ``?``, so a file or parametrize id a candidate named cannot spell out
    a sentence.
    """
    if not isinstance(value, str) or not value:
        return "?"
    safe = _UNSAFE.sub("?", value)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


_STATUS_WORDS = {"fail": "failed", "missing": "had no result", "error": "errored"}


def _status(value: Any) -> str:
    return _STATUS_WORDS.get(value, f"ended {_code(value)}") if isinstance(value, str) else "?"


def _code(value: Any) -> str:
    return value if isinstance(value, str) and _CODE.fullmatch(value) else "unknown"


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    return str(value)


def _with_unit(number: str, unit: str) -> str:
    if not unit:
        return number
    return f"{number}{unit}" if unit == "%" else f"{number} {unit}"


def _is(value: Any, choices: Iterable[str]) -> bool:
    """``value in choices`` for a value that may be anything (a list is not hashable)."""
    return isinstance(value, str) and value in choices


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _more(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    extra = len(names) - _MAX_LISTED
    return f"{shown} (+{extra} more)" if extra > 0 else shown


# --------------------------------------------------------------------------- deciding gate


@dataclass(frozen=True)
class _Draft:
    gate: str
    kind: str
    what: str
    evidence: str
    cause: str
    rule: str


def _failing_pairs(value: Any) -> list[str]:
    """``{nodeid: outcome}`` (the gates' ``failing`` detail) as ``nodeid outcome`` strings."""
    pairs = []
    for nodeid, outcome in _map(value).items():
        shown = outcome if isinstance(outcome, str) and outcome in _OUTCOMES else "?"
        pairs.append(f"{_token(nodeid)} {shown}")
    return pairs


def _dod_failing(verdict: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Pending DoD ids and their non-passing tests, from the verdict's ``dod`` list."""
    pending: list[str] = []
    failing: list[str] = []
    for item in _list(verdict.get("dod")):
        item = _map(item)
        if item.get("status") == "done":
            continue
        pending.append(_token(item.get("id")))
        for test in _list(item.get("tests")):
            test = _map(test)
            outcome = test.get("outcome")
            if outcome != "passed":
                shown = outcome if isinstance(outcome, str) and outcome in _OUTCOMES else "?"
                failing.append(f"{_token(test.get('nodeid'))} {shown}")
    return pending, failing


_TAMPER_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        frozenset({"protected_path_modified"}),
        "never edit {path}: it is pinned at baseline; change the code under test instead",
        "the candidate edited a protected file ({path})",
    ),
    (
        frozenset({"protected_path_deleted"}),
        "never delete {path}: it is pinned at baseline; change the code under test instead",
        "the candidate deleted a protected file ({path})",
    ),
    (
        frozenset({"protected_path_added"}),
        "never add files under protected patterns (such as {path}); put new code elsewhere",
        "the candidate added a file under a protected pattern ({path})",
    ),
    (
        frozenset({"contract_modified"}),
        "never edit the contract {path}: the definition of done is not the agent's to change",
        "the candidate edited the contract ({path})",
    ),
    (
        frozenset({"doctest_modified"}),
        "never edit the doctests in {path}: fix the code so its examples pass as written",
        "the candidate changed doctest examples or expected output ({path})",
    ),
    (
        frozenset({"tests_deselected", "tests_missing", "skip_injection"}),
        "never skip, deselect, rename or remove the expected tests: every one must run and pass",
        "expected tests did not run",
    ),
    (
        frozenset({"nonce_mismatch", "exit_code_mismatch"}),
        "never interfere with how pytest records results or exits",
        "the run's results disagree with the process that produced them",
    ),
    (
        frozenset({"unexpected_plugin", "plugin_injection"}),
        "never add or load pytest plugins: only the allow-listed ones may run",
        "a pytest plugin outside the allow-list was loaded",
    ),
    (
        frozenset({"boundary_crossed"}),
        "never change {path}: it is outside the task's boundaries",
        "the candidate changed a path outside its boundaries ({path})",
    ),
    (
        frozenset(
            {
                "harness_manipulation",
                "harness_patch",
                "harness_patch_alias",
                "pytest_hook",
                "pytest_internals",
                "pytest_exit",
                "pytest_env",
                "hard_exit",
                "report_rewrite",
            }
        ),
        "never touch the test harness in {path} (pytest hooks, internals, reports, exits, "
        "patches): make the code pass the tests instead",
        "the candidate's diff reaches into the test harness ({path})",
    ),
)


def _tamper(verdict: Mapping[str, Any]) -> _Draft | None:
    tamper = verdict.get("tamper")
    findings: list[tuple[str, str]] = []
    if isinstance(tamper, Mapping):
        for finding in _list(tamper.get("findings")):
            finding = _map(finding)
            if finding.get("allowed") is True:
                continue
            path = finding.get("path")
            findings.append((_code(finding.get("code")), _token(path) if path else ""))
    else:  # the run result's candidate summary: a list of finding codes
        findings = [(_code(code), "") for code in _list(tamper)]
    if not findings:
        return None
    code, path = findings[0]
    rule, cause = (
        "never do what the verifier flags as {code}; change the code under test instead",
        "the verifier flagged {code}",
    )
    for codes, family_rule, family_cause in _TAMPER_RULES:
        if code in codes:
            rule, cause = family_rule, family_cause
            break
    where = path or "protected files"
    listed = [f"{c} {p}".rstrip() for c, p in findings]
    return _Draft(
        gate="tamper",
        kind="tamper",
        what=f"tampering found: {len(findings)} finding(s), first {code}"
        + (f" at {path}" if path else ""),
        evidence=_more(listed),
        cause=cause.format(path=where, code=code),
        rule=rule.format(path=where, code=code),
    )


def _hard(gate: Mapping[str, Any], verdict: Mapping[str, Any]) -> _Draft:
    gate_id = _token(gate.get("id"), 60)
    kind = gate.get("kind")
    status = _code(gate.get("status"))
    did = _status(gate.get("status"))
    if kind == "acceptance":
        pending = [_token(p) for p in _list(gate.get("pending"))]
        failing = _failing_pairs(gate.get("failing"))
        if not pending and not failing:
            pending, failing = _dod_failing(verdict)
        what = f"acceptance gate {gate_id} {did}"
        if pending:
            what += f": DoD items not done: {_more(pending)}"
        return _Draft(
            gate=gate_id,
            kind="acceptance",
            what=what,
            evidence=f"not passing: {_more(failing)}" if failing else "no DoD test passed",
            cause="the change does not yet do what the DoD tests check",
            rule=f"make the DoD tests of gate {gate_id} pass by changing the code under test; "
            "never edit, skip or deselect them",
        )
    if kind in ("pass_to_pass", "tests"):
        failing = _failing_pairs(gate.get("failing"))
        if kind == "pass_to_pass":
            what = f"regression gate {gate_id} {did}: {len(failing)} tests that passed at baseline"
            cause = "the change broke behaviour that other tests rely on"
            rule = (
                f"keep every test that passed at baseline passing ({gate_id}); "
                "run the whole suite, not only the new tests, before finishing"
            )
        else:
            what = f"test gate {gate_id} {did}: {len(failing)} selected tests not passing"
            cause = "tests the contract selects for this gate do not pass"
            rule = f"make the tests selected by {gate_id} pass; never skip or deselect them"
        return _Draft(
            gate=gate_id,
            kind=kind,
            what=what,
            evidence=f"not passing: {_more(failing)}" if failing else f"status {status}",
            cause=cause,
            rule=rule,
        )
    if kind == "command":
        expected = _num(gate.get("expect_exit"))
        observed = gate.get("exit_code")
        if observed is None:
            evidence = (
                f"{gate_id}: the command did not finish (status {status}), expected exit {expected}"
            )
            cause = "the gate's command did not finish (timeout, or not found)"
        else:
            evidence = f"{gate_id}: exit {_num(observed)}, expected exit {expected}"
            cause = "the gate's command rejects the candidate's tree"
        return _Draft(
            gate=gate_id,
            kind="command",
            what=f"command gate {gate_id} {did}",
            evidence=evidence,
            cause=cause,
            rule=f"run the command of gate {gate_id} before finishing; it must exit {expected}",
        )
    if kind == "empty_diff":
        return _Draft(
            gate=gate_id,
            kind="empty_diff",
            what=f"gate {gate_id} {did}: the candidate changed nothing",
            evidence=f"{gate_id}: empty diff against the baseline",
            cause="improve mode needs a change and the candidate made none",
            rule="never finish without a change: an empty diff fails improve mode",
        )
    return _Draft(
        gate=gate_id,
        kind="error",
        what=f"hard gate {gate_id} {did}",
        evidence=f"{gate_id}: status {status}",
        cause="a hard gate of an unknown kind did not pass",
        rule=f"make hard gate {gate_id} pass before finishing",
    )


_MEASURED_ADVICE: tuple[tuple[str, str, str], ...] = (
    (
        "coverage.",
        "the tests do not run enough of the code",
        "add or extend tests that run the new and changed lines",
    ),
    (
        "duration.",
        "the tests take too long",
        "find the slow path (a sleep, a retry, a quadratic loop, real I/O) "
        "instead of raising the limit",
    ),
    (
        "tests.count",
        "the number of tests that ran is off target",
        "never delete, skip or deselect tests to move the count",
    ),
    (
        "metric.",
        "the value the tests record as {metric} is off target",
        "check it with the test that records it before finishing",
    ),
    (
        "sensor.",
        "the sensor command measured {metric} off target",
        "run the sensor command yourself before finishing",
    ),
    (
        "benchmark.",
        "the benchmark measured {metric} off target",
        "profile the hot path and run the benchmark before finishing; passing tests are not enough",
    ),
)


def _measured(gate: Mapping[str, Any]) -> _Draft:
    gate_id = _token(gate.get("id"), 60)
    metric = _token(gate.get("metric"), 80)
    status = _code(gate.get("status"))
    op = gate.get("op") if _is(gate.get("op"), _OPS) else "?"
    unit = _token(gate.get("unit"), 12) if gate.get("unit") else ""
    target = f"{op} {_with_unit(_num(gate.get('threshold')), unit)}"
    observed = gate.get("observed")
    cause, advice = "the measured value of {metric} is off target", "measure it before finishing"
    for prefix, family_cause, family_advice in _MEASURED_ADVICE:
        if metric == prefix or metric.startswith(prefix):
            cause, advice = family_cause, family_advice
            break
    if status == "fail" and observed is not None:
        return _Draft(
            gate=gate_id,
            kind="measured",
            what=f"measured gate {gate_id} failed on {metric}",
            evidence=f"{metric} observed {_with_unit(_num(observed), unit)} against {target}",
            cause=cause.format(metric=metric),
            rule=f"keep {metric} {target} — {advice}",
        )
    return _Draft(
        gate=gate_id,
        kind="measured",
        what=f"measured gate {gate_id}: {metric} was not measured (status {status})",
        evidence=f"{metric} observed nothing (status {status}) against {target}",
        cause=f"nothing produced {metric}: what measures it did not run or did not report",
        rule=f"make sure {metric} is produced and keeps {target} — "
        "a gate without a measurement fails",
    )


_ERROR_RULES: tuple[tuple[frozenset[str], str, str], ...] = (
    (
        frozenset({"checkpoint_pending", "checkpoint_denied"}),
        "the change holds an action that needs a person's clearance (a checkpoint)",
        "stay clear of checkpointed actions (pushes, publishing, secrets, denied paths) "
        "unless the task asks for them",
    ),
    (
        frozenset({"timeout", "pytest_killed", "run_incomplete"}),
        "the test run did not finish in time",
        "keep the test run inside its time limit: no hangs, endless loops or long sleeps",
    ),
    (
        frozenset({"no_tests", "no_results", "missing_rows"}),
        "the test run produced no usable results",
        "keep the suite collectable: no import errors or broken test modules",
    ),
    (
        frozenset(
            {
                "pytest_usage_error",
                "pytest_internal_error",
                "pytest_interrupted",
                "pytest_exit_code",
            }
        ),
        "pytest did not finish normally",
        "the test run must end normally: no collection errors, interrupts or crashes",
    ),
)


def _error(verdict: Mapping[str, Any]) -> _Draft:
    codes = list(
        dict.fromkeys(
            _code(_map(r).get("code"))
            for r in _list(verdict.get("reasons"))
            if _code(_map(r).get("code")) not in _GATE_REASONS
        )
    )
    state = _code(verdict.get("verdict"))
    cause, rule = (
        f"the verification ended in {state} without a failing gate",
        "finish only when the verification completes and every gate passes",
    )
    known = [(c, r) for code in codes for family, c, r in _ERROR_RULES if code in family]
    if known:
        cause, rule = known[0]
    return _Draft(
        gate="verdict",
        kind="error",
        what=f"verification {state}: {_more(codes) if codes else 'no reason code'}",
        evidence=f"reason codes: {_more(codes)}" if codes else "no reason code recorded",
        cause=cause,
        rule=rule,
    )


def _deciding(verdict: Mapping[str, Any]) -> _Draft | None:
    draft = _tamper(verdict)
    if draft is not None:
        return draft
    gates = _map(verdict.get("gates"))
    for gate in _list(gates.get("hard")):
        gate = _map(gate)
        if not _is(gate.get("status"), _PASSING):
            return _hard(gate, verdict)
    for gate in _list(gates.get("measured")):
        gate = _map(gate)
        if not _is(gate.get("status"), _PASSING):
            return _measured(gate)
    if _is(verdict.get("verdict"), ("fail", "error")):
        return _error(verdict)
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
    what = _line(draft.what, WHAT_CHARS)
    evidence = _line(draft.evidence, EVIDENCE_CHARS)
    cause = _line(draft.cause, CAUSE_CHARS)
    rule = _line(draft.rule, RULE_CHARS)
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


# --------------------------------------------------------------------------- ranking


def ancestors(domain: str) -> list[str]:
    """Proper ancestors of a dotted domain, nearest last: ``a.b.c`` -> ``["a", "a.b"]``."""
    parts = domain.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def domain_relation(lesson_domain: str, query: str) -> Relation | None:
    """How a lesson's domain stands to the queried one, along the dotted path.

    ``"ancestor"``: the lesson's domain is an ancestor of the query (``a.b`` for ``a.b.c``);
    ``"descendant"``: the other way round. Siblings, cousins and a prefix that is not a whole
    segment (``a.bc`` against ``a.b``) are unrelated: ``None``.
    """
    if lesson_domain == query:
        return "exact"
    if query.startswith(lesson_domain + "."):
        return "ancestor"
    if lesson_domain.startswith(query + "."):
        return "descendant"
    return None


def domain_distance(lesson_domain: str, query: str) -> int | None:
    """Segments between two related domains (0 for exact); ``None`` when unrelated."""
    if domain_relation(lesson_domain, query) is None:
        return None
    return abs(lesson_domain.count(".") - query.count("."))


def rank_lessons(
    lessons: Iterable[Lesson], *, domain: str, tags: Iterable[str] = ()
) -> list[Lesson]:
    """The lessons that apply to ``domain``, best first.

    Only exact, ancestor and descendant domains apply. Order: nearer along the dotted path
    first (exact, then one segment away, ...), then more tags in common with ``tags``, then
    newest ``created`` first, then ``id`` (so the order is total and reproducible).
    """
    wanted = frozenset(tags)
    distances: dict[str, int | None] = {}
    keyed: list[tuple[int, int, str, Lesson]] = []
    for lesson in lessons:
        if lesson.domain in distances:
            distance = distances[lesson.domain]
        else:
            distance = distances[lesson.domain] = domain_distance(lesson.domain, domain)
        if distance is None:
            continue
        overlap = len(wanted.intersection(lesson.tags)) if wanted else 0
        keyed.append((-distance, overlap, lesson.created, lesson))
    keyed.sort(key=lambda k: k[3].id)
    # Reversed, (-distance, overlap, created) is nearer, more tags, newer first; a reversed
    # sort is still stable, so equal keys keep the ascending ids of the first sort.
    keyed.sort(key=lambda k: k[:3], reverse=True)
    return [k[3] for k in keyed]


# --------------------------------------------------------------------------- prompt block


@dataclass(frozen=True)
class PromptBlock:
    """The prompt text (at most the cap), how many lessons it holds and how many it dropped."""

    text: str
    included: int
    dropped: int
    ids: tuple[str, ...] = field(default=())


def bullet(lesson: Lesson) -> str:
    """One lesson's line in a prompt block: its rule, how often it was seen, its evidence."""
    seen = f" (seen {lesson.seen} times)" if lesson.seen > 1 else ""
    rule = _line(lesson.rule, RULE_CHARS)
    evidence = _line(lesson.evidence, EVIDENCE_CHARS)
    return f"- {rule}{seen}. Evidence: {evidence}"


def _dropped_line(dropped: int, cap_chars: int) -> str:
    noun = "lesson" if dropped == 1 else "lessons"
    return f"({dropped} more {noun} dropped by the {cap_chars}-character cap)"


def prompt_block(
    ranked: Sequence[Lesson], *, cap_chars: int, total: int | None = None
) -> PromptBlock:
    """A prompt block of ranked lessons that never exceeds ``cap_chars`` characters in total.

    One bullet per lesson (its rule, then its evidence; never its seat), in the given order,
    lines joined by ``\\n`` without a trailing newline. The longest prefix of ``ranked`` that
    fits is kept; when any lesson is left out the block ends with "(N more lessons dropped by
    the C-character cap)", and that line counts against the cap too. ``total`` is the number
    of lessons ranked when ``ranked`` holds only the first few of them (a store that fetched a
    prefix); the dropped count is then ``total - included``. No lessons: an empty block. A cap
    too small for even the header and the dropped line: an empty block that drops them all.
    """
    if isinstance(cap_chars, bool) or not isinstance(cap_chars, int) or cap_chars < 0:
        raise ValueError(f"cap_chars must be an integer >= 0, got {cap_chars!r}")
    count = len(ranked) if total is None else total
    if count < len(ranked):
        raise ValueError(f"total ({total}) is smaller than the {len(ranked)} lessons given")
    if count == 0:
        return PromptBlock("", 0, 0)
    best = -1
    size = len(HEADER)
    for k in range(len(ranked) + 1):
        if k:
            size += 1 + len(bullet(ranked[k - 1]))
        if size > cap_chars:
            break
        left = count - k
        full = size + (1 + len(_dropped_line(left, cap_chars)) if left else 0)
        if full <= cap_chars:
            best = k
    if best < 0:
        return PromptBlock("", 0, count)
    lines = [HEADER, *(bullet(lesson) for lesson in ranked[:best])]
    if count - best:
        lines.append(_dropped_line(count - best, cap_chars))
    return PromptBlock(
        "\n".join(lines), best, count - best, tuple(lesson.id for lesson in ranked[:best])
    )
