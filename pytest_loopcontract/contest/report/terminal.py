"""The contest report for a terminal: plain text, no escape sequence from any seat.

A terminal interprets control characters, so every string that came
from a seat goes through :func:`~.markup.plain_text` here, cut to a length; the facts come from
:class:`~.view.ReportView`, the same view the markdown and HTML pages read. Pure string building.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_loopcontract.contest.report import view as rv
from pytest_loopcontract.contest.report.markup import plain_text
from pytest_loopcontract.contest.report.view import Dissent, LessonFacts, ReportView, Result

__all__ = ["next_step", "render_terminal"]


def next_step(result: Result) -> str:
    """What happens next, in one line of plain text, e.g. ``waiting for a person: loop-contract
    gate rolling approve|reject|waive --by NAME``."""
    sentence, command = rv.next_action(ReportView(result))
    return plain_text(f"{sentence} {command}" if command else sentence, limit=rv.LONG)


def render_terminal(result: Result) -> str:
    """The run for a terminal: plain text, no escape sequences from any seat."""
    view = ReportView(result)
    lines = [*_header(view), "", "seats", *_seats(view)]
    lines += ["", *_matrix(view)]
    lines += ["", *_bracket(view)]
    lines += _escalations(view)
    lines += _dissents(view)
    lines += ["", *_lessons(view)]
    lines += ["", *_footer(view)]
    return "\n".join(lines) + "\n"


def _t(text: Any, limit: int | None = rv.SHORT) -> str:
    return plain_text(str(text), limit=limit)


def _columns(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _more(more: int) -> str:
    return f"  ... and {more} more"


def _header(view: ReportView) -> list[str]:
    result, contract = view.r, view.contract
    lines = [
        f"loop-contract contest {_t(contract.get('id', ''))}  run {_t(result.get('run_id', ''))}",
        f"status: {rv.STATUS_TEXT.get(view.status, _t(view.status)).upper()}  "
        f"attempts: {rv.whole(result.get('attempts'))}  "
        f"{_t(result.get('started', ''))} .. {_t(result.get('finished', ''))}",
    ]
    if contract.get("goal"):
        lines.append(f"goal: {_t(contract.get('goal'), rv.LINE)}")
    lines.append(
        f"contract: {_t(contract.get('path', ''))} ({_t(contract.get('mode', ''))} mode, "
        f"sha256 {rv.short_hash(contract.get('sha256'))})"
    )
    return lines


def _seats(view: ReportView) -> list[str]:
    table = [["SEAT", "FAMILY", "KIND", "OUTCOME", "VERDICT", "STAGE", "GATES", "NOTES"]]
    table += [_seat_row(view, name) for name in view.seat_names]
    lines = _columns(table)
    for name in view.seat_names:
        cand = view.latest.get(name)
        for item in (cand or {}).get("reasons", [])[:3]:
            lines.append(f"    {_t(name)}: {_t(rv.reason_text(item), rv.LINE)}")
    return lines


def _seat_row(view: ReportView, name: str) -> list[str]:
    cand = view.latest.get(name)
    if cand is None:
        return [_t(name), _t(view.family(name)), view.kind(name), "-", "-", "-", "-", ""]
    passed, total = rv.gate_counts(cand)
    notes = []
    if view.attempts_of.get(name, 0) > 1:
        notes.append(f"attempt {rv.whole(cand.get('attempt'))}")
    if rv.tamper_codes(cand):
        notes.append("tamper: " + _t(", ".join(rv.tamper_codes(cand)), rv.SHORT))
    if cand.get("same_tree_as"):
        notes.append("same tree as " + _t(", ".join(map(str, cand["same_tree_as"]))))
    return [
        _t(name),
        _t(view.family(name)),
        view.kind(name),
        _t(cand.get("outcome", "")),
        _t(cand.get("verdict") or "-"),
        _t(cand.get("stage", "")),
        f"{passed}/{total}",
        "; ".join(notes),
    ]


def _escalations(view: ReportView) -> list[str]:
    if not view.escalations():
        return []
    escalations = rv.listed(
        view.escalations(), lambda e: f"  - {_t(rv.reason_text(e), rv.LINE)}", _more
    )
    return ["", "escalations", *escalations]


def _dissents(view: ReportView) -> list[str]:
    dissents = view.dissents()
    if not dissents:
        return []
    return ["", "dissents", *rv.listed(dissents, _dissent_line, _more)]


def _dissent_line(d: Dissent) -> str:
    cites = ", cites a test" if d.cites_test else ""
    return (
        f"  - {_t(d.judge)} on {_t(d.candidate)}/{_t(d.row)}: {d.score:.1f} vs median "
        f"{d.row_median:.1f}{cites}: {_t(d.rationale, rv.LINE)}"
    )


def _lessons(view: ReportView) -> list[str]:
    lessons = view.lessons()
    return [f"lessons ({len(lessons)})", *rv.listed(lessons, _lesson_line, _more)]


def _lesson_line(lesson: LessonFacts) -> str:
    return f"  - {_t(lesson.gate)} ({_t(lesson.kind)}): {_t(lesson.rule, rv.LINE)}"


def _footer(view: ReportView) -> list[str]:
    ledger = view.ledger()
    probes = rv.probe_text(view.r.get("seats"))
    return [
        f"next: {next_step(view.r)}",
        f"ledger: {_t(ledger.get('path', ''))} head seq {rv.whole(ledger.get('head_seq'))} "
        f"{rv.short_hash(ledger.get('head'))}",
        f"certificate: {'present' if view.r.get('certificate') else 'none'}",
        f"spend: {_t(rv.spend_text(view.r.get('spend')), rv.LONG)}",
        *([f"probes: {_t(probes, rv.LONG)}"] if probes else []),
    ]


def _matrix(view: ReportView) -> list[str]:
    if view.matrix is None:
        return ["validity matrix: not run (no candidate reached it)"]
    judges = view.judges()
    rows = view.rows
    means = view.judge_means()
    lines = [
        f"validity matrix (min score {rv.num(view.matrix.get('min_score')):g}; "
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
                    "x" if view.same_family(j, label) else rv.score_text(means.get((label, j)))
                    for j in judges
                ),
                rv.score_text(view.overall(label)),
                *(rv.score_text(rv.num(medians[r]) if r in medians else None) for r in rows),
                ("PASS" if score.get("passed") else "FAIL")
                + (f" ({', '.join(flags)})" if flags else ""),
            ]
        )
    lines += _columns(table)
    lines.append("  (x: same family, does not judge; -: no score)")
    return lines + rv.listed(
        view.matrix_notes(),
        lambda n: f"  {_t(n.subject)}: {_t(n.text, rv.LINE)}",
        lambda more: f"  ... and {more} more notes",
    )


def _bracket(view: ReportView) -> list[str]:
    if view.bracket is None:
        return ["bracket: not run (no candidate passed the validity matrix)"]
    lines = ["bracket"]
    for rnd in view.rounds():
        out = ", ".join(_t(n) for n in rnd.get("eliminated", [])) or "none"
        extra = ""
        if rnd.get("cut_line") is not None:
            extra += f", cut line {rv.num(rnd.get('cut_line')):.2f}"
        if rnd.get("decided_by"):
            extra += f", decided by {_t(rnd.get('decided_by'))}"
        lines.append(
            f"  {rv.round_title(rnd)}: {len(rnd.get('field_in', []))} in, "
            f"{len(rnd.get('field_out', []))} out; eliminated: {out}{extra}; "
            f"{_t(rnd.get('reason', ''), rv.LINE)}"
        )
    lines.append(f"  finalists: {', '.join(_t(f) for f in view.finalists()) or 'none'}")
    if view.winner is not None:
        lines.append(
            f"  proposed winner: {_t(view.winner)} ({view.kind(view.winner)}), "
            f"overall {rv.score_text(view.overall(view.winner))}"
        )
    else:
        lines.append("  proposed winner: none")
    if view.bracket.get("reason"):
        lines.append(f"  {_t(view.bracket.get('reason'), rv.LINE)}")
    return lines
