"""Each candidate's diff in the HTML report: collapsed, added and removed lines coloured.

Why it is here and built this way: the diff is what a person reads before approving a
winner, so the page carries it, but folded (``<details>``) so a contest of many seats stays
readable; opening it needs no script (the page's policy forbids any). The diff is the seat's
text, so every line goes through :func:`~.markup.escape_html`, and it is cut to
:data:`MAX_LINES` lines with a note of how many more, so no seat can flood the page. Pure:
the command that writes the report reads the diffs from git and passes them in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pytest_loopcontract.contest.report.markup import escape_html

__all__ = ["DIFF_CSS", "MAX_LINES", "MAX_LINE_CHARS", "classified", "diff_details", "diff_stats"]

MAX_LINES = 2000
MAX_LINE_CHARS = 400

# Background colours used by nothing else on the page (the screenshot test looks for them).
DIFF_CSS = """
details.diff{margin:8px 0 4px}
details.diff summary{cursor:pointer;color:var(--muted)}
pre.diff{margin:6px 0 0;padding:4px 0;border:1px solid var(--line);border-radius:6px;
overflow-x:auto;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.diff span{display:block;padding:0 8px;white-space:pre}
pre.diff .add{background:#aceebb;color:#055d20}
pre.diff .del{background:#ffcecb;color:#82071e}
pre.diff .hunk{background:#ddf4ff;color:#0550ae}
pre.diff .file{font-weight:600;background:#f6f8fa}
pre.diff .more{color:var(--muted);font-style:italic}
"""


def classified(diff: str) -> Iterator[tuple[str, str]]:
    """``(kind, line)`` per line: ``file`` (a file's header), ``hunk``, ``add``, ``del``,
    ``ctx``. Inside a hunk the first character decides, so a removed ``-- x`` line is not
    taken for a ``--- a/path`` header."""
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
            yield "hunk", line
            continue
        if not in_hunk:
            yield "file", line
        elif line.startswith("+"):
            yield "add", line
        elif line.startswith("-"):
            yield "del", line
        else:
            yield "ctx", line


def diff_stats(diff: str) -> tuple[int, int, int]:
    """(files, added lines, removed lines) of a unified diff."""
    kinds = [(kind, line.startswith("diff --git")) for kind, line in classified(diff)]
    files = sum(1 for _, header in kinds if header)
    return (
        files,
        sum(1 for kind, _ in kinds if kind == "add"),
        sum(1 for kind, _ in kinds if kind == "del"),
    )


def _lines_html(diff: str) -> str:
    shown = []
    total = 0
    for kind, line in classified(diff):
        total += 1
        if total <= MAX_LINES:
            text = escape_html(line, limit=MAX_LINE_CHARS) or " "
            shown.append(f'<span class="{kind}">{text}</span>')
    if total > MAX_LINES:
        shown.append(f'<span class="more">… and {total - MAX_LINES} more lines</span>')
    return "".join(shown)


def diff_details(tree: str, diffs: Mapping[str, str | None]) -> str:
    """The folded diff of the candidate whose tree is ``tree`` (``diffs`` maps trees to
    diffs, None where git could not give one); nothing when the caller passed no diff."""
    if not tree or tree not in diffs:
        return ""
    diff = diffs[tree]
    if diff is None:
        return '<p class="meta diff-none">diff: not available (its objects are gone)</p>'
    if not diff.strip():
        return '<p class="meta diff-none">diff: no change</p>'
    files, added, removed = diff_stats(diff)
    return (
        f'<details class="diff"><summary>diff: {files} file{"s" if files != 1 else ""}, '
        f"+{added} -{removed}</summary>"
        f'<pre class="diff">{_lines_html(diff)}</pre></details>'
    )
