"""The contest reports: the result schema, escaping, and the terminal, markdown and HTML pages."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pytest_loopcontract.contest.report import markup
from pytest_loopcontract.contest.report.html import render_html, write_html
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.markup import (
    code_block,
    code_span,
    escape_html,
    escape_markdown_inline,
    mermaid_label,
    plain_text,
    truncate,
)
from pytest_loopcontract.contest.report.schema import validate_result
from pytest_loopcontract.contest.report.terminal import next_step, render_terminal
from pytest_loopcontract.contest.report.view import SCRIPTED_LABEL
from testing.contest_fixtures import (
    HOSTILE,
    HOSTILE_SEAT,
    crowd_result,
    decided_result,
    hostile_result,
    no_winner_result,
    sample_result,
)

BUILDERS: list[Callable[[], dict[str, Any]]] = [
    sample_result,
    no_winner_result,
    decided_result,
    crowd_result,
    hostile_result,
]
RENDERERS = [render_terminal, render_markdown, render_html]


def seat_names(result: dict[str, Any]) -> list[str]:
    return [s["name"] for s in result["seats"]]


# ---------------------------------------------------------------------------------------------
# schema


def test_schema_is_valid_draft_2020_12_and_ships_in_the_package() -> None:
    text = (
        resources.files("pytest_loopcontract")
        .joinpath("schemas/contest_result.schema.json")
        .read_text("utf-8")
    )
    schema = json.loads(text)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_fixtures_are_valid(build: Callable[[], dict[str, Any]]) -> None:
    assert validate_result(build()) == []


def test_fixture_shapes() -> None:
    doc = sample_result()
    assert [s["family"] for s in doc["seats"]] == ["acme", "globex", "initech"]
    assert all(s["scripted"] for s in doc["seats"])
    matrix = doc["matrix"]
    # Each judge scores the two other-family candidates on four rows.
    assert len(matrix["cells"]) == 3 * 2 * 4
    assert all(c["family"] != _family(doc, c["candidate"]) for c in matrix["cells"])
    assert [r["number"] for r in doc["bracket"]["rounds"]] == [0, 1]
    assert doc["winner"] == doc["bracket"]["proposed_winner"] == "alpha"
    assert len(doc["lessons"]) == 1
    assert sample_result(status="escalated")["status"] == "escalated"
    with pytest.raises(KeyError):
        sample_result(winer="beta")

    none = no_winner_result()
    assert none["winner"] is None and none["matrix"] is None and none["bracket"] is None
    assert all(c["verdict"] == "fail" and c["stage"] == "measured" for c in none["candidates"])
    assert none["lessons"]

    hostile = hostile_result()
    assert HOSTILE_SEAT in seat_names(hostile)
    assert max(len(c["rationale"]) for c in hostile["matrix"]["cells"]) > 100_000


def _family(doc: dict[str, Any], seat: str) -> str:
    return next(s["family"] for s in doc["seats"] if s["name"] == seat)


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split("/")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("winer", "alpha"),  # a typo of a top-level key
        ("contract/gaol", "x"),
        ("candidates/0/verdikt", "pass"),
        ("candidates/0/provenance/token", 3),
        ("candidates/0/gates/tamperr", []),
        ("matrix/cells/0/scroe", 7),
        ("matrix/judges/0/notes", ""),
        ("matrix/candidates/alpha/dissent", []),
        ("bracket/rounds/0/field", []),
        ("bracket/winner", "alpha"),
        ("lessons/0/rules", "x"),
        ("ledger/head_sequence", 1),
        ("seats/0/scripted_", True),
    ],
)
def test_schema_rejects_unknown_keys(path: str, value: Any) -> None:
    errors = validate_result(_set(sample_result(), path, value))
    assert errors and any("Additional properties" in e for e in errors), errors


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("schema_version", 2),
        ("status", "awaiting"),
        ("contract/mode", "fixx"),
        ("contract/sha256", "abc"),
        ("run_id", "has space"),
        ("started", "yesterday"),
        ("attempts", -1),
        ("candidates/0/outcome", "okay"),
        ("candidates/0/stage", "final"),
        ("candidates/0/verdict", "passed"),
        ("candidates/0/commit", "not-a-sha"),
        ("candidates/0/provenance/tokens", -5),
        ("candidates/0/provenance/tokens", 1.5),
        ("candidates/0/gates/hard/0/status", "ok"),
        ("candidates/0/reasons", [{"code": "Bad Code", "message": ""}]),
        ("matrix/cells/0/score", 11),
        ("matrix/cells/0/confidence", 1.5),
        ("matrix/judges/0/status", "fine"),
        ("bracket/rounds/1/decided_by", "coin"),
        ("decision", {"decision": "approved", "by": "ada", "reason": "", "at": "", "seat": "x"}),
        ("ledger/head", "xyz"),
        ("seats/0/name", "line\nbreak"),
        ("seats/0/scripted", "yes"),
        ("certificate", ""),
    ],
)
def test_schema_rejects_bad_values(path: str, value: Any) -> None:
    assert validate_result(_set(sample_result(), path, value))


@pytest.mark.parametrize(
    "key",
    ["matrix", "bracket", "winner", "decision", "certificate"],
)
def test_nullable_fields_accept_null(key: str) -> None:
    assert validate_result(sample_result(**{key: None})) == []


def test_required_keys_are_required() -> None:
    doc = sample_result()
    del doc["ledger"]
    del doc["candidates"][0]["same_tree_as"]
    errors = validate_result(doc)
    assert any("'ledger' is a required property" in e for e in errors)
    assert any(e.startswith("candidates/0") and "same_tree_as" in e for e in errors)


def test_names_must_point_at_seats() -> None:
    doc = sample_result(winner="omega")
    doc["matrix"]["cells"][0]["candidate"] = "nobody"
    doc["bracket"]["rounds"][1]["eliminated"] = ["ghost"]
    doc["seats"].append(copy.deepcopy(doc["seats"][0]))
    errors = validate_result(doc)
    assert "winner: 'omega' is not a seat of this run" in errors
    assert "matrix/cells/0/candidate: 'nobody' is not a seat of this run" in errors
    assert "bracket/rounds/1/eliminated/0: 'ghost' is not a seat of this run" in errors
    assert "seats: 'alpha' is listed twice" in errors


# ---------------------------------------------------------------------------------------------
# markup


def test_escape_html() -> None:
    assert escape_html('<a href="x">&</a>') == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
    assert escape_html("it's") == "it&#x27;s"
    assert escape_html("a\x1b[31mb\u202ec") == "a\ufffd[31mbc"
    assert escape_html("x" * 50, limit=10) == "x" * 9 + "…"
    assert escape_html("two\nlines") == "two\nlines"


def test_markdown_inline_is_inert() -> None:
    text = escape_markdown_inline(HOSTILE)
    for bad in ("<", ">", "@octocat", "#1", "GH-2", "https://", "\n", "\x1b", "\u202e"):
        assert bad not in text
    assert "&lt;script&gt;" in text
    assert "\\|" in text and not re.search(r"(?<!\\)\|", text)
    assert "\\`" in text and not re.search(r"(?<!\\)`", text)
    assert "\\[link\\]" in text
    assert escape_markdown_inline("a\r\n\n  b\tc") == "a b c"
    assert escape_markdown_inline("mail me@example.com") == "mail me@\u200dexample\\.com"


def test_markdown_inline_truncates_before_escaping() -> None:
    text = escape_markdown_inline("<" * 1000, limit=10)
    assert text == "&lt;" * 9 + "…"
    assert escape_markdown_inline("short", limit=10) == "short"


def test_truncate() -> None:
    assert truncate("abcdef", 4) == "abc…"
    assert truncate("abc", 3) == "abc"
    assert truncate("abc", None) == "abc"
    assert truncate("abc", 0) == ""
    assert len(truncate("x" * 100_000, 300)) == 300


def test_code_block_fence_outruns_backticks() -> None:
    block = code_block("before\n```\ninside ```` four\nafter")
    fence = block.split("\n", 1)[0]
    assert fence == "`" * 5
    assert block.endswith("\n" + fence)
    body = block.split("\n")[1:-1]
    assert body == ["before", "```", "inside ```` four", "after"]
    assert code_block("x", lang="text").startswith("```text\n")
    with pytest.raises(ValueError):
        code_block("x", lang="js\n<script>")


def test_code_block_breaks_comments_tags_and_mentions() -> None:
    block = code_block(HOSTILE)
    for bad in ("<!--", "<script", "<img", "@octocat", "#1", "\x1b"):
        assert bad not in block
    assert "alert(1)" in block  # the text itself is kept, only made inert
    assert "a --> b" in code_block("a --> b")  # arrows (mermaid) survive
    long = code_block("y" * 10_000, limit=100)
    assert len(long) < 200 and "…" in long


def test_code_span() -> None:
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("a|b", in_table=True) == "`a\\|b`"
    assert code_span("a|b") == "`a|b`"
    span = code_span("<!-- m --> @octocat #1\nnext")
    assert "<!--" not in span and "@octocat" not in span and "#1" not in span
    assert "\n" not in span


def test_mermaid_label() -> None:
    label = mermaid_label('a "quoted" [b] <c> #d; `e` @f {g} |h| (i) & j % k')
    bare = re.sub(r"#[a-z]+;", "", label)
    assert not set(bare) & set('"[]<>#;`@{}|()&%')
    assert label.startswith("a #quot;quoted#quot; #lsqb;b#rsqb; #lt;c#gt; #num;d#semi;")
    assert mermaid_label("line\nbreak") == "line break"
    assert mermaid_label("x" * 200, limit=20).endswith("…")
    assert mermaid_label("héllo wörld ★") == "héllo wörld ★"


def test_plain_text() -> None:
    assert plain_text("red \x1b[31mtext\x07\x9b") == "red \ufffd[31mtext\ufffd\ufffd"
    assert plain_text("a\u202eb\u2066c\u200bd") == "abcd"
    assert plain_text("one\ntwo") == "one two"
    assert plain_text("one\r\ntwo", keep_newlines=True) == "one\ntwo"


@given(st.text())
def test_markdown_inline_property(text: str) -> None:
    out = escape_markdown_inline(text)
    assert "\n" not in out and "\r" not in out
    assert "<" not in out and ">" not in out
    assert not re.search(r"(?<!\\)[|`*_\[\]]", out.replace("\\\\", ""))
    assert not re.search(r"@[A-Za-z0-9_]", out)
    assert not re.search(r"#[0-9]", out)


@given(st.text())
def test_code_block_property(text: str) -> None:
    block = code_block(text, limit=None)
    lines = block.split("\n")
    fence = lines[0]
    assert set(fence) == {"`"} and len(fence) >= 3
    assert lines[-1] == fence
    # No line inside can close the block: no backtick run as long as the fence.
    assert all(
        len(fence) > max(map(len, re.findall("`+", line)), default=0) for line in lines[1:-1]
    )
    assert "<!--" not in block


@given(st.text())
def test_mermaid_label_property(text: str) -> None:
    label = mermaid_label(text)
    bare = re.sub(r"#[a-z]+;", "", label)
    assert not set(bare) & set('"[]<>#;`\n\r')


def test_markup_exports() -> None:
    assert set(markup.__all__) >= {
        "escape_html",
        "escape_markdown_inline",
        "code_block",
        "code_span",
        "mermaid_label",
        "plain_text",
    }


# ---------------------------------------------------------------------------------------------
# all formats


@pytest.mark.parametrize("render", RENDERERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_every_format_names_every_seat_and_says_scripted(
    render: Callable[[dict[str, Any]], str], build: Callable[[], dict[str, Any]]
) -> None:
    doc = build()
    out = render(doc)
    if render is render_markdown:
        names = [escape_markdown_inline(n) for n in seat_names(doc)]
    elif render is render_html:
        names = [escape_html(n) for n in seat_names(doc)]
    else:
        names = seat_names(doc)
    for name in names:
        assert name in out
    scripted = [s for s in doc["seats"] if s["scripted"]]
    assert SCRIPTED_LABEL in out
    assert out.count(SCRIPTED_LABEL) >= len(scripted)


def test_an_unscripted_seat_is_not_called_scripted() -> None:
    doc = sample_result()
    for seat in doc["seats"]:
        seat["scripted"] = False
    for render in RENDERERS:
        assert SCRIPTED_LABEL not in render(doc)  # type: ignore[operator]


def test_every_page_shows_a_lesson_from_the_same_facts() -> None:
    """The pages read a lesson through one view: each shows its gate, kind and rule; the
    markdown adds what and cause, the HTML also the evidence; a missing field shows empty."""
    lesson = {"gate": "Ggate", "kind": "Kkind", "rule": "Rrule", "what": "Wwhat"}
    lesson |= {"cause": "Ccause", "evidence": "Eevidence"}
    doc = sample_result(lessons=[lesson, {"gate": "bare"}])
    assert "  - Ggate (Kkind): Rrule\n  - bare (): \n" in render_terminal(doc)
    md = render_markdown(doc)
    assert "- **Ggate** (Kkind): Rrule  \n  what: Wwhat; cause: Ccause\n" in md
    assert "Eevidence" not in md  # a comment has no room for it
    assert "- **bare** (): " in md
    page = render_html(doc)
    assert "<li><strong>Ggate</strong> (Kkind): Rrule" in page
    assert "what: Wwhat\ncause: Ccause\nevidence: Eevidence</div></li>" in page


# ---------------------------------------------------------------------------------------------
# terminal


def test_terminal_report() -> None:
    out = render_terminal(sample_result())
    assert out.startswith("loop-contract contest rolling  run 20261129T213000Z-ab12cd\n")
    assert "status: AWAITING A PERSON" in out
    seat_lines = [line for line in out.splitlines() if line.startswith("  alpha ")]
    assert seat_lines and "scripted, not a model" in seat_lines[0]
    assert "winner" in seat_lines[0] and "4/4" in seat_lines[0]
    assert "attempt 2" in out  # beta needed two
    assert re.search(r"^  alpha\s+x\s+8\.2\s+8\.7\s+8\.4\s", out, re.M)  # matrix row
    assert "round 1: 3 in, 2 out; eliminated: beta" in out
    assert "proposed winner: alpha (scripted, not a model), overall 8.4" in out
    assert (
        "next: waiting for a person: loop-contract gate rolling approve|reject|waive --by NAME"
        in out
    )
    assert "lessons (1)" in out
    assert "ledger: .loop-contract/ledger.sqlite head seq 42" in out
    assert "certificate: none" in out


def test_terminal_no_winner_and_decided() -> None:
    out = render_terminal(no_winner_result())
    assert "status: NO WINNER" in out
    assert "proposed winner" not in out or "proposed winner: none" in out
    assert "validity matrix: not run" in out and "bracket: not run" in out
    assert "coverage 60.0 % < 90 %" in out
    assert "loop-contract contest run" in out
    decided = render_terminal(decided_result())
    assert "decided: approve alpha by ada at 2026-11-29T22:02:00Z" in decided
    assert "certificate: present" in decided


def test_terminal_hostile_text_cannot_drive_the_terminal() -> None:
    out = render_terminal(hostile_result())
    assert "\x1b" not in out and "\u202e" not in out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert max(len(line) for line in out.splitlines()) < 2000


def test_next_step() -> None:
    assert (
        next_step(sample_result())
        == "waiting for a person: loop-contract gate rolling approve|reject|waive --by NAME"
    )
    assert next_step(sample_result(status="escalated")).endswith("--by NAME")
    assert next_step(no_winner_result()).endswith("start again with: loop-contract contest run")
    assert next_step(sample_result(status="stopped")).startswith("the run stopped")
    assert next_step(decided_result()).startswith("decided: approve alpha by ada")


# ---------------------------------------------------------------------------------------------
# markdown

OUR_TAGS = {"details", "/details", "summary", "/summary", "sub", "/sub"}


def tables(md: str) -> list[list[str]]:
    """Consecutive lines starting with a pipe, outside code blocks."""
    found: list[list[str]] = []
    current: list[str] = []
    fence: str | None = None
    for line in md.split("\n"):
        opener = re.match(r"(`{3,})", line)
        if fence is None and opener:
            fence = opener.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None and line.startswith("|"):
            current.append(line)
            continue
        if current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found


def cell_count(line: str) -> int:
    assert line.startswith("| ") or line.startswith("|-"), line
    assert line.endswith("|"), line
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def assert_tables_well_formed(md: str) -> int:
    found = tables(md)
    for table in found:
        width = cell_count(table[0])
        assert re.fullmatch(r"\|(---\|)+", table[1]), table[1]
        assert all(cell_count(line) == width for line in table), table
    return len(found)


def test_markdown_report() -> None:
    md = render_markdown(sample_result())
    assert md.startswith("### loop-contract contest rolling: awaiting a person\n")
    assert "proposed winner: **alpha** (scripted, not a model)" in md
    assert "`loop-contract gate rolling approve|reject|waive --by NAME`" in md
    # seats, matrix, one gates table per candidate (4 attempts), rationales
    assert assert_tables_well_formed(md) == 2 + 4 + 1
    assert "| alpha | — | 8.2 | 8.7 | **8.4** |" in md
    assert "#### Lessons (1)" in md
    assert "Shortened" not in md


def test_markdown_bracket_is_a_mermaid_flowchart() -> None:
    md = render_markdown(sample_result())
    block = re.search(r"```mermaid\n(.*?)\n```", md, re.S)
    assert block
    chart = block.group(1)
    assert chart.startswith("flowchart LR\n")
    assert chart.count("subgraph") == 3  # screen, round 1, final
    assert chart.count("end") >= 3
    assert '["★ alpha 8.4 - proposed winner"]' in chart
    assert re.search(r"^  class f0 win$", chart, re.M)
    # beta is out in round 1: its round-1 node is styled as eliminated
    beta = re.search(r'^    (r1n\d)\["beta ', chart, re.M)
    assert beta and re.search(rf"^  class {beta.group(1)} out$", chart, re.M)
    assert "r1n0 --> f0" in chart


def test_markdown_no_winner() -> None:
    md = render_markdown(no_winner_result())
    assert "**Status: no winner**" in md and "no proposed winner" in md
    assert "```mermaid" not in md
    assert "Not run: no candidate reached it." in md
    assert "#### Lessons (1)" in md
    assert "`loop-contract contest run`" in md
    assert_tables_well_formed(md)


def test_markdown_hostile_strings_are_inert() -> None:
    md = render_markdown(hostile_result())
    assert "<!--" not in md
    assert "<script" not in md.lower() and "<img" not in md.lower()
    assert "@octocat" not in md
    assert "#1" not in md and not re.search(r"#\d", md)
    assert "GH-2" not in md
    assert "https://" not in md
    assert "\x1b" not in md and "\u202e" not in md
    tags = {t.lower() for t in re.findall(r"<(/?[A-Za-z][A-Za-z0-9]*)", md)}
    assert tags <= OUR_TAGS, tags
    assert_tables_well_formed(md)
    # one mermaid block, and nothing closes it early
    assert md.count("```mermaid") == 1
    assert len(md) < 60_000  # 100 KB rationales were cut


def test_markdown_parses_as_intended() -> None:
    """A real CommonMark parser (markdown-it, with GFM tables): every table has the header's
    width, and the only raw HTML is the report's own."""
    parser = MarkdownIt("commonmark").enable("table")
    for doc in (sample_result(), hostile_result(), no_winner_result()):
        md = render_markdown(doc)
        tokens = parser.parse(md)
        html_bits = [t.content for t in tokens if t.type == "html_block"]
        for t in tokens:
            for child in t.children or []:
                if child.type == "html_inline":
                    html_bits.append(child.content)
        for bit in html_bits:
            tags = {x.lower() for x in re.findall(r"<(/?[A-Za-z][A-Za-z0-9]*)", bit)}
            assert tags <= OUR_TAGS, bit[:200]
        widths: list[int] = []
        for t in tokens:
            if t.type == "tr_open":
                widths.append(0)
            elif t.type in ("th_open", "td_open"):
                widths[-1] += 1
            elif t.type == "table_close":
                assert len(set(widths)) == 1, widths
                widths = []
        assert sum(1 for t in tokens if t.type == "table_open") == len(tables(md))
        fences = [t for t in tokens if t.type == "fence"]
        assert [f.info for f in fences] == (["mermaid"] if doc["bracket"] else [])


def test_markdown_size_limit_drops_details_and_points_to_the_summary() -> None:
    doc = sample_result()
    full = render_markdown(doc)
    pointer = "Full report in the job summary."
    for limit in (len(full) - 1, 3000, 1500, 700, 200, 40):
        md = render_markdown(doc, max_chars=limit, summary_pointer=pointer)
        assert len(md) <= limit
        if limit >= 700:
            assert md.endswith(pointer + "\n")
            assert "Shortened to fit a comment: left out" in md
            assert md.startswith("### loop-contract contest rolling")
            assert "approve|reject|waive" in md
            assert_tables_well_formed(md)
            assert md.count("```") % 2 == 0
    # The least useful detail goes first.
    md = render_markdown(doc, max_chars=len(full) - 1, summary_pointer=pointer)
    assert "left out the judges' rationales." in md
    assert "#### Gates per candidate" in md


def test_markdown_default_limit_with_a_crowd() -> None:
    doc = crowd_result(40)
    md = render_markdown(doc, summary_pointer="Full report in the job summary.")
    assert len(md) <= 60_000
    assert md.rstrip().endswith("Full report in the job summary.")
    assert "seat" in md and doc["winner"] in md


def test_markdown_hostile_seat_name_cannot_break_the_chart() -> None:
    md = render_markdown(hostile_result())
    chart = re.search(r"```mermaid\n(.*?)\n```", md, re.S)
    assert chart
    for line in chart.group(1).split("\n"):
        label = re.search(r'\["(.*)"\]$', line)
        if label:
            assert '"' not in label.group(1)
            assert not set(re.sub(r"#[a-z]+;", "", label.group(1))) & set("[]<>#;`@|")


# ---------------------------------------------------------------------------------------------
# HTML


class Page(HTMLParser):
    """Every start tag with its attributes, the text inside each element with an id, and the
    contents of <style>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.by_id: dict[str, str] = {}
        self._open_ids: list[tuple[str, str, int]] = []
        self.style = ""
        self._in_style = False
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        self._in_style = tag == "style"
        if "id" in attributes:
            self._open_ids.append((attributes["id"], tag, len(self.text)))

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False
        if self._open_ids and self._open_ids[-1][1] == tag:
            ident, _, start = self._open_ids.pop()
            self.by_id[ident] = self.text[start:]

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
        self.text += data


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "span",
    "strong", "small", "code", "ul", "li", "section", "table", "thead", "tbody", "tr", "th",
    "td", "div", "article", "footer", "br",
}  # fmt: skip


def assert_self_contained(page: str) -> Page:
    parsed = parse(page)
    assert page.startswith("<!doctype html>")
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            assert name not in {"src", "href", "srcset", "action", "formaction", "xlink:href"}
            assert not name.startswith("on"), (tag, name)
            if name == "style":
                assert "url(" not in value
    assert "url(" not in parsed.style and "@import" not in parsed.style
    csp = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "default-src 'none'" in csp[0]["content"]
    return parsed


def test_html_report_is_self_contained() -> None:
    page = render_html(sample_result())
    assert_self_contained(page)
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page


def test_html_hooks() -> None:
    doc = sample_result()
    parsed = parse(render_html(doc))
    assert parsed.by_id["winner"] == "alpha"
    seats = {a["data-seat"] for t, a in parsed.tags if "data-seat" in a}
    assert seats == set(seat_names(doc))
    rows = [a["data-seat"] for t, a in parsed.tags if t == "tr" and "data-seat" in a]
    assert rows == seat_names(doc)
    assert parse(render_html(no_winner_result())).by_id["winner"] == "none"


def test_html_heat_map_has_one_cell_per_matrix_cell() -> None:
    doc = sample_result()
    parsed = parse(render_html(doc))
    cells = [a for t, a in parsed.tags if t == "td" and a.get("class") == "cell"]
    assert len(cells) == len(doc["matrix"]["cells"])
    assert {(a["data-judge"], a["data-candidate"], a["data-row"]) for a in cells} == {
        (c["judge"], c["candidate"], c["row"]) for c in doc["matrix"]["cells"]
    }
    by_key = {(c["judge"], c["candidate"], c["row"]): c for c in doc["matrix"]["cells"]}
    for a in cells:
        cell = by_key[(a["data-judge"], a["data-candidate"], a["data-row"])]
        assert f"confidence {cell['confidence']:.2f}" in a["title"]
        assert cell["rationale"] in a["title"]
        assert a["style"].startswith("background:hsl(")
    # red for low scores, green for high ones
    low = sample_result()
    low["matrix"]["cells"][0]["score"] = 0.0
    low["matrix"]["cells"][1]["score"] = 10.0
    page = render_html(low)
    assert "hsl(0 70% 80%)" in page and "hsl(120 70% 80%)" in page


def test_html_bracket_diagram() -> None:
    parsed = parse(render_html(sample_result()))
    nodes = [(a["class"], a["data-candidate"]) for t, a in parsed.tags if "data-candidate" in a]
    nodes = [(cls, name) for cls, name in nodes if cls.startswith("node")]
    assert nodes == [
        ("node", "alpha"),
        ("node", "gamma"),
        ("node", "beta"),
        ("node", "alpha"),
        ("node", "gamma"),
        ("node out", "beta"),
        ("node win", "alpha"),
        ("node", "gamma"),
    ]


def test_html_hostile_strings_are_escaped() -> None:
    doc = hostile_result()
    page = render_html(doc)
    parsed = assert_self_contained(page)
    assert "<script" not in page.lower() and "<img" not in page.lower() and "<!--" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\u202e" not in page
    assert HOSTILE_SEAT in {a.get("data-seat") for _, a in parsed.tags}
    assert "<script>alert(1)</script>" in parsed.text  # shown as text, never as markup
    assert len(page) < 200_000  # 100 KB rationales were cut


def test_html_no_winner_and_decided() -> None:
    page = render_html(no_winner_result())
    assert "Not run: no candidate reached it." in page
    assert "Not run: no candidate passed the validity matrix." in page
    assert "loop-contract contest run" in page
    decided = render_html(decided_result())
    assert "Decision: <strong>approve</strong> alpha by ada" in decided
    assert "certificate issued" in decided


def test_write_html_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"
    write_html(target, sample_result())
    assert target.read_text("utf-8") == render_html(sample_result())
    write_html(target, no_winner_result())
    assert target.read_text("utf-8") == render_html(no_winner_result())
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]
