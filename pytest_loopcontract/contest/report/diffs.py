"""Each candidate's diff in the HTML report: collapsed, added and removed lines coloured.

Why it is here and built this way: the diff is what a person reads before approving a
winner, so the page carries it, but folded (``<details>``) so a contest of many seats stays
readable; opening it needs no script (the page's policy forbids any). The diff is the seat's
text, so every line goes through :func:`~.markup.escape_html`, and it is cut to
:data:`MAX_LINES` lines with a note of how many more, so no seat can flood the page. Pure:
the command that writes the report reads the diffs from git and passes them in.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_loopcontract.contest.report.markup import escape_html

__all__ = ["DIFF_CSS", "MAX_LINES", "MAX_LINE_CHARS", "diff_details", "diff_stats"]

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


def _kind(line: str) -> str:
    if line.startswith(("diff --git", "+++ ", "--- ", "index ", "new file", "deleted file")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def diff_stats(diff: str) -> tuple[int, int, int]:
    """(files, added lines, removed lines) of a unified diff."""
    files = added = removed = 0
    for line in diff.splitlines():
        kind = _kind(line)
        if line.startswith("diff --git"):
            files += 1
        elif kind == "add":
            added += 1
        elif kind == "del":
            removed += 1
    return files, added, removed


def _lines_html(diff: str) -> str:
    lines = diff.splitlines()
    shown = []
    for line in lines[:MAX_LINES]:
        kind = _kind(line)
        text = escape_html(line, limit=MAX_LINE_CHARS) or " "
        shown.append(f'<span class="{kind}">{text}</span>')
    if len(lines) > MAX_LINES:
        shown.append(f'<span class="more">… and {len(lines) - MAX_LINES} more lines</span>')
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
