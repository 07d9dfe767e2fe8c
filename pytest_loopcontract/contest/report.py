"""The contest reports: one run result document in, a terminal page, a markdown comment and an
HTML page out.

Why it is built this way:

* **One input.** Every renderer reads only the run result document (``result.json``, shape in
  ``schemas/contest_result.schema.json``), the same file the engine writes and the action
  uploads. What a person reads in a terminal, a pull-request comment and the HTML page can
  therefore not disagree, and any past run can be rendered again from its document.
* **Seat text is data.** Test names, failure messages, rationales, branch and seat names come
  from programs the contest does not trust. Each renderer passes every such string through
  :mod:`.markup` for its medium, and cuts it to a length, so a seat can neither inject markup
  nor flood a report.
* **Say what a seat is.** A scripted seat is a deterministic local program; it is labelled
  "scripted, not a model" in every format, so nobody reads a demo as a model's result.
* **Fit the medium.** A pull-request comment has a hard size limit, so the markdown drops
  detail sections (least useful first) until it fits and then says where the full report is.
  The HTML page is one self-contained file: inline CSS, no script, no external URL, and a
  Content-Security-Policy that forbids loading anything, so it opens offline from an artifact
  and stays inert even if an escape were missed.
* **Pure.** Rendering is string building with no I/O; :func:`write_html` is the one writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pytest_loopcontract.contest.markup import (
    code_block,
    code_span,
    escape_html,
    escape_markdown_inline,
    mermaid_label,
    plain_text,
)
from pytest_loopcontract.fsio import write_text_atomic

__all__ = [
    "AGENT_LABEL",
    "MARKDOWN_MAX_CHARS",
    "SCRIPTED_LABEL",
    "STATUS_TEXT",
    "next_step",
    "render_html",
    "render_markdown",
    "render_terminal",
    "validate_result",
    "write_html",
]

SCRIPTED_LABEL = "scripted, not a model"
"""How every report labels a seat whose ``scripted`` flag is set."""

AGENT_LABEL = "agent"
"""How every report labels any other seat."""

MARKDOWN_MAX_CHARS = 60_000
"""Default size cap of the markdown: under GitHub's 65,536-character comment limit."""

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

_SHORT = 80  # names, ids, branch names in tables
_LINE = 300  # one message or rationale in a list or a table cell
_LONG = 2000  # a message shown on its own
_TITLE = 600  # an HTML title attribute (tooltip)
_LIST_MAX = 20  # list items shown before "and N more"


# --------------------------------------------------------------------------------------------
# schema


@cache
def _schema() -> dict[str, Any]:
    text = (
        resources.files("pytest_loopcontract")
        .joinpath("schemas/contest_result.schema.json")
        .read_text("utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate_result(document: Mapping[str, Any]) -> list[str]:
    """Problems with a run result document (empty when valid): JSON Schema errors first, then,
    for a document the schema accepts, names that point nowhere (a candidate, cell, round,
    winner or decision naming a seat the document does not list, a seat listed twice)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path)))
    ]
    return errors or _reference_errors(document)


def _reference_errors(doc: Result) -> list[str]:
    names = [str(s["name"]) for s in doc["seats"]]
    known = set(names)
    errors = [f"seats: {name!r} is listed twice" for name in sorted(known) if names.count(name) > 1]

    def check(path: str, name: object) -> None:
        if name is not None and name not in known:
            errors.append(f"{path}: {name!r} is not a seat of this run")

    for i, cand in enumerate(doc["candidates"]):
        check(f"candidates/{i}/seat", cand["seat"])
        for j, other in enumerate(cand["same_tree_as"]):
            check(f"candidates/{i}/same_tree_as/{j}", other)
    matrix = doc["matrix"]
    if matrix is not None:
        for i, judge in enumerate(matrix["judges"]):
            check(f"matrix/judges/{i}/seat", judge["seat"])
        for i, cell in enumerate(matrix["cells"]):
            check(f"matrix/cells/{i}/judge", cell["judge"])
            check(f"matrix/cells/{i}/candidate", cell["candidate"])
        for label, score in matrix["candidates"].items():
            check(f"matrix/candidates/{label}", label)
            for i, dissent in enumerate(score["dissents"]):
                check(f"matrix/candidates/{label}/dissents/{i}/judge", dissent["judge"])
    bracket = doc["bracket"]
    if bracket is not None:
        for i, rnd in enumerate(bracket["rounds"]):
            for key in ("field_in", "field_out", "eliminated"):
                for j, name in enumerate(rnd[key]):
                    check(f"bracket/rounds/{i}/{key}/{j}", name)
        for j, name in enumerate(bracket["finalists"]):
            check(f"bracket/finalists/{j}", name)
        check("bracket/proposed_winner", bracket["proposed_winner"])
    check("winner", doc["winner"])
    if doc["decision"] is not None:
        check("decision/seat", doc["decision"]["seat"])
    return errors


# --------------------------------------------------------------------------------------------
# what the reports share: a read-only view over the document


@dataclass(frozen=True)
class _Note:
    subject: str  # a seat name ("" for the run)
    text: str  # our words, may embed data already formatted as plain text


@dataclass(frozen=True)
class _Dissent:
    candidate: str
    judge: str
    row: str
    score: float
    row_median: float
    cites_test: bool
    rationale: str


class _View:
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
            if seat not in self.latest or _int(cand.get("attempt")) >= _int(
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
        self.winner: str | None = _opt_str(result.get("winner"))
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
            key=lambda c: (scored[c].get("overall") is None, -_num(scored[c].get("overall")), c),
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
            sums.setdefault(key, []).append(_num(cell.get("score")))
        return {key: sum(v) / len(v) for key, v in sums.items()}

    def judge_family(self, judge: str) -> str:
        for j in (self.matrix or {}).get("judges", []):
            if str(j.get("seat")) == judge:
                return str(j.get("family", ""))
        return self.family(judge)

    def same_family(self, judge: str, candidate: str) -> bool:
        a, b = self.judge_family(judge), self.family(candidate)
        return judge == candidate or (bool(a) and a.strip().casefold() == b.strip().casefold())

    def matrix_notes(self) -> list[_Note]:
        notes: list[_Note] = []
        for label in self.matrix_order():
            score = self.scored[label]
            if score.get("degraded"):
                fams = ", ".join(str(f) for f in score.get("families", [])) or "none"
                notes.append(_Note(label, f"degraded: fewer than two families scored it ({fams})"))
            for item in score.get("failures", []):
                notes.append(_Note(label, f"failed {_reason(item)}"))
            for item in score.get("escalations", []):
                notes.append(_Note(label, f"escalated {_reason(item)}"))
        for judge in (self.matrix or {}).get("judges", []):
            status = str(judge.get("status", ""))
            if status != "ok" or _int(judge.get("discarded_cells")):
                text = f"judge status {status}, {_int(judge.get('cells'))} cells kept, "
                text += f"{_int(judge.get('discarded_cells'))} discarded"
                if judge.get("note"):
                    text += f": {judge.get('note')}"
                notes.append(_Note(str(judge.get("seat", "")), text))
        return notes

    def dissents(self) -> list[_Dissent]:
        out: list[_Dissent] = []
        for label in self.matrix_order():
            for d in self.scored[label].get("dissents", []):
                out.append(
                    _Dissent(
                        candidate=label,
                        judge=str(d.get("judge", "")),
                        row=str(d.get("row", "")),
                        score=_num(d.get("score")),
                        row_median=_num(d.get("row_median")),
                        cites_test=bool(d.get("cites_test")),
                        rationale=str(d.get("rationale", "")),
                    )
                )
        return out

    def overall(self, name: str) -> float | None:
        value = self.scored.get(name, {}).get("overall")
        return None if value is None else _num(value)

    # -- bracket

    def rounds(self) -> list[Mapping[str, Any]]:
        return list((self.bracket or {}).get("rounds", []))

    def finalists(self) -> list[str]:
        return [str(f) for f in (self.bracket or {}).get("finalists", [])]

    # -- the rest

    def escalations(self) -> list[Mapping[str, Any]]:
        return list(self.r.get("escalations") or [])

    def lessons(self) -> list[Mapping[str, Any]]:
        return list(self.r.get("lessons") or [])

    def ledger(self) -> Mapping[str, Any]:
        return self.r.get("ledger") or {}


def _gates(cand: Mapping[str, Any]) -> tuple[int, int]:
    """(passed, total) over the candidate's hard and measured gates."""
    gates = cand.get("gates") or {}
    items = [*gates.get("hard", []), *gates.get("measured", [])]
    return sum(1 for g in items if g.get("status") == "pass"), len(items)


def _tamper(cand: Mapping[str, Any]) -> list[str]:
    return [str(t) for t in (cand.get("gates") or {}).get("tamper", [])]


def _gate_rows(cand: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
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
                "not measured" if observed is None else _with_unit(observed, unit),
                f"{g.get('op', '')} {_with_unit(g.get('threshold'), unit)}",
            )
        )
    return rows


def _with_unit(value: Any, unit: str) -> str:
    text = f"{_num(value):g}" if isinstance(value, (int, float)) else str(value)
    return f"{text} {unit}".strip()


def _reason(item: Mapping[str, Any]) -> str:
    return f"{item.get('code', '')}: {item.get('message', '')}"


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _short_hash(value: Any, size: int = 12) -> str:
    return str(value or "")[:size] or "-"


def _round_title(rnd: Mapping[str, Any]) -> str:
    number = _int(rnd.get("number"))
    return "screen" if number == 0 else f"round {number}"


def _next(view: _View) -> tuple[str, str | None]:
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
        kept = f"{lessons} lesson{'s' if lessons != 1 else ''} kept for the next session"
        return f"no candidate met the contract; {kept}; start again with:", rerun
    if status == "stopped":
        return "the run stopped before a decision; start again with:", rerun
    return f"status {status}", None


def next_step(result: Result) -> str:
    """What happens next, in one line of plain text, e.g. ``waiting for a person: loop-contract
    gate rolling approve|reject|waive --by NAME``."""
    sentence, command = _next(_View(result))
    return plain_text(f"{sentence} {command}" if command else sentence, limit=_LONG)


# --------------------------------------------------------------------------------------------
# terminal


def _t(text: Any, limit: int | None = _SHORT) -> str:
    return plain_text(str(text), limit=limit)


def _columns(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _capped(items: Sequence[Any], limit: int = _LIST_MAX) -> tuple[Sequence[Any], int]:
    return items[:limit], max(0, len(items) - limit)


def render_terminal(result: Result) -> str:
    """The run for a terminal: plain text, no escape sequences from any seat."""
    view = _View(result)
    lines: list[str] = []
    contract = view.contract
    lines.append(
        f"loop-contract contest {_t(contract.get('id', ''))}  run {_t(result.get('run_id', ''))}"
    )
    lines.append(
        f"status: {STATUS_TEXT.get(view.status, _t(view.status)).upper()}  "
        f"attempts: {_int(result.get('attempts'))}  "
        f"{_t(result.get('started', ''))} .. {_t(result.get('finished', ''))}"
    )
    if contract.get("goal"):
        lines.append(f"goal: {_t(contract.get('goal'), _LINE)}")
    lines.append(
        f"contract: {_t(contract.get('path', ''))} ({_t(contract.get('mode', ''))} mode, "
        f"sha256 {_short_hash(contract.get('sha256'))})"
    )

    lines += ["", "seats"]
    table = [["SEAT", "FAMILY", "KIND", "OUTCOME", "VERDICT", "STAGE", "GATES", "NOTES"]]
    for name in view.seat_names:
        cand = view.latest.get(name)
        if cand is None:
            table.append([_t(name), _t(view.family(name)), view.kind(name), "-", "-", "-", "-", ""])
            continue
        passed, total = _gates(cand)
        notes = []
        if view.attempts_of.get(name, 0) > 1:
            notes.append(f"attempt {_int(cand.get('attempt'))}")
        if _tamper(cand):
            notes.append("tamper: " + _t(", ".join(_tamper(cand)), _SHORT))
        if cand.get("same_tree_as"):
            notes.append("same tree as " + _t(", ".join(map(str, cand["same_tree_as"]))))
        table.append(
            [
                _t(name),
                _t(view.family(name)),
                view.kind(name),
                _t(cand.get("outcome", "")),
                _t(cand.get("verdict") or "-"),
                _t(cand.get("stage", "")),
                f"{passed}/{total}",
                "; ".join(notes),
            ]
        )
    lines += _columns(table)
    for name in view.seat_names:
        cand = view.latest.get(name)
        for item in (cand or {}).get("reasons", [])[:3]:
            lines.append(f"    {_t(name)}: {_t(_reason(item), _LINE)}")

    lines += ["", *_terminal_matrix(view)]
    lines += ["", *_terminal_bracket(view)]

    if view.escalations():
        lines += ["", "escalations"]
        shown, more = _capped(view.escalations())
        lines += [f"  - {_t(_reason(e), _LINE)}" for e in shown]
        if more:
            lines.append(f"  ... and {more} more")
    dissents = view.dissents()
    if dissents:
        lines += ["", "dissents"]
        shown, more = _capped(dissents)
        for d in shown:
            cites = ", cites a test" if d.cites_test else ""
            lines.append(
                f"  - {_t(d.judge)} on {_t(d.candidate)}/{_t(d.row)}: {d.score:.1f} vs median "
                f"{d.row_median:.1f}{cites}: {_t(d.rationale, _LINE)}"
            )
        if more:
            lines.append(f"  ... and {more} more")

    lessons = view.lessons()
    lines += ["", f"lessons ({len(lessons)})"]
    shown, more = _capped(lessons)
    for lesson in shown:
        lines.append(
            f"  - {_t(lesson.get('gate', ''))} ({_t(lesson.get('kind', ''))}): "
            f"{_t(lesson.get('rule', ''), _LINE)}"
        )
    if more:
        lines.append(f"  ... and {more} more")

    ledger = view.ledger()
    lines += [
        "",
        f"next: {next_step(result)}",
        f"ledger: {_t(ledger.get('path', ''))} head seq {_int(ledger.get('head_seq'))} "
        f"{_short_hash(ledger.get('head'))}",
        f"certificate: {'present' if result.get('certificate') else 'none'}",
    ]
    return "\n".join(lines) + "\n"


def _terminal_matrix(view: _View) -> list[str]:
    if view.matrix is None:
        return ["validity matrix: not run (no candidate reached it)"]
    judges = view.judges()
    rows = view.rows
    means = view.judge_means()
    lines = [
        f"validity matrix (min score {_num(view.matrix.get('min_score')):g}; "
        "judge columns: the judge's mean over the rows)"
    ]
    table = [
        [
            "CANDIDATE",
            *(_t(j, 16) for j in judges),
            "OVERALL",
            *(_t(r, 18) for r in rows),
            "RESULT",
        ]
    ]
    for label in view.matrix_order():
        score = view.scored[label]
        medians = score.get("row_medians") or {}
        flags = []
        if score.get("degraded"):
            flags.append("degraded")
        if score.get("escalations"):
            flags.append("escalated")
        table.append(
            [
                _t(label),
                *(
                    "x" if view.same_family(j, label) else _score(means.get((label, j)))
                    for j in judges
                ),
                _score(view.overall(label)),
                *(_score(_num(medians[r]) if r in medians else None) for r in rows),
                ("PASS" if score.get("passed") else "FAIL")
                + (f" ({', '.join(flags)})" if flags else ""),
            ]
        )
    lines += _columns(table)
    lines.append("  (x: same family, does not judge; -: no score)")
    notes = view.matrix_notes()
    shown, more = _capped(notes)
    lines += [f"  {_t(n.subject)}: {_t(n.text, _LINE)}" for n in shown]
    if more:
        lines.append(f"  ... and {more} more notes")
    return lines


def _terminal_bracket(view: _View) -> list[str]:
    if view.bracket is None:
        return ["bracket: not run (no candidate passed the validity matrix)"]
    lines = ["bracket"]
    for rnd in view.rounds():
        out = ", ".join(_t(n) for n in rnd.get("eliminated", [])) or "none"
        extra = ""
        if rnd.get("cut_line") is not None:
            extra += f", cut line {_num(rnd.get('cut_line')):.2f}"
        if rnd.get("decided_by"):
            extra += f", decided by {_t(rnd.get('decided_by'))}"
        lines.append(
            f"  {_round_title(rnd)}: {len(rnd.get('field_in', []))} in, "
            f"{len(rnd.get('field_out', []))} out; eliminated: {out}{extra}; "
            f"{_t(rnd.get('reason', ''), _LINE)}"
        )
    lines.append(f"  finalists: {', '.join(_t(f) for f in view.finalists()) or 'none'}")
    if view.winner is not None:
        lines.append(
            f"  proposed winner: {_t(view.winner)} ({view.kind(view.winner)}), "
            f"overall {_score(view.overall(view.winner))}"
        )
    else:
        lines.append("  proposed winner: none")
    if view.bracket.get("reason"):
        lines.append(f"  {_t(view.bracket.get('reason'), _LINE)}")
    return lines


# --------------------------------------------------------------------------------------------
# markdown


def _m(text: Any, limit: int | None = _SHORT) -> str:
    return escape_markdown_inline(str(text), limit=limit)


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GFM table from cells already escaped with :func:`_m` (or numbers we formatted)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class _Section:
    title: str  # how the "left out" note names it
    text: str
    drop: int | None  # drop order when the markdown is too long (1 first); None: always kept


def render_markdown(
    result: Result,
    *,
    max_chars: int = MARKDOWN_MAX_CHARS,
    summary_pointer: str | None = None,
) -> str:
    """The run as GitHub-flavoured markdown, at most ``max_chars`` characters.

    Too long, it drops detail sections (judges' rationales, gates, dissents, lessons, the
    bracket diagram, the matrix, the seats table, in that order) until it fits, and ends
    with a note naming what was left out, followed by ``summary_pointer`` (trusted markdown
    from the caller, e.g. "Full report in the job summary."). If the status alone does not
    fit, it is cut at a line boundary.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    sections = _markdown_sections(_View(result))
    text = _join(sections)
    if len(text) <= max_chars:
        return text
    left_out: list[str] = []
    for order in sorted({s.drop for s in sections if s.drop is not None}):
        left_out += [s.title for s in sections if s.drop == order]
        sections = [s for s in sections if s.drop != order]
        text = _join(sections) + _left_out_note(left_out, summary_pointer)
        if len(text) <= max_chars:
            return text
    note = _left_out_note([*left_out, "most of the status"], summary_pointer)
    body = _join(sections)[: max(0, max_chars - len(note))]
    if "\n" in body:
        body = body[: body.rfind("\n") + 1]
    return (body + note)[:max_chars]


def _join(sections: Sequence[_Section]) -> str:
    return "\n\n".join(s.text for s in sections if s.text) + "\n"


def _left_out_note(left_out: Sequence[str], pointer: str | None) -> str:
    note = f"\n---\n_Shortened to fit a comment: left out {', '.join(left_out)}._"
    if pointer:
        note += f" {pointer.strip()}"
    return note + "\n"


def _markdown_sections(view: _View) -> list[_Section]:
    sections = [_Section("status", _md_status(view), None)]
    if view.escalations():
        items, more = _capped(view.escalations())
        text = "**Escalations**\n\n" + "\n".join(f"- {_m(_reason(e), _LINE)}" for e in items)
        if more:
            text += f"\n- … and {more} more"
        sections.append(_Section("escalations", text, None))
    sections.append(_Section("the seats table", _md_seats(view), 7))
    sections.append(_Section("the matrix", _md_matrix(view), 6))
    sections.append(_Section("the bracket", _md_bracket(view), 5))
    sections.append(_Section("dissents", _md_dissents(view), 3))
    sections.append(_Section("lessons", _md_lessons(view), 4))
    sections.append(_Section("the gates", _md_gates(view), 2))
    sections.append(_Section("the judges' rationales", _md_rationales(view), 1))
    sections.append(_Section("the ledger", _md_footer(view), None))
    return sections


def _md_status(view: _View) -> str:
    r = view.r
    status = STATUS_TEXT.get(view.status, view.status)
    head = f"### loop-contract contest {_m(view.contract.get('id', ''))}: {_m(status)}"
    facts = [f"**Status: {_m(status)}**"]
    if view.winner is not None:
        facts.append(f"proposed winner: **{_m(view.winner)}** ({view.kind(view.winner)})")
    else:
        facts.append("no proposed winner")
    facts.append(f"run {_m(r.get('run_id', ''))}")
    facts.append(f"attempts {_int(r.get('attempts'))}")
    lines = [head, "", " · ".join(facts)]
    if view.contract.get("goal"):
        lines += ["", f"> {_m(view.contract.get('goal'), _LINE)}"]
    sentence, command = _next(view)
    step = f"**Next:** {_m(sentence, _LONG)}"
    if command:
        step += " " + code_span(command)
    lines += ["", step]
    return "\n".join(lines)


def _md_seats(view: _View) -> str:
    rows = []
    for name in view.seat_names:
        cand = view.latest.get(name) or {}
        passed, total = _gates(cand)
        attempt = _int(cand.get("attempt"))
        rows.append(
            [
                _m(name) + (" 🏆" if name == view.winner else ""),
                _m(view.family(name)),
                view.kind(name),
                _m(cand.get("outcome", "-")),
                _m(cand.get("verdict") or "-"),
                _m(cand.get("stage", "-")),
                f"{passed}/{total}" if cand else "-",
                _score(view.overall(name)),
                str(attempt) if cand else "-",
            ]
        )
    header = ["seat", "family", "kind", "outcome", "verdict", "stage", "gates", "overall", "att."]
    return "#### Seats\n\n" + _md_table(header, rows)


def _md_matrix(view: _View) -> str:
    if view.matrix is None:
        return "#### Validity matrix\n\nNot run: no candidate reached it."
    judges = view.judges()
    rows = view.rows
    means = view.judge_means()
    header = [
        "candidate",
        *(f"judge {_m(j)}" for j in judges),
        "**overall**",
        *(_m(r) for r in rows),
        "judged gate",
    ]
    body = []
    for label in view.matrix_order():
        score = view.scored[label]
        medians = score.get("row_medians") or {}
        verdict = "✅ pass" if score.get("passed") else "❌ fail"
        if score.get("degraded"):
            verdict += ", degraded"
        if score.get("escalations"):
            verdict += ", escalated"
        body.append(
            [
                _m(label),
                *(
                    "—" if view.same_family(j, label) else _score(means.get((label, j)))
                    for j in judges
                ),
                f"**{_score(view.overall(label))}**",
                *(_score(_num(medians[r]) if r in medians else None) for r in rows),
                verdict,
            ]
        )
    text = (
        f"#### Validity matrix\n\nMinimum score {_num(view.matrix.get('min_score')):g}. A judge "
        "column is that judge's mean over the rows (— its own family: it does not judge); row "
        "columns are the weighted medians.\n\n" + _md_table(header, body)
    )
    notes, more = _capped(view.matrix_notes())
    if notes:
        text += "\n\n" + "\n".join(f"- {_m(n.subject)}: {_m(n.text, _LINE)}" for n in notes)
        if more:
            text += f"\n- … and {more} more"
    return text


def _mermaid(view: _View) -> str:
    rounds = view.rounds()
    finalists = view.finalists()
    lines = ["flowchart LR"]
    node: dict[tuple[int, str], str] = {}
    out_nodes: list[str] = []

    def label(name: str) -> str:
        score = view.overall(name)
        text = mermaid_label(name, limit=40)
        return text if score is None else f"{text} {score:.1f}"

    for k, rnd in enumerate(rounds):
        title = f"{_round_title(rnd)}: {rnd.get('reason', '')}"
        lines.append(f'  subgraph R{k}["{mermaid_label(title, limit=60)}"]')
        lines.append("    direction TB")
        eliminated = {str(n) for n in rnd.get("eliminated", [])}
        for i, name in enumerate(str(n) for n in rnd.get("field_in", [])):
            nid = f"r{k}n{i}"
            node[(k, name)] = nid
            lines.append(f'    {nid}["{label(name)}"]')
            if name in eliminated:
                out_nodes.append(nid)
        lines.append("  end")
    k_final = len(rounds)
    lines.append(f'  subgraph R{k_final}["final"]')
    lines.append("    direction TB")
    win_node = None
    for i, name in enumerate(finalists):
        nid = f"f{i}"
        node[(k_final, name)] = nid
        text = label(name)
        if name == view.winner:
            text = f"★ {text} - proposed winner"
            win_node = nid
        lines.append(f'    {nid}["{text}"]')
    lines.append("  end")
    for k, rnd in enumerate(rounds):
        for name in (str(n) for n in rnd.get("field_out", [])):
            src, dst = node.get((k, name)), node.get((k + 1, name))
            if src and dst:
                lines.append(f"  {src} --> {dst}")
    # Named colours: a "#1a7f37" would read as an issue reference to a naive scan.
    lines.append("  classDef out fill:whitesmoke,stroke:darkgray,color:gray,stroke-dasharray:4 3")
    lines.append("  classDef win fill:honeydew,stroke:green,stroke-width:3px")
    if out_nodes:
        lines.append(f"  class {','.join(out_nodes)} out")
    if win_node:
        lines.append(f"  class {win_node} win")
    return "\n".join(lines)


def _md_bracket(view: _View) -> str:
    if view.bracket is None:
        return "#### Bracket\n\nNot run: no candidate passed the validity matrix."
    text = "#### Bracket\n\n" + code_block(_mermaid(view), lang="mermaid", limit=None)
    finalists = ", ".join(_m(f) for f in view.finalists()) or "none"
    text += f"\n\nFinalists: {finalists}."
    if view.bracket.get("reason"):
        text += f" {_m(view.bracket.get('reason'), _LINE)}"
    return text


def _md_dissents(view: _View) -> str:
    dissents = view.dissents()
    if not dissents:
        return ""
    shown, more = _capped(dissents)
    lines = ["#### Dissents", ""]
    for d in shown:
        cites = " (cites a test)" if d.cites_test else ""
        lines.append(
            f"- {_m(d.judge)} on {_m(d.candidate)}, {_m(d.row)}: {d.score:.1f} against a median of "
            f"{d.row_median:.1f}{cites}: {_m(d.rationale, _LINE)}"
        )
    if more:
        lines.append(f"- … and {more} more")
    return "\n".join(lines)


def _md_lessons(view: _View) -> str:
    lessons = view.lessons()
    if not lessons:
        return ""
    shown, more = _capped(lessons)
    lines = [f"#### Lessons ({len(lessons)})", ""]
    for lesson in shown:
        lines.append(
            f"- **{_m(lesson.get('gate', ''))}** ({_m(lesson.get('kind', ''))}): "
            f"{_m(lesson.get('rule', ''), _LINE)}  \n"
            f"  what: {_m(lesson.get('what', ''), _LINE)}; "
            f"cause: {_m(lesson.get('cause', ''), _LINE)}"
        )
    if more:
        lines.append(f"- … and {more} more")
    return "\n".join(lines)


def _md_gates(view: _View) -> str:
    if not view.candidates:
        return ""
    parts = ["#### Gates per candidate"]
    for cand in sorted(
        view.candidates, key=lambda c: (str(c.get("seat", "")), _int(c.get("attempt")))
    ):
        name = str(cand.get("seat", ""))
        passed, total = _gates(cand)
        head = (
            f"**{_m(name)}**, attempt {_int(cand.get('attempt'))} · {_m(view.family(name))} · "
            f"{view.kind(name)} · outcome {_m(cand.get('outcome', ''))} · verdict "
            f"{_m(cand.get('verdict') or '-')} · stage {_m(cand.get('stage', ''))} · "
            f"gates {passed}/{total}"
        )
        where = f"branch {_m(cand.get('branch', ''), _SHORT)}"
        if cand.get("commit"):
            where += f" · commit {_m(_short_hash(cand.get('commit')))}"
        text = head + "  \n" + where
        rows = [[_m(c) for c in row] for row in _gate_rows(cand)]
        if rows:
            text += "\n\n" + _md_table(["gate", "kind", "status", "observed", "threshold"], rows)
        tamper = _tamper(cand)
        if tamper:
            text += "\n\nTamper findings: " + ", ".join(_m(t) for t in tamper[:_LIST_MAX])
        reasons, more = _capped(list(cand.get("reasons", [])), 5)
        if reasons:
            text += "\n\n" + "\n".join(f"- {_m(_reason(r), _LINE)}" for r in reasons)
            if more:
                text += f"\n- … and {more} more"
        parts.append(text)
    return "\n\n".join(parts)


def _md_rationales(view: _View) -> str:
    cells = view.cells()
    if not cells:
        return ""
    rows = [
        [
            _m(c.get("judge", "")),
            _m(c.get("candidate", "")),
            _m(c.get("row", "")),
            f"{_num(c.get('score')):.1f}",
            f"{_num(c.get('confidence')):.2f}",
            _m(c.get("evidence", ""), 120),
            _m(c.get("rationale", ""), _LINE),
        ]
        for c in sorted(
            cells, key=lambda c: (str(c.get("candidate")), str(c.get("row")), str(c.get("judge")))
        )
    ]
    table = _md_table(
        ["judge", "candidate", "row", "score", "confidence", "evidence", "rationale"], rows
    )
    return (
        f"<details><summary>Judges' rationales ({len(cells)} cells)</summary>\n\n"
        f"{table}\n\n</details>"
    )


def _md_footer(view: _View) -> str:
    ledger = view.ledger()
    cert = "issued" if view.r.get("certificate") else "not issued"
    return (
        f"<sub>Ledger {_m(ledger.get('path', ''))}, head seq {_int(ledger.get('head_seq'))} "
        f"{_m(_short_hash(ledger.get('head')))} · certificate {cert} · contract "
        f"{_m(view.contract.get('path', ''))} sha256 {_m(_short_hash(view.contract.get('sha256')))}"
        "</sub>"
    )


# --------------------------------------------------------------------------------------------
# HTML


def _h(text: Any, limit: int | None = _SHORT) -> str:
    return escape_html(str(text), limit=limit)


_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)

_CSS = """
:root{color-scheme:light;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;
--green:#1a7f37;--red:#cf222e}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1280px;padding:24px 32px;color:var(--fg);background:#fff;
font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 6px}
h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 4px}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);
padding:1px 4px;border-radius:4px;overflow-wrap:break-word}
.pill{display:inline-block;padding:2px 10px;border-radius:999px;font-weight:600;font-size:13px}
.status-awaiting_human{background:#fff8c5}.status-decided{background:#dafbe1}
.status-no_winner,.status-stopped{background:#ffebe9}.status-escalated{background:#fbefff}
.meta{color:var(--muted);margin:4px 0}
.goal{font-size:15px;margin:10px 0 4px}
.kind{display:inline-block;font-size:11px;padding:0 6px;border-radius:4px;
border:1px solid var(--line);color:var(--muted);white-space:nowrap}
.kind.scripted{border-color:#bf8700;color:#7d4e00;background:#fff8c5}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:var(--green);font-weight:600}.fail,.error,.missing{color:var(--red);font-weight:600}
tr.winner td{background:#dafbe1}
#decision{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
#winner{font-size:18px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(400px,1fr));gap:12px}
.candidate{border:1px solid var(--line);border-radius:8px;padding:8px 12px;overflow-x:auto}
.candidate table{width:100%}
.candidate h3{margin-top:0}
.why{white-space:pre-wrap;overflow-wrap:anywhere;color:var(--muted)}
table.heat td.cell{text-align:center;min-width:52px;font-variant-numeric:tabular-nums;cursor:help}
table.heat td.self{background:var(--soft);color:#9198a1;text-align:center}
table.heat td.none{text-align:center;color:#9198a1}
table.heat tr.overall td{border-top:2px solid #9198a1;font-weight:600}
.legend{display:flex;gap:2px;align-items:center;font-size:12px;color:var(--muted)}
.legend span{display:inline-block;width:22px;text-align:center}
.bracket{display:flex;gap:44px;align-items:flex-start;overflow-x:auto;padding:6px 2px 12px}
.round{display:flex;flex-direction:column;gap:8px;min-width:170px;max-width:240px}
.round h3{margin:0;font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.round .why{font-size:12px;margin:0 0 4px}
.node{position:relative;display:flex;justify-content:space-between;gap:10px;padding:5px 9px;
border:1px solid var(--line);border-radius:6px;background:#fff;overflow-wrap:anywhere}
.node .score{font-variant-numeric:tabular-nums;color:var(--muted);white-space:nowrap}
.round:not(:last-child) .node:not(.out)::after{content:"\\2192";position:absolute;right:-30px;
top:50%;transform:translateY(-50%);color:#9198a1;font-size:16px}
.node.out{background:var(--soft);color:#9198a1;border-style:dashed}
.node.out .name{text-decoration:line-through}
.node.win{border:2px solid var(--green);background:#dafbe1;font-weight:700}
ul.plain{padding-left:18px;margin:4px 0}
footer{margin-top:28px;padding-top:8px;border-top:1px solid var(--line);color:var(--muted)}
"""


def _heat(score: float) -> str:
    """Background colour of a matrix cell: red at 0, yellow at 5, green at 10."""
    hue = max(0.0, min(10.0, score)) * 12
    return f"hsl({hue:.0f} 70% 80%)"


def _kind_badge(view: _View, name: str) -> str:
    kind = view.kind(name)
    cls = "kind scripted" if kind == SCRIPTED_LABEL else "kind"
    return f'<span class="{cls}">{kind}</span>'


def render_html(result: Result) -> str:
    """The run as one self-contained HTML page (no script, no external resource).

    Stable hooks: ``id="winner"`` holds the proposed winner's name (or "none");
    ``data-seat`` marks each seat's row and each candidate card; ``td.cell`` in
    ``table.heat`` is one matrix cell, with ``data-judge``, ``data-candidate``, ``data-row``.
    """
    view = _View(result)
    status = STATUS_TEXT.get(view.status, view.status)
    title = f"loop-contract contest {view.contract.get('id', '')}: {status}"
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_h(title, 200)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        _html_header(view),
        _html_decision(view),
        _html_seats(view),
        _html_escalations(view),
        _html_matrix(view),
        _html_bracket(view),
        _html_dissents(view),
        _html_gates(view),
        _html_lessons(view),
        _html_footer(view),
        "</body>",
        "</html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def write_html(path: str | os.PathLike[str], result: Result) -> None:
    """Render ``result`` with :func:`render_html` and write it atomically to ``path``."""
    write_text_atomic(path, render_html(result))


def _html_header(view: _View) -> str:
    r, c = view.r, view.contract
    status = STATUS_TEXT.get(view.status, view.status)
    dod = "".join(
        f"<li><code>{_h(d.get('id', ''))}</code> {_h(d.get('text', ''), _LINE)}</li>"
        for d in c.get("dod", [])[:_LIST_MAX]
    )
    return (
        "<header>"
        f"<h1>loop-contract contest <code>{_h(c.get('id', ''))}</code></h1>"
        f'<span class="pill status-{_h(view.status, 40)}">{_h(status)}</span>'
        f'<p class="meta">run <code>{_h(r.get("run_id", ""))}</code> · '
        f"{_h(r.get('started', ''))} → {_h(r.get('finished', ''))} · attempts "
        f"{_int(r.get('attempts'))} · contract <code>{_h(c.get('path', ''))}</code> "
        f"({_h(c.get('mode', ''))} mode, sha256 <code>{_h(_short_hash(c.get('sha256')))}</code>)"
        "</p>"
        + (f'<p class="goal">{_h(c.get("goal"), _LINE)}</p>' if c.get("goal") else "")
        + (f'<ul class="plain">{dod}</ul>' if dod else "")
        + "</header>"
    )


def _html_decision(view: _View) -> str:
    if view.winner is not None:
        winner = (
            f'Proposed winner: <strong id="winner">{_h(view.winner)}</strong> '
            f"{_kind_badge(view, view.winner)} · overall {_score(view.overall(view.winner))}"
        )
    else:
        winner = 'Proposed winner: <strong id="winner" class="none">none</strong>'
    sentence, command = _next(view)
    step = f"Next: {_h(sentence, _LONG)}"
    if command:
        step += f" <code>{_h(command, _LONG)}</code>"
    return f'<section id="decision"><p>{winner}</p><p>{step}</p></section>'


def _html_seats(view: _View) -> str:
    rows = []
    for name in view.seat_names:
        cand = view.latest.get(name) or {}
        passed, total = _gates(cand)
        verdict = str(cand.get("verdict") or "-")
        cls = ' class="winner"' if name == view.winner else ""
        tamper = ", ".join(_tamper(cand))
        rows.append(
            f'<tr data-seat="{_h(name, None)}"{cls}><td><strong>{_h(name)}</strong></td>'
            f"<td>{_h(view.family(name))}</td><td>{_kind_badge(view, name)}</td>"
            f"<td>{_h(cand.get('outcome', '-'))}</td>"
            f'<td class="{_h(verdict, 20)}">{_h(verdict)}</td>'
            f"<td>{_h(cand.get('stage', '-'))}</td>"
            f'<td class="num">{f"{passed}/{total}" if cand else "-"}</td>'
            f'<td class="num">{_score(view.overall(name))}</td>'
            f"<td>{_h(tamper, _LINE) if tamper else ''}</td></tr>"
        )
    return (
        '<section id="seats"><h2>Seats</h2><table><thead><tr><th>seat</th><th>family</th>'
        "<th>kind</th><th>outcome</th><th>verdict</th><th>stage</th><th>gates</th>"
        "<th>overall</th><th>tamper</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _html_escalations(view: _View) -> str:
    items, more = _capped(view.escalations())
    if not items:
        return ""
    lis = "".join(
        f"<li><code>{_h(e.get('code', ''))}</code> "
        f'<span class="why">{_h(e.get("message", ""), _LONG)}</span></li>'
        for e in items
    )
    if more:
        lis += f"<li>… and {more} more</li>"
    return f'<section id="escalations"><h2>Escalations</h2><ul class="plain">{lis}</ul></section>'


def _html_matrix(view: _View) -> str:
    if view.matrix is None:
        return (
            '<section id="matrix"><h2>Validity matrix</h2>'
            "<p>Not run: no candidate reached it.</p></section>"
        )
    judges = view.judges()
    rows = view.rows
    at = view.cell_at()
    means = view.judge_means()
    head = "".join(f"<th>{_h(j)}<br><small>{_h(view.judge_family(j))}</small></th>" for j in judges)
    body: list[str] = []
    for label in view.matrix_order():
        score = view.scored[label]
        medians = score.get("row_medians") or {}
        span = len(rows) + 1
        for i, row in enumerate(rows):
            tds = []
            for j in judges:
                cell = at.get((label, row, j))
                if cell is not None:
                    value = _num(cell.get("score"))
                    tip = (
                        f"{j} on {label}, {row}: {value:.1f} "
                        f"(confidence {_num(cell.get('confidence')):.2f})\n"
                        f"evidence: {cell.get('evidence', '')}\n"
                        f"{cell.get('rationale', '')}"
                    )
                    tds.append(
                        f'<td class="cell" data-judge="{_h(j, None)}" '
                        f'data-candidate="{_h(label, None)}" data-row="{_h(row, None)}" '
                        f'style="background:{_heat(value)}" title="{_h(tip, _TITLE)}">'
                        f"{value:.1f}</td>"
                    )
                elif view.same_family(j, label):
                    tds.append('<td class="self" title="same family: does not judge">—</td>')
                else:
                    tds.append('<td class="none" title="no score">·</td>')
            median = _num(medians[row]) if row in medians else None
            first = ""
            if i == 0:
                verdict = "pass" if score.get("passed") else "fail"
                flags = [f for f in ("degraded", "escalations") if score.get(f)]
                first = (
                    f'<th rowspan="{span}" data-seat="{_h(label, None)}">{_h(label)}<br>'
                    f'<span class="{verdict}">{verdict}</span>'
                    + "".join(f"<br><small>{f}</small>" for f in flags)
                    + "</th>"
                )
            tds_html = "".join(tds)
            body.append(
                f"<tr>{first}<td>{_h(row)}</td>{tds_html}"
                f'<td class="num"{_median_style(median)}>{_score(median)}</td></tr>'
            )
        overall = view.overall(label)
        mean_tds = "".join(
            '<td class="self">—</td>'
            if view.same_family(j, label)
            else f'<td class="num">{_score(means.get((label, j)))}</td>'
            for j in judges
        )
        body.append(
            f'<tr class="overall"><td>judge mean / overall</td>{mean_tds}'
            f'<td class="num"{_median_style(overall)}>{_score(overall)}</td></tr>'
        )
    legend = "".join(f'<span style="background:{_heat(float(s))}">{s}</span>' for s in range(0, 11))
    notes, more = _capped(view.matrix_notes())
    notes_html = "".join(
        f'<li><strong>{_h(n.subject)}</strong>: <span class="why">{_h(n.text, _LINE)}</span></li>'
        for n in notes
    ) + (f"<li>… and {more} more</li>" if more else "")
    return (
        '<section id="matrix"><h2>Validity matrix</h2>'
        f'<p class="meta">Minimum score {_num(view.matrix.get("min_score")):g}. Each cell is one '
        "judge's score of one candidate on one row (hover for confidence, evidence and "
        "rationale); the last column is the weighted median, the last row of each candidate "
        "the judges' means and the overall score.</p>"
        f'<div class="legend">0 {legend} 10</div>'
        f'<table class="heat"><thead><tr><th>candidate</th><th>row</th>{head}'
        "<th>median</th></tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
        + (f'<ul class="plain">{notes_html}</ul>' if notes else "")
        + "</section>"
    )


def _median_style(value: float | None) -> str:
    return "" if value is None else f' style="background:{_heat(value)}"'


def _html_bracket(view: _View) -> str:
    if view.bracket is None:
        return (
            '<section id="bracket"><h2>Bracket</h2>'
            "<p>Not run: no candidate passed the validity matrix.</p></section>"
        )

    def node(name: str, cls: str, extra: str = "") -> str:
        score = _score(view.overall(name))
        return (
            f'<div class="node{cls}" data-candidate="{_h(name, None)}">'
            f'<span class="name">{_h(name, 40)}{extra}</span>'
            f'<span class="score">{score}</span></div>'
        )

    columns = []
    for rnd in view.rounds():
        eliminated = {str(n) for n in rnd.get("eliminated", [])}
        nodes = "".join(
            node(str(n), " out" if str(n) in eliminated else "") for n in rnd.get("field_in", [])
        )
        columns.append(
            f'<div class="round"><h3>{_round_title(rnd)}</h3>'
            f'<p class="why">{_h(rnd.get("reason", ""), 160)}</p>{nodes}</div>'
        )
    finals = "".join(
        node(f, " win", " ★") if f == view.winner else node(f, "") for f in view.finalists()
    )
    columns.append(
        f'<div class="round"><h3>final</h3><p class="why">{_h(view.bracket.get("reason", ""), 160)}'
        f"</p>{finals or '<p>none</p>'}</div>"
    )
    return (
        '<section id="bracket"><h2>Bracket</h2>'
        f'<div class="bracket">{"".join(columns)}</div></section>'
    )


def _html_dissents(view: _View) -> str:
    dissents, more = _capped(view.dissents())
    if not dissents:
        return ""
    rows = "".join(
        f"<tr><td>{_h(d.judge)}</td><td>{_h(d.candidate)}</td><td>{_h(d.row)}</td>"
        f'<td class="num">{d.score:.1f}</td><td class="num">{d.row_median:.1f}</td>'
        f"<td>{'yes' if d.cites_test else 'no'}</td>"
        f'<td class="why">{_h(d.rationale, _LINE * 2)}</td></tr>'
        for d in dissents
    )
    if more:
        rows += f'<tr><td colspan="7">… and {more} more</td></tr>'
    return (
        '<section id="dissents"><h2>Dissents</h2><table><thead><tr><th>judge</th>'
        "<th>candidate</th><th>row</th><th>score</th><th>row median</th><th>cites a test</th>"
        f"<th>rationale</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _html_gates(view: _View) -> str:
    if not view.candidates:
        return ""
    cards = []
    for cand in sorted(
        view.candidates, key=lambda c: (str(c.get("seat", "")), _int(c.get("attempt")))
    ):
        name = str(cand.get("seat", ""))
        passed, total = _gates(cand)
        rows = "".join(
            f"<tr><td><code>{_h(gid)}</code></td><td>{_h(kind)}</td>"
            f'<td class="{_h(status, 20)}">{_h(status)}</td><td>{_h(obs)}</td>'
            f"<td>{_h(thr)}</td></tr>"
            for gid, kind, status, obs, thr in _gate_rows(cand)
        )
        table = (
            "<table><thead><tr><th>gate</th><th>kind</th><th>status</th><th>observed</th>"
            f"<th>threshold</th></tr></thead><tbody>{rows}</tbody></table>"
            if rows
            else ""
        )
        tamper = _tamper(cand)
        tamper_html = (
            "<p>Tamper findings: "
            + ", ".join(f"<code>{_h(t, _LINE)}</code>" for t in tamper[:_LIST_MAX])
            + "</p>"
            if tamper
            else ""
        )
        reasons, more = _capped(list(cand.get("reasons", [])), 5)
        reasons_html = "".join(
            f"<li><code>{_h(r.get('code', ''))}</code> "
            f'<span class="why">{_h(r.get("message", ""), _LINE * 2)}</span></li>'
            for r in reasons
        ) + (f"<li>… and {more} more</li>" if more else "")
        prov = cand.get("provenance") or {}
        cost = []
        if prov.get("tokens") is not None:
            cost.append(f"{_int(prov.get('tokens'))} tokens")
        if prov.get("cost_usd") is not None:
            cost.append(f"${_num(prov.get('cost_usd')):.4f}")
        cost.append(f"{_num(prov.get('seconds')):.1f} s")
        cards.append(
            f'<article class="candidate" data-seat="{_h(name, None)}">'
            f"<h3>{_h(name)} <small>attempt {_int(cand.get('attempt'))}</small> "
            f"{_kind_badge(view, name)}</h3>"
            f'<p class="meta">{_h(view.family(name))} · outcome {_h(cand.get("outcome", ""))} · '
            f"verdict {_h(cand.get('verdict') or '-')} · stage {_h(cand.get('stage', ''))} · "
            f"gates {passed}/{total} · {' · '.join(cost)}<br>branch "
            f"<code>{_h(cand.get('branch', ''), _SHORT)}</code>"
            + (
                f" · commit <code>{_h(_short_hash(cand.get('commit')))}</code>"
                if cand.get("commit")
                else ""
            )
            + "</p>"
            + table
            + tamper_html
            + (f'<ul class="plain">{reasons_html}</ul>' if reasons else "")
            + "</article>"
        )
    return (
        '<section id="gates"><h2>Gates per candidate</h2>'
        f'<div class="cards">{"".join(cards)}</div></section>'
    )


def _html_lessons(view: _View) -> str:
    lessons, more = _capped(view.lessons())
    if not lessons:
        return '<section id="lessons"><h2>Lessons</h2><p>None written.</p></section>'
    items = "".join(
        f"<li><strong>{_h(lesson.get('gate', ''))}</strong> ({_h(lesson.get('kind', ''))}): "
        f"{_h(lesson.get('rule', ''), _LINE)}"
        f'<div class="why">what: {_h(lesson.get("what", ""), _LINE)}\n'
        f"cause: {_h(lesson.get('cause', ''), _LINE)}\n"
        f"evidence: {_h(lesson.get('evidence', ''), _LINE)}</div></li>"
        for lesson in lessons
    ) + (f"<li>… and {more} more</li>" if more else "")
    return (
        f'<section id="lessons"><h2>Lessons ({len(view.lessons())})</h2>'
        f'<ul class="plain">{items}</ul></section>'
    )


def _html_footer(view: _View) -> str:
    ledger = view.ledger()
    decision = view.r.get("decision")
    decided = ""
    if decision:
        decided = (
            f"<p>Decision: <strong>{_h(decision.get('decision', ''))}</strong> "
            f"{_h(decision.get('seat', ''))} by {_h(decision.get('by', ''))} at "
            f"{_h(decision.get('at', ''))}: {_h(decision.get('reason', ''), _LINE)}</p>"
        )
    cert = "issued" if view.r.get("certificate") else "not issued"
    return (
        f'<footer id="ledger">{decided}<p>Ledger <code>{_h(ledger.get("path", ""))}</code>, '
        f"head seq {_int(ledger.get('head_seq'))} <code>{_h(ledger.get('head', ''), 64)}</code>"
        f" · certificate {cert}</p></footer>"
    )
