"""Escaping for the contest reports: seat-controlled text in, inert text out.

A contest report quotes what the seats wrote: test names, failure messages, judges'
rationales, branch names, seat names. All of it is data from programs the contest does not
trust, and every report lands somewhere that interprets text: a terminal (escape sequences), a
pull-request comment (markdown, HTML, ``@mentions``, ``#123`` references, hidden ``<!-- -->``
comments that a bot may take for its own marker), an HTML page, a mermaid diagram. One module
owns the rules for each medium so a renderer never improvises them. Pure functions, stdlib only.

What every medium gets:

* **Control characters** (C0, C1, DEL) become U+FFFD, so a rationale cannot move a terminal's
  cursor or hide text. Bidirectional overrides and invisible format characters are dropped,
  so text cannot display in an order other than the one it is stored in.
* **Length limits** cut with an ellipsis, *before* escaping, so a cut never splits an escape.

What markdown gets in addition (GitHub-flavoured, in comments and job summaries):

* ``<``, ``>`` and ``&`` as entities and every markdown punctuation character
  backslash-escaped, so no HTML tag, comment, link, emphasis or table cell boundary survives.
* A zero-width joiner after ``@`` before a name, after ``#`` before a digit, inside ``GH-1``,
  ``://`` and ``www.``: GitHub links mentions, references and URLs in rendered text, where a
  backslash no longer exists, so only breaking the pattern itself keeps a name from being
  pinged and a number from being cross-referenced.
* In code spans and blocks, where entities are not decoded, the same joiner after a ``<``
  that would open a tag or comment: the raw comment body never contains ``<!--``, so a seat
  cannot forge the hidden marker a bot uses to find its own comment.
"""

from __future__ import annotations

import html
import re

from pytest_loopcontract.idtext import readable_ids

__all__ = [
    "ELLIPSIS",
    "code_block",
    "code_span",
    "escape_html",
    "escape_markdown_inline",
    "mermaid_label",
    "plain_text",
    "truncate",
]

ELLIPSIS = "\N{HORIZONTAL ELLIPSIS}"
_JOINER = "\N{ZERO WIDTH JOINER}"
_REPLACEMENT = "\N{REPLACEMENT CHARACTER}"

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Bidi embeddings/overrides/isolates, zero-width characters, word joiner, invisible operators,
# byte-order mark: they change how text displays without being visible themselves.
_INVISIBLE = re.compile(r"[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_NEWLINES = re.compile(r"\r\n?|[\n\u2028\u2029\x85]")
_SPACES = re.compile(r"[ \t]*(?:\n[ \t]*)+")

_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_REFERENCE = re.compile(r"#(?=[0-9])")
_GH_REF = re.compile(r"\b(GH)-(?=[0-9])", re.IGNORECASE)
_URL = re.compile(r"(?<=:)(?=//)|(?<=\bwww)(?=\.)", re.IGNORECASE)
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")

# Every ASCII punctuation character that means something to CommonMark, GFM (tables,
# strikethrough, autolinks) or GitHub (math with ``$``); a backslash before any ASCII
# punctuation is always a literal in CommonMark, so escaping more than needed is harmless.
_MD_SPECIAL = frozenset("\\`*_{}[]()#+-.!|~$=^")

_MERMAID_NAMED = {
    "!": "excl",
    '"': "quot",
    "#": "num",
    "$": "dollar",
    "%": "percnt",
    "&": "amp",
    "'": "apos",
    "(": "lpar",
    ")": "rpar",
    "*": "ast",
    ";": "semi",
    "<": "lt",
    ">": "gt",
    "@": "commat",
    "[": "lsqb",
    "\\": "bsol",
    "]": "rsqb",
    "`": "grave",
    "{": "lcub",
    "|": "vert",
    "}": "rcub",
}


def truncate(text: str, limit: int | None) -> str:
    """``text`` cut to at most ``limit`` characters, the last one an ellipsis when cut."""
    if limit is None or len(text) <= limit:
        return text
    if limit < 1:
        return ""
    return text[: limit - 1].rstrip() + ELLIPSIS


def plain_text(text: str, *, limit: int | None = None, keep_newlines: bool = False) -> str:
    """Text safe to print on a terminal: no escape sequences, newlines flattened to spaces
    unless ``keep_newlines``, at most ``limit`` characters."""
    return truncate(_clean(text, keep_newlines=keep_newlines), limit)


def escape_html(text: str, *, limit: int | None = None) -> str:
    """Text safe in HTML element content and in quoted attribute values."""
    return html.escape(truncate(_clean(text, keep_newlines=True), limit), quote=True)


def escape_markdown_inline(text: str, *, limit: int | None = None) -> str:
    """Text that GitHub markdown renders literally, on one line: safe in a paragraph, a list
    item, a heading or a table cell (pipes are escaped, newlines become spaces).

    No HTML survives (``<`` and ``>`` are entities), no emphasis, link, image, heading or list
    marker, no math, no mention, issue reference or autolinked URL.
    """
    flat = _unlink(truncate(_clean(text, keep_newlines=False), limit))
    out: list[str] = []
    for ch in flat:
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def code_span(text: str, *, limit: int | None = None, in_table: bool = False) -> str:
    """An inline code span showing ``text`` on one line, delimited by more backticks than any
    run inside it. ``in_table``: escape pipes as GFM requires inside a table cell (outside a
    table the backslash would show, so it is not added there)."""
    flat = _inert_code(truncate(_clean(text, keep_newlines=False), limit))
    if in_table:
        flat = flat.replace("|", "\\|")
    fence = "`" * (_longest_run(flat, "`") + 1)
    pad = " " if not flat or flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def code_block(text: str, *, lang: str = "", limit: int | None = 4000) -> str:
    """A fenced code block showing ``text`` verbatim (lines kept), fenced with more backticks
    than any run inside it, so the text cannot close the block early. Ends without a newline.

    ``lang`` is the caller's info string (``mermaid``, ``text``); it must not come from a seat.
    """
    if not re.fullmatch(r"[A-Za-z0-9_+-]*", lang):
        raise ValueError(f"unsafe code block language {lang!r}")
    body = _inert_code(truncate(_clean(text, keep_newlines=True), limit))
    fence = "`" * max(3, _longest_run(body, "`") + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def mermaid_label(text: str, *, limit: int | None = 80) -> str:
    """Text for a mermaid node label written as ``id["..."]``: one line, every character that
    mermaid or the HTML it renders into might read (quotes, brackets, angle brackets, ``#``,
    ``;``, backticks, ``@``) written as a named mermaid entity code (``#quot;``), letters,
    digits, plain punctuation and non-ASCII text as they are."""
    flat = truncate(_clean(text, keep_newlines=False), limit)
    # Characters outside the table (letters, digits, space, ``.,_-/+=?~^``, non-ASCII text)
    # mean nothing inside a quoted label. Non-ASCII stays as it is rather than as a numeric
    # entity: "#8230;" would read like an issue reference to anything scanning the comment.
    return "".join(f"#{_MERMAID_NAMED[ch]};" if ch in _MERMAID_NAMED else ch for ch in flat)


# --------------------------------------------------------------------------------------------


def _clean(text: str, *, keep_newlines: bool) -> str:
    text = readable_ids(str(text))  # node ids as the text they are (before the checks below)
    text = _NEWLINES.sub("\n", text).replace("\t", " ")
    text = _INVISIBLE.sub("", text)
    text = _CONTROL.sub(_REPLACEMENT, text)
    if not keep_newlines:
        text = _SPACES.sub(" ", text).strip()
    return text


def _unlink(text: str) -> str:
    text = _MENTION.sub("@" + _JOINER, text)
    text = _REFERENCE.sub("#" + _JOINER, text)
    text = _GH_REF.sub(lambda m: m.group(1) + _JOINER + "-", text)
    return _URL.sub(_JOINER, text)


def _inert_code(text: str) -> str:
    # Only the opening ``<`` matters: ``-->`` on its own is no comment (and is a mermaid arrow).
    return _unlink(_TAG_OPEN.sub("<" + _JOINER, text))


def _longest_run(text: str, ch: str) -> int:
    runs = re.findall(re.escape(ch) + "+", text)
    return max((len(r) for r in runs), default=0)
