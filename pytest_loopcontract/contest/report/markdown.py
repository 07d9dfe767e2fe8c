"""The contest report as GitHub-flavoured markdown: a pull-request comment or a job summary.

Markdown on GitHub links mentions, references and URLs and renders
HTML, so every seat string goes through :mod:`.markup`'s markdown escapes here; and a comment
has a hard size limit, so the page is built as sections that drop (least useful first) until
it fits, ending with a note that says what was left out and where the full report is. The
facts come from :class:`~.view.ReportView`. Pure string building.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.contest.report import view as rv
from pytest_loopcontract.contest.report.markup import (
    code_block,
    code_span,
    escape_markdown_inline,
    mermaid_label,
)
from pytest_loopcontract.contest.report.view import Dissent, LessonFacts, ReportView, Result
from pytest_loopcontract.plural import plural

__all__ = ["MARKDOWN_MAX_CHARS", "render_markdown"]

MARKDOWN_MAX_CHARS = 60_000
"""Default size cap of the markdown: under GitHub's 65,536-character comment limit."""


def _m(text: Any, limit: int | None = rv.SHORT) -> str:
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
    sections = _markdown_sections(ReportView(result))
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


def _markdown_sections(view: ReportView) -> list[_Section]:
    sections = [_Section("status", _md_status(view), None)]
    if view.escalations():
        text = "**Escalations**\n\n" + "\n".join(
            rv.listed(view.escalations(), lambda e: f"- {_m(rv.reason_text(e), rv.LINE)}", _more)
        )
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


def _md_status(view: ReportView) -> str:
    r = view.r
    status = rv.STATUS_TEXT.get(view.status, view.status)
    head = f"### loop-contract contest {_m(view.contract.get('id', ''))}: {_m(status)}"
    facts = [f"**Status: {_m(status)}**"]
    if view.winner is not None:
        facts.append(f"proposed winner: **{_m(view.winner)}** ({view.kind(view.winner)})")
    else:
        facts.append("no proposed winner")
    facts.append(f"run {_m(r.get('run_id', ''))}")
    facts.append(f"attempts {rv.whole(r.get('attempts'))}")
    lines = [head, "", " · ".join(facts)]
    if view.contract.get("goal"):
        lines += ["", f"> {_m(view.contract.get('goal'), rv.LINE)}"]
    sentence, command = rv.next_action(view)
    step = f"**Next:** {_m(sentence, rv.LONG)}"
    if command:
        step += " " + code_span(command)
    lines += ["", step]
    return "\n".join(lines)


def _md_seats(view: ReportView) -> str:
    rows = []
    for name in view.seat_names:
        cand = view.latest.get(name) or {}
        passed, total = rv.gate_counts(cand)
        attempt = rv.whole(cand.get("attempt"))
        rows.append(
            [
                _m(name) + (" 🏆" if name == view.winner else ""),
                _m(view.family(name)),
                view.kind(name),
                _m(cand.get("outcome", "-")),
                _m(cand.get("verdict") or "-"),
                _m(cand.get("stage", "-")),
                f"{passed}/{total}" if cand else "-",
                rv.score_text(view.overall(name)),
                str(attempt) if cand else "-",
            ]
        )
    header = ["seat", "family", "kind", "outcome", "verdict", "stage", "gates", "overall", "att."]
    return "#### Seats\n\n" + _md_table(header, rows)


def _md_matrix(view: ReportView) -> str:
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
                    "—" if view.same_family(j, label) else rv.score_text(means.get((label, j)))
                    for j in judges
                ),
                f"**{rv.score_text(view.overall(label))}**",
                *(rv.score_text(rv.num(medians[r]) if r in medians else None) for r in rows),
                verdict,
            ]
        )
    text = (
        f"#### Validity matrix\n\nMinimum score {rv.num(view.matrix.get('min_score')):g}. A judge "
        "column is that judge's mean over the rows (— its own family: it does not judge); row "
        "columns are the weighted medians.\n\n" + _md_table(header, body)
    )
    notes = rv.listed(
        view.matrix_notes(), lambda n: f"- {_m(n.subject)}: {_m(n.text, rv.LINE)}", _more
    )
    if notes:
        text += "\n\n" + "\n".join(notes)
    return text


def _mermaid(view: ReportView) -> str:
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
        title = f"{rv.round_title(rnd)}: {rnd.get('reason', '')}"
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


def _md_bracket(view: ReportView) -> str:
    if view.bracket is None:
        return "#### Bracket\n\nNot run: no candidate passed the validity matrix."
    text = "#### Bracket\n\n" + code_block(_mermaid(view), lang="mermaid", limit=None)
    finalists = ", ".join(_m(f) for f in view.finalists()) or "none"
    text += f"\n\nFinalists: {finalists}."
    if view.bracket.get("reason"):
        text += f" {_m(view.bracket.get('reason'), rv.LINE)}"
    return text


def _md_dissents(view: ReportView) -> str:
    dissents = view.dissents()
    if not dissents:
        return ""
    return "\n".join(["#### Dissents", "", *rv.listed(dissents, _dissent_item, _more)])


def _dissent_item(d: Dissent) -> str:
    cites = " (cites a test)" if d.cites_test else ""
    return (
        f"- {_m(d.judge)} on {_m(d.candidate)}, {_m(d.row)}: {d.score:.1f} against a median of "
        f"{d.row_median:.1f}{cites}: {_m(d.rationale, rv.LINE)}"
    )


def _md_lessons(view: ReportView) -> str:
    lessons = view.lessons()
    if not lessons:
        return ""
    return "\n".join(
        [f"#### Lessons ({len(lessons)})", "", *rv.listed(lessons, _lesson_item, _more)]
    )


def _lesson_item(lesson: LessonFacts) -> str:
    return (
        f"- **{_m(lesson.gate)}** ({_m(lesson.kind)}): {_m(lesson.rule, rv.LINE)}  \n"
        f"  what: {_m(lesson.what, rv.LINE)}; cause: {_m(lesson.cause, rv.LINE)}"
    )


def _more(more: int) -> str:
    return f"- … and {more} more"


def _md_gates(view: ReportView) -> str:
    if not view.candidates:
        return ""
    parts = ["#### Gates per candidate"]
    for cand in sorted(
        view.candidates, key=lambda c: (str(c.get("seat", "")), rv.whole(c.get("attempt")))
    ):
        name = str(cand.get("seat", ""))
        passed, total = rv.gate_counts(cand)
        head = (
            f"**{_m(name)}**, attempt {rv.whole(cand.get('attempt'))} · {_m(view.family(name))} · "
            f"{view.kind(name)} · outcome {_m(cand.get('outcome', ''))} · verdict "
            f"{_m(cand.get('verdict') or '-')} · stage {_m(cand.get('stage', ''))} · "
            f"gates {passed}/{total}"
        )
        where = f"branch {_m(cand.get('branch', ''), rv.SHORT)}"
        if cand.get("commit"):
            where += f" · commit {_m(rv.short_hash(cand.get('commit')))}"
        text = head + "  \n" + where
        rows = [[_m(c) for c in row] for row in rv.gate_rows(cand)]
        if rows:
            text += "\n\n" + _md_table(["gate", "kind", "status", "observed", "threshold"], rows)
        tamper = rv.tamper_codes(cand)
        if tamper:
            text += "\n\nTamper findings: " + ", ".join(_m(t) for t in tamper[: rv.LIST_MAX])
        reasons = rv.listed(
            list(cand.get("reasons", [])),
            lambda r: f"- {_m(rv.reason_text(r), rv.LINE)}",
            _more,
            limit=5,
        )
        if reasons:
            text += "\n\n" + "\n".join(reasons)
        parts.append(text)
    return "\n\n".join(parts)


def _md_rationales(view: ReportView) -> str:
    cells = view.cells()
    if not cells:
        return ""
    rows = [
        [
            _m(c.get("judge", "")),
            _m(c.get("candidate", "")),
            _m(c.get("row", "")),
            f"{rv.num(c.get('score')):.1f}",
            f"{rv.num(c.get('confidence')):.2f}",
            _m(c.get("evidence", ""), 120),
            _m(c.get("rationale", ""), rv.LINE),
        ]
        for c in sorted(
            cells, key=lambda c: (str(c.get("candidate")), str(c.get("row")), str(c.get("judge")))
        )
    ]
    table = _md_table(
        ["judge", "candidate", "row", "score", "confidence", "evidence", "rationale"], rows
    )
    return (
        f"<details><summary>Judges' rationales ({plural(len(cells), 'cell')})</summary>\n\n"
        f"{table}\n\n</details>"
    )


def _md_footer(view: ReportView) -> str:
    ledger = view.ledger()
    cert = "issued" if view.r.get("certificate") else "not issued"
    contract_sha = rv.short_hash(view.contract.get("sha256"))
    return (
        f"<sub>Ledger {_m(ledger.get('path', ''))}, head seq {rv.whole(ledger.get('head_seq'))} "
        f"{_m(rv.short_hash(ledger.get('head')))} · certificate {cert} · contract "
        f"{_m(view.contract.get('path', ''))} sha256 {_m(contract_sha)}"
        "</sub>"
    )
