"""The contest report as one self-contained HTML page.

The page is opened from an artifact, offline, by a person who trusts
it, so it carries inline CSS, no script and no external URL, under a Content-Security-Policy
that forbids loading anything; it stays inert even if an escape were missed. Every seat string
goes through :func:`~.markup.escape_html`; the facts come from :class:`~.view.ReportView`, the
same view the terminal and markdown pages read. :func:`write_html` is the one writer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.contest.report import view as rv
from pytest_loopcontract.contest.report.diffs import DIFF_CSS, diff_details
from pytest_loopcontract.contest.report.markup import escape_html
from pytest_loopcontract.contest.report.style import CSP, CSS
from pytest_loopcontract.contest.report.view import LessonFacts, ReportView, Result
from pytest_loopcontract.fsio import write_text_atomic

__all__ = ["REPORT_MODE", "render_html", "write_html"]

REPORT_MODE = 0o644


def _h(text: Any, limit: int | None = rv.SHORT) -> str:
    return escape_html(str(text), limit=limit)


def _heat(score: float) -> str:
    """Background colour of a matrix cell: red at 0, yellow at 5, green at 10."""
    hue = max(0.0, min(10.0, score)) * 12
    return f"hsl({hue:.0f} 70% 80%)"


def _kind_badge(view: ReportView, name: str) -> str:
    kind = view.kind(name)
    cls = "kind scripted" if kind == rv.SCRIPTED_LABEL else "kind"
    return f'<span class="{cls}">{kind}</span>'


def render_html(result: Result, diffs: Mapping[str, str | None] | None = None) -> str:
    """The run as one self-contained HTML page (no script, no external resource).

    ``diffs`` maps a candidate's tree to its diff against the base (None: unavailable); each
    card then shows it folded in a ``details.diff``. Stable hooks: ``id="winner"`` holds the
    proposed winner's name (or "none"); ``data-seat`` marks each seat's row and each
    candidate card; ``td.cell`` in ``table.heat`` is one matrix cell, with ``data-judge``,
    ``data-candidate``, ``data-row``.
    """
    view = ReportView(result)
    status = rv.STATUS_TEXT.get(view.status, view.status)
    title = f"loop-contract contest {view.contract.get('id', '')}: {status}"
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_h(title, 200)}</title>",
        f"<style>{CSS}{DIFF_CSS}</style>",
        "</head>",
        "<body>",
        _html_header(view),
        _html_decision(view),
        _html_seats(view),
        _html_escalations(view),
        _html_matrix(view),
        _html_bracket(view),
        _html_dissents(view),
        _html_gates(view, diffs or {}),
        _html_lessons(view),
        _html_footer(view),
        "</body>",
        "</html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def write_html(
    path: str | os.PathLike[str], result: Result, diffs: Mapping[str, str | None] | None = None
) -> None:
    """Render ``result`` with :func:`render_html` and write it atomically to ``path``,
    readable by everyone (0644: a report is for sharing, not a secret)."""
    write_text_atomic(path, render_html(result, diffs), mode=REPORT_MODE)


def _html_header(view: ReportView) -> str:
    r, c = view.r, view.contract
    status = rv.STATUS_TEXT.get(view.status, view.status)
    dod = "".join(
        f"<li><code>{_h(d.get('id', ''))}</code> {_h(d.get('text', ''), rv.LINE)}</li>"
        for d in c.get("dod", [])[: rv.LIST_MAX]
    )
    return (
        "<header>"
        f"<h1>loop-contract contest <code>{_h(c.get('id', ''))}</code></h1>"
        f'<span class="pill status-{_h(view.status, 40)}">{_h(status)}</span>'
        f'<p class="meta">run <code>{_h(r.get("run_id", ""))}</code> · '
        f"{_h(r.get('started', ''))} → {_h(r.get('finished', ''))} · attempts "
        f"{rv.whole(r.get('attempts'))} · contract <code>{_h(c.get('path', ''))}</code> "
        f"({_h(c.get('mode', ''))} mode, sha256 <code>{_h(rv.short_hash(c.get('sha256')))}</code>)"
        "</p>"
        + (f'<p class="goal">{_h(c.get("goal"), rv.LINE)}</p>' if c.get("goal") else "")
        + (f'<ul class="plain">{dod}</ul>' if dod else "")
        + "</header>"
    )


def _html_decision(view: ReportView) -> str:
    if view.winner is not None:
        winner = (
            f'Proposed winner: <strong id="winner">{_h(view.winner)}</strong> '
            f"{_kind_badge(view, view.winner)} · overall {rv.score_text(view.overall(view.winner))}"
        )
    else:
        winner = 'Proposed winner: <strong id="winner" class="none">none</strong>'
    sentence, command = rv.next_action(view)
    step = f"Next: {_h(sentence, rv.LONG)}"
    if command:
        step += f" <code>{_h(command, rv.LONG)}</code>"
    return f'<section id="decision"><p>{winner}</p><p>{step}</p></section>'


def _html_seats(view: ReportView) -> str:
    rows = []
    for name in view.seat_names:
        cand = view.latest.get(name) or {}
        passed, total = rv.gate_counts(cand)
        verdict = str(cand.get("verdict") or "-")
        cls = ' class="winner"' if name == view.winner else ""
        tamper = ", ".join(rv.tamper_codes(cand))
        rows.append(
            f'<tr data-seat="{_h(name, None)}"{cls}><td><strong>{_h(name)}</strong></td>'
            f"<td>{_h(view.family(name))}</td><td>{_kind_badge(view, name)}</td>"
            f"<td>{_h(cand.get('outcome', '-'))}</td>"
            f'<td class="{_h(verdict, 20)}">{_h(verdict)}</td>'
            f"<td>{_h(cand.get('stage', '-'))}</td>"
            f'<td class="num">{f"{passed}/{total}" if cand else "-"}</td>'
            f'<td class="num">{rv.score_text(view.overall(name))}</td>'
            f"<td>{_h(tamper, rv.LINE) if tamper else ''}</td></tr>"
        )
    return (
        '<section id="seats"><h2>Seats</h2><table><thead><tr><th>seat</th><th>family</th>'
        "<th>kind</th><th>outcome</th><th>verdict</th><th>stage</th><th>gates</th>"
        "<th>overall</th><th>tamper</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _html_escalations(view: ReportView) -> str:
    if not view.escalations():
        return ""
    lis = "".join(rv.listed(view.escalations(), lambda e: _reason_item(e, rv.LONG), _more_item))
    return f'<section id="escalations"><h2>Escalations</h2><ul class="plain">{lis}</ul></section>'


def _html_matrix(view: ReportView) -> str:
    if view.matrix is None:
        return (
            '<section id="matrix"><h2>Validity matrix</h2>'
            "<p>Not run: no candidate reached it.</p></section>"
        )
    judges = view.judges()
    head = "".join(f"<th>{_h(j)}<br><small>{_h(view.judge_family(j))}</small></th>" for j in judges)
    at, means = view.cell_at(), view.judge_means()
    body: list[str] = []
    for label in view.matrix_order():
        body += _matrix_rows(view, label, judges, at)
        overall = view.overall(label)
        mean_tds = "".join(
            '<td class="self">—</td>'
            if view.same_family(j, label)
            else f'<td class="num">{rv.score_text(means.get((label, j)))}</td>'
            for j in judges
        )
        body.append(
            f'<tr class="overall"><td>judge mean / overall</td>{mean_tds}'
            f'<td class="num"{_median_style(overall)}>{rv.score_text(overall)}</td></tr>'
        )
    legend = "".join(f'<span style="background:{_heat(float(s))}">{s}</span>' for s in range(0, 11))
    notes_html = "".join(
        rv.listed(
            view.matrix_notes(),
            lambda n: (
                f"<li><strong>{_h(n.subject)}</strong>: "
                f'<span class="why">{_h(n.text, rv.LINE)}</span></li>'
            ),
            _more_item,
        )
    )
    return (
        '<section id="matrix"><h2>Validity matrix</h2>'
        f'<p class="meta">Minimum score {rv.num(view.matrix.get("min_score")):g}. Each cell is one '
        "judge's score of one candidate on one row (hover for confidence, evidence and "
        "rationale); the last column is the weighted median, the last row of each candidate "
        "the judges' means and the overall score.</p>"
        f'<div class="legend">0 {legend} 10</div>'
        f'<table class="heat"><thead><tr><th>candidate</th><th>row</th>{head}'
        "<th>median</th></tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
        + (f'<ul class="plain">{notes_html}</ul>' if notes_html else "")
        + "</section>"
    )


def _matrix_rows(
    view: ReportView,
    label: str,
    judges: list[str],
    at: Mapping[tuple[str, str, str], Mapping[str, Any]],
) -> list[str]:
    """One candidate's rows of the heat table: a cell per judge, then the row's median."""
    score = view.scored[label]
    medians = score.get("row_medians") or {}
    rows = view.rows
    out: list[str] = []
    for i, row in enumerate(rows):
        tds = "".join(_matrix_cell(view, at.get((label, row, j)), j, label, row) for j in judges)
        median = rv.num(medians[row]) if row in medians else None
        first = _candidate_head(label, score, len(rows) + 1) if i == 0 else ""
        out.append(
            f"<tr>{first}<td>{_h(row)}</td>{tds}"
            f'<td class="num"{_median_style(median)}>{rv.score_text(median)}</td></tr>'
        )
    return out


def _candidate_head(label: str, score: Mapping[str, Any], span: int) -> str:
    verdict = "pass" if score.get("passed") else "fail"
    flags = [f for f in ("degraded", "escalations") if score.get(f)]
    return (
        f'<th rowspan="{span}" data-seat="{_h(label, None)}">{_h(label)}<br>'
        f'<span class="{verdict}">{verdict}</span>'
        + "".join(f"<br><small>{f}</small>" for f in flags)
        + "</th>"
    )


def _matrix_cell(
    view: ReportView, cell: Mapping[str, Any] | None, judge: str, label: str, row: str
) -> str:
    if cell is None:
        if view.same_family(judge, label):
            return '<td class="self" title="same family: does not judge">—</td>'
        return '<td class="none" title="no score">·</td>'
    value = rv.num(cell.get("score"))
    tip = (
        f"{judge} on {label}, {row}: {value:.1f} "
        f"(confidence {rv.num(cell.get('confidence')):.2f})\n"
        f"evidence: {cell.get('evidence', '')}\n"
        f"{cell.get('rationale', '')}"
    )
    return (
        f'<td class="cell" data-judge="{_h(judge, None)}" '
        f'data-candidate="{_h(label, None)}" data-row="{_h(row, None)}" '
        f'style="background:{_heat(value)}" title="{_h(tip, rv.TITLE)}">'
        f"{value:.1f}</td>"
    )


def _median_style(value: float | None) -> str:
    return "" if value is None else f' style="background:{_heat(value)}"'


def _html_bracket(view: ReportView) -> str:
    if view.bracket is None:
        return (
            '<section id="bracket"><h2>Bracket</h2>'
            "<p>Not run: no candidate passed the validity matrix.</p></section>"
        )

    def node(name: str, cls: str, extra: str = "") -> str:
        score = rv.score_text(view.overall(name))
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
            f'<div class="round"><h3>{rv.round_title(rnd)}</h3>'
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


def _html_dissents(view: ReportView) -> str:
    if not view.dissents():
        return ""
    rows = "".join(
        rv.listed(
            view.dissents(),
            lambda d: (
                f"<tr><td>{_h(d.judge)}</td><td>{_h(d.candidate)}</td><td>{_h(d.row)}</td>"
                f'<td class="num">{d.score:.1f}</td><td class="num">{d.row_median:.1f}</td>'
                f"<td>{'yes' if d.cites_test else 'no'}</td>"
                f'<td class="why">{_h(d.rationale, rv.LINE * 2)}</td></tr>'
            ),
            lambda more: f'<tr><td colspan="7">… and {more} more</td></tr>',
        )
    )
    return (
        '<section id="dissents"><h2>Dissents</h2><table><thead><tr><th>judge</th>'
        "<th>candidate</th><th>row</th><th>score</th><th>row median</th><th>cites a test</th>"
        f"<th>rationale</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _html_gates(view: ReportView, diffs: Mapping[str, str | None]) -> str:
    if not view.candidates:
        return ""
    cards = [
        _candidate_card(view, cand, diffs)
        for cand in sorted(
            view.candidates, key=lambda c: (str(c.get("seat", "")), rv.whole(c.get("attempt")))
        )
    ]
    return (
        '<section id="gates"><h2>Gates per candidate</h2>'
        f'<div class="cards">{"".join(cards)}</div></section>'
    )


def _candidate_card(
    view: ReportView, cand: Mapping[str, Any], diffs: Mapping[str, str | None]
) -> str:
    name = str(cand.get("seat", ""))
    passed, total = rv.gate_counts(cand)
    reasons_html = "".join(
        rv.listed(
            list(cand.get("reasons", [])),
            lambda r: _reason_item(r, rv.LINE * 2),
            _more_item,
            limit=5,
        )
    )
    return (
        f'<article class="candidate" data-seat="{_h(name, None)}">'
        f"<h3>{_h(name)} <small>attempt {rv.whole(cand.get('attempt'))}</small> "
        f"{_kind_badge(view, name)}</h3>"
        f'<p class="meta">{_h(view.family(name))} · outcome {_h(cand.get("outcome", ""))} · '
        f"verdict {_h(cand.get('verdict') or '-')} · stage {_h(cand.get('stage', ''))} · "
        f"gates {passed}/{total} · {' · '.join(_cost(cand))}<br>branch "
        f"<code>{_h(cand.get('branch', ''), rv.SHORT)}</code>"
        + (
            f" · commit <code>{_h(rv.short_hash(cand.get('commit')))}</code>"
            if cand.get("commit")
            else ""
        )
        + "</p>"
        + _gate_table(cand)
        + _tamper_line(cand)
        + (f'<ul class="plain">{reasons_html}</ul>' if reasons_html else "")
        + diff_details(str(cand.get("tree") or ""), diffs)
        + "</article>"
    )


def _gate_table(cand: Mapping[str, Any]) -> str:
    """The candidate's gates; the observed and threshold columns only when a measured gate
    is there to fill them (hard gates have neither)."""
    gates = rv.gate_rows(cand)
    measured = any(kind == "measured" for _, kind, _, _, _ in gates)
    rows = "".join(
        f"<tr><td><code>{_h(gid)}</code></td><td>{_h(kind)}</td>"
        f'<td class="{_h(status, 20)}">{_h(status)}</td>'
        + (f"<td>{_h(obs)}</td><td>{_h(thr)}</td>" if measured else "")
        + "</tr>"
        for gid, kind, status, obs, thr in gates
    )
    if not rows:
        return ""
    extra = "<th>observed</th><th>threshold</th>" if measured else ""
    return (
        f"<table><thead><tr><th>gate</th><th>kind</th><th>status</th>{extra}"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _tamper_line(cand: Mapping[str, Any]) -> str:
    tamper = rv.tamper_codes(cand)
    if not tamper:
        return ""
    return (
        "<p>Tamper findings: "
        + ", ".join(f"<code>{_h(t, rv.LINE)}</code>" for t in tamper[: rv.LIST_MAX])
        + "</p>"
    )


def _cost(cand: Mapping[str, Any]) -> list[str]:
    """What the candidate's run cost, as far as the seat reported it (nothing is estimated)."""
    prov = cand.get("provenance") or {}
    cost = []
    if prov.get("tokens") is not None:
        cost.append(f"{rv.whole(prov.get('tokens'))} tokens")
    if prov.get("cost_usd") is not None:
        cost.append(f"${rv.num(prov.get('cost_usd')):.4f}")
    cost.append(f"{rv.num(prov.get('seconds')):.1f} s")
    return cost


def _reason_item(reason: Mapping[str, Any], limit: int) -> str:
    """A reason (an escalation, why a candidate failed) as a list item: its code, then its
    message cut to ``limit``; the HTML counterpart of :func:`~.view.reason_text`."""
    return (
        f"<li><code>{_h(reason.get('code', ''))}</code> "
        f'<span class="why">{_h(reason.get("message", ""), limit)}</span></li>'
    )


def _more_item(more: int) -> str:
    return f"<li>… and {more} more</li>"


def _lesson_item(lesson: LessonFacts) -> str:
    return (
        f"<li><strong>{_h(lesson.gate)}</strong> ({_h(lesson.kind)}): {_h(lesson.rule, rv.LINE)}"
        f'<div class="why">what: {_h(lesson.what, rv.LINE)}\n'
        f"cause: {_h(lesson.cause, rv.LINE)}\n"
        f"evidence: {_h(lesson.evidence, rv.LINE)}</div></li>"
    )


def _html_lessons(view: ReportView) -> str:
    if not view.lessons():
        return '<section id="lessons"><h2>Lessons</h2><p>None written.</p></section>'
    items = "".join(rv.listed(view.lessons(), _lesson_item, _more_item))
    return (
        f'<section id="lessons"><h2>Lessons ({len(view.lessons())})</h2>'
        f'<ul class="plain">{items}</ul></section>'
    )


def _html_footer(view: ReportView) -> str:
    ledger = view.ledger()
    decision = view.r.get("decision")
    decided = ""
    if decision:
        decided = (
            f"<p>Decision: <strong>{_h(decision.get('decision', ''))}</strong> "
            f"{_h(decision.get('seat', ''))} by {_h(decision.get('by', ''))} at "
            f"{_h(decision.get('at', ''))}: {_h(decision.get('reason', ''), rv.LINE)}</p>"
        )
    cert = "issued" if view.r.get("certificate") else "not issued"
    return (
        f'<footer id="ledger">{decided}<p>Ledger <code>{_h(ledger.get("path", ""))}</code>, '
        f"head seq {rv.whole(ledger.get('head_seq'))} <code>{_h(ledger.get('head', ''), 64)}</code>"
        f" · certificate {cert}</p></footer>"
    )
