"""The pure data model of a contest report: one run result document in, the derived facts
every renderer needs out.

Why it is a module of its own: the terminal page, the markdown comment and the HTML page must
never disagree about a run, so each of them reads the document only through
:class:`ReportView` and the small helpers here (which seat is the latest attempt, the matrix
order, judge means, notes, dissents, what happens next). Nothing here escapes or formats for
a medium: every string stays raw seat data, and each renderer passes it through
:mod:`.markup` for its own medium. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.plural import plural

__all__ = [
    "AGENT_LABEL",
    "LINE",
    "LIST_MAX",
    "LONG",
    "SCRIPTED_LABEL",
    "SHORT",
    "STATUS_TEXT",
    "TITLE",
    "Dissent",
    "LessonFacts",
    "Note",
    "ReportView",
    "Result",
    "capped",
    "gate_counts",
    "gate_rows",
    "next_action",
    "num",
    "opt_str",
    "probe_text",
    "reason_text",
    "round_title",
    "score_text",
    "short_hash",
    "spend_text",
    "tamper_codes",
    "whole",
    "with_unit",
]

SCRIPTED_LABEL = "scripted, not a model"
"""How every report labels a seat whose ``scripted`` flag is set."""

AGENT_LABEL = "agent"
"""How every report labels any other seat."""

STATUS_TEXT: Mapping[str, str] = {
    "awaiting_human": "awaiting a person",
    "no_winner": "no winner",
    "escalated": "escalated to a person",
    "stopped": "stopped",
    "decided": "decided",
    "rejected": "rejected by a person",
}
"""The run status in words, as every report shows it."""

Result = Mapping[str, Any]

SHORT = 80  # names, ids, branch names in tables
LINE = 300  # one message or rationale in a list or a table cell
LONG = 2000  # a message shown on its own
TITLE = 600  # an HTML title attribute (tooltip)
LIST_MAX = 20  # list items shown before "and N more"


# --------------------------------------------------------------------------------------------
# what the reports share: a read-only view over the document


@dataclass(frozen=True)
class Note:
    subject: str  # a seat name ("" for the run)
    text: str  # our words, may embed data already formatted as plain text


@dataclass(frozen=True)
class Dissent:
    candidate: str
    judge: str
    row: str
    score: float
    row_median: float
    cites_test: bool
    rationale: str


@dataclass(frozen=True)
class LessonFacts:
    """One lesson of the run as every page shows it (raw seat text; each page escapes it and
    picks the facts it has room for)."""

    gate: str
    kind: str
    rule: str
    what: str
    cause: str
    evidence: str


class ReportView:
    """Derived facts every renderer needs, computed once from the document."""

    def __init__(self, result: Result) -> None:
        self.r = result
        self.contract: Mapping[str, Any] = result.get("contract") or {}
        self.seats: list[Mapping[str, Any]] = list(result.get("seats") or [])
        self.seat_of = {str(s.get("name", "")): s for s in self.seats}
        self.candidates: list[Mapping[str, Any]] = list(result.get("candidates") or [])
        self.latest: dict[str, Mapping[str, Any]] = {}
        for cand in self.candidates:
            seat = str(cand.get("seat", ""))
            if seat not in self.latest or whole(cand.get("attempt")) >= whole(
                self.latest[seat].get("attempt")
            ):
                self.latest[seat] = cand
        self.attempts_of: dict[str, int] = {}
        for cand in self.candidates:
            seat = str(cand.get("seat", ""))
            self.attempts_of[seat] = self.attempts_of.get(seat, 0) + 1
        self.seat_names = [str(s.get("name", "")) for s in self.seats]
        self.seat_names += [n for n in self.latest if n not in self.seat_of]
        self.matrix: Mapping[str, Any] | None = result.get("matrix")
        self.bracket: Mapping[str, Any] | None = result.get("bracket")
        self.winner: str | None = opt_str(result.get("winner"))
        self.status = str(result.get("status", ""))

    # -- seats

    def kind(self, name: str) -> str:
        seat = self.seat_of.get(name)
        return SCRIPTED_LABEL if seat is not None and seat.get("scripted") else AGENT_LABEL

    def family(self, name: str) -> str:
        seat = self.seat_of.get(name)
        if seat is not None:
            return str(seat.get("family", ""))
        cand = self.latest.get(name)
        return str(cand.get("family", "")) if cand is not None else ""

    # -- matrix

    @property
    def rows(self) -> list[str]:
        return [str(r) for r in (self.matrix or {}).get("rows", [])]

    @property
    def scored(self) -> Mapping[str, Mapping[str, Any]]:
        return (self.matrix or {}).get("candidates") or {}

    def matrix_order(self) -> list[str]:
        """Candidates of the matrix, best overall first (unscored last), then by name."""
        scored = self.scored
        return sorted(
            scored,
            key=lambda c: (scored[c].get("overall") is None, -num(scored[c].get("overall")), c),
        )

    def judges(self) -> list[str]:
        matrix = self.matrix or {}
        order = [str(j.get("seat", "")) for j in matrix.get("judges", [])]
        for cell in matrix.get("cells", []):
            if str(cell.get("judge")) not in order:
                order.append(str(cell.get("judge")))
        return order

    def cells(self) -> list[Mapping[str, Any]]:
        return list((self.matrix or {}).get("cells", []))

    def cell_at(self) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        """(candidate, row, judge) -> cell."""
        return {
            (str(c.get("candidate")), str(c.get("row")), str(c.get("judge"))): c
            for c in self.cells()
        }

    def judge_means(self) -> dict[tuple[str, str], float]:
        """(candidate, judge) -> the judge's plain mean over the rows it scored."""
        sums: dict[tuple[str, str], list[float]] = {}
        for cell in self.cells():
            key = (str(cell.get("candidate")), str(cell.get("judge")))
            sums.setdefault(key, []).append(num(cell.get("score")))
        return {key: sum(v) / len(v) for key, v in sums.items()}

    def judge_family(self, judge: str) -> str:
        for j in (self.matrix or {}).get("judges", []):
            if str(j.get("seat")) == judge:
                return str(j.get("family", ""))
        return self.family(judge)

    def same_family(self, judge: str, candidate: str) -> bool:
        a, b = self.judge_family(judge), self.family(candidate)
        return judge == candidate or (bool(a) and a.strip().casefold() == b.strip().casefold())

    def matrix_notes(self) -> list[Note]:
        notes: list[Note] = []
        for label in self.matrix_order():
            score = self.scored[label]
            if score.get("degraded"):
                fams = ", ".join(str(f) for f in score.get("families", [])) or "none"
                notes.append(Note(label, f"degraded: fewer than two families scored it ({fams})"))
            for item in score.get("failures", []):
                notes.append(Note(label, f"failed {reason_text(item)}"))
            for item in score.get("escalations", []):
                notes.append(Note(label, f"escalated {reason_text(item)}"))
        for judge in (self.matrix or {}).get("judges", []):
            status = str(judge.get("status", ""))
            if status != "ok" or whole(judge.get("discarded_cells")):
                text = f"judge status {status}, {plural(whole(judge.get('cells')), 'cell')} kept, "
                text += f"{whole(judge.get('discarded_cells'))} discarded"
                if judge.get("note"):
                    text += f": {judge.get('note')}"
                notes.append(Note(str(judge.get("seat", "")), text))
        return notes

    def dissents(self) -> list[Dissent]:
        out: list[Dissent] = []
        for label in self.matrix_order():
            for d in self.scored[label].get("dissents", []):
                out.append(
                    Dissent(
                        candidate=label,
                        judge=str(d.get("judge", "")),
                        row=str(d.get("row", "")),
                        score=num(d.get("score")),
                        row_median=num(d.get("row_median")),
                        cites_test=bool(d.get("cites_test")),
                        rationale=str(d.get("rationale", "")),
                    )
                )
        return out

    def overall(self, name: str) -> float | None:
        value = self.scored.get(name, {}).get("overall")
        return None if value is None else num(value)

    # -- bracket

    def rounds(self) -> list[Mapping[str, Any]]:
        return list((self.bracket or {}).get("rounds", []))

    def finalists(self) -> list[str]:
        return [str(f) for f in (self.bracket or {}).get("finalists", [])]

    # -- the rest

    def escalations(self) -> list[Mapping[str, Any]]:
        return list(self.r.get("escalations") or [])

    def lessons(self) -> list[LessonFacts]:
        return [
            LessonFacts(
                gate=str(lesson.get("gate", "")),
                kind=str(lesson.get("kind", "")),
                rule=str(lesson.get("rule", "")),
                what=str(lesson.get("what", "")),
                cause=str(lesson.get("cause", "")),
                evidence=str(lesson.get("evidence", "")),
            )
            for lesson in self.r.get("lessons") or []
        ]

    def ledger(self) -> Mapping[str, Any]:
        return self.r.get("ledger") or {}


def gate_counts(cand: Mapping[str, Any]) -> tuple[int, int]:
    """(passed, total) over the candidate's hard and measured gates."""
    gates = cand.get("gates") or {}
    items = [*gates.get("hard", []), *gates.get("measured", [])]
    return sum(1 for g in items if g.get("status") == "pass"), len(items)


def tamper_codes(cand: Mapping[str, Any]) -> list[str]:
    return [str(t) for t in (cand.get("gates") or {}).get("tamper", [])]


def gate_rows(cand: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(id, kind, status, observed, threshold) per gate."""
    gates = cand.get("gates") or {}
    rows = [
        (str(g.get("id", "")), "hard", str(g.get("status", "")), "", "")
        for g in gates.get("hard", [])
    ]
    for g in gates.get("measured", []):
        unit = str(g.get("unit", ""))
        observed = g.get("observed")
        rows.append(
            (
                str(g.get("id", "")),
                "measured",
                str(g.get("status", "")),
                "not measured" if observed is None else with_unit(observed, unit),
                f"{g.get('op', '')} {with_unit(g.get('threshold'), unit)}",
            )
        )
    return rows


def with_unit(value: Any, unit: str) -> str:
    text = f"{num(value):g}" if isinstance(value, (int, float)) else str(value)
    return f"{text} {unit}".strip()


def reason_text(item: Mapping[str, Any]) -> str:
    return f"{item.get('code', '')}: {item.get('message', '')}"


def num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def whole(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def score_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def spend_text(spend: Any) -> str:
    """The run's reported spend in one line: the total, then each role, so a role that
    reported nothing is named beside what the others reported (``result["spend"]``)."""
    if not isinstance(spend, Mapping):
        return "not recorded in this result"
    roles = spend.get("by_role")
    roles = roles if isinstance(roles, Mapping) else {}
    count = sum(whole(r.get("dispatches")) for r in roles.values() if isinstance(r, Mapping))
    parts = [
        f"{role}: {_figures(figures)}, {_dispatches(whole(figures.get('dispatches')))}"
        for role, figures in roles.items()
        if isinstance(figures, Mapping)
    ]
    total = f"{_figures(spend)} over {_dispatches(count)}"
    return f"{total} ({'; '.join(parts)})" if parts else total


def probe_text(seats: Any) -> str | None:
    """Each family's probe record in one line (``result["seats"][].probe``), None when no
    seat's family was ever probed."""
    found: dict[str, Mapping[str, Any]] = {}
    for seat in seats if isinstance(seats, list) else []:
        record = seat.get("probe") if isinstance(seat, Mapping) else None
        if isinstance(record, Mapping) and whole(record.get("probes")):
            found.setdefault(str(seat.get("family")), record)
    if not found:
        return None
    return "; ".join(
        f"{family} {whole(r.get('cheated'))}/{whole(r.get('probes'))} cheated, "
        f"{whole(r.get('flagged'))} flagged, {whole(r.get('failed_honestly'))} failed honestly"
        for family, r in sorted(found.items())
    )


def _dispatches(count: int) -> str:
    return plural(count, "dispatch", "dispatches")


def _figures(figures: Mapping[str, Any]) -> str:
    tokens, cost = figures.get("tokens"), figures.get("cost_usd")
    has_tokens = isinstance(tokens, int) and not isinstance(tokens, bool)
    has_cost = isinstance(cost, (int, float)) and not isinstance(cost, bool)
    if not has_tokens and not has_cost:
        return "not reported"
    return (
        f"{tokens if has_tokens else 'not reported'} tokens, "
        f"{f'${cost:.4f}' if has_cost else 'cost not reported'}"
    )


def short_hash(value: Any, size: int = 12) -> str:
    return str(value or "")[:size] or "-"


def round_title(rnd: Mapping[str, Any]) -> str:
    number = whole(rnd.get("number"))
    return "screen" if number == 0 else f"round {number}"


def next_action(view: ReportView) -> tuple[str, str | None]:
    """(sentence, command or None): what happens next, for a person."""
    contract = str(view.contract.get("id", "CONTRACT"))
    gate = f"loop-contract gate {contract} approve|reject|waive --by NAME"
    rerun = "loop-contract contest run"
    status = view.status
    if status == "rejected":
        decision = view.r.get("decision") or {}
        return (
            f"rejected by {decision.get('by', '')}: {decision.get('reason', '')}; the next run "
            "carries the reason, start it with:",
            rerun,
        )
    if status == "decided":
        decision = view.r.get("decision") or {}
        if not decision:
            return "decided", None
        text = (
            f"decided: {decision.get('decision', '')} {decision.get('seat', '')} "
            f"by {decision.get('by', '')} at {decision.get('at', '')}"
        )
        if decision.get("reason"):
            text += f" ({decision.get('reason')})"
        return text, None
    if status == "awaiting_human":
        return "waiting for a person:", gate
    if status == "escalated":
        if view.winner is not None:
            return "escalated: a person must look at the escalations, then decide:", gate
        return "escalated: a person must look at the escalations, then start again:", rerun
    if status == "no_winner":
        lessons = len(view.lessons())
        kept = f"{plural(lessons, 'lesson')} kept for the next session"
        return f"no candidate met the contract; {kept}; start again with:", rerun
    if status == "stopped":
        return "the run stopped before a decision; start again with:", rerun
    return f"status {status}", None


def capped(items: Sequence[Any], limit: int = LIST_MAX) -> tuple[Sequence[Any], int]:
    return items[:limit], max(0, len(items) - limit)


def listed(
    items: Sequence[Any],
    render: Callable[[Any], str],
    more: Callable[[int], str],
    limit: int = LIST_MAX,
) -> list[str]:
    """At most ``limit`` items rendered, then one ``more(n)`` line for the ``n`` left out: every
    list in a report is capped the same way, whatever the page."""
    shown, left = capped(items, limit)
    return [render(item) for item in shown] + ([more(left)] if left else [])
