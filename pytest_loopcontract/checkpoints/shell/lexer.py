"""The shell lexer: text to words, operators and redirections, the way a POSIX shell splits it.

Quotes are removed (``g'i't`` is ``git``, ``$'\\x67it'`` is ``git``), command substitutions
(``$( )``, backticks, ``<( )``) are collected on the word that holds them, and here-documents
are attached to their ``<<`` token. The lexer never raises: an unterminated quote or
substitution marks its token ``broken`` so the caller can add a tolerant reading as well.
Scanning is iterative, so hostile nesting cannot exhaust the interpreter stack. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ANSI_ESC_RE", "Token", "ansi_char", "lex", "simple_words", "subs_in_text"]


@dataclass(slots=True)
class Token:
    """One lexical unit and what a word carries: its substitutions, quoting, here-document."""

    kind: str  # "w" word, "op" operator, "r" redirection
    text: str
    start: int = 0
    end: int = 0
    quoted: bool = False
    subs: tuple[str, ...] = ()
    procsub: bool = False
    broken: bool = False  # an unterminated quote or substitution
    body: str | None = None  # here-document body, on "<<" redirection tokens
    expand_body: bool = False


_BLANKS = frozenset(" \t\r\f\v")
_PLAIN_RE = re.compile(r"[^\s'\"\\$`|&;()<>]+")
_DQ_PLAIN_RE = re.compile(r'[^"\\$`]+')
_REDIR_RE = re.compile(r"(?:\d+|\{[A-Za-z_]\w*\})?(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)|&>>?")
_ARRAY_ASSIGN_RE = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=$")
_CLOSE_SCAN = {
    ")": re.compile(r"[\\()\"'`]"),
    '"': re.compile(r'[\\"`]|\$\('),
    "`": re.compile(r"[\\`]"),
}
ANSI_ESC_RE = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _close(s: str, i: int, closer: str) -> int:
    """Index of the character that closes a ``$(``, ``"`` or backtick opened just before ``i``.

    Iterative (a stack, not recursion) so that deeply nested hostile input cannot exhaust the
    interpreter stack; ``len(s)`` when the construct is never closed.
    """
    n = len(s)
    stack = [closer]
    while i < n:
        top = stack[-1]
        if top == "'":
            j = s.find("'", i)
            if j < 0:
                return n
            stack.pop()
            i = j + 1
            continue
        m = _CLOSE_SCAN[top].search(s, i)
        if m is None:
            return n
        tok, p, i = m.group(), m.start(), m.end()
        if tok == "\\":
            i = p + 2
            continue
        if top == ")":
            if tok == ")":
                stack.pop()
            else:
                stack.append(")" if tok == "(" else tok)
        elif top == '"':
            if tok == '"':
                stack.pop()
            else:
                stack.append(")" if tok == "$(" else "`")
        else:  # backtick
            stack.pop()
        if not stack:
            return p
    return n


def _ansi_c(s: str, i: int) -> tuple[int, str, bool]:
    """Read a ``$'…'`` body starting at ``i``: (index after it, decoded text, unterminated)."""
    n = len(s)
    j = i
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
        elif c == "'":
            break
        else:
            j += 1
    body = s[i : min(j, n)]
    return j + 1, ANSI_ESC_RE.sub(ansi_char, body), j >= n


def ansi_char(m: re.Match[str]) -> str:
    """One backslash escape of $'…' (or echo -e, printf) decoded."""
    esc = m.group(1)
    head = esc[0]
    if head in "xuU" and len(esc) > 1:
        code = int(esc[1:], 16)
        return chr(code) if code <= 0x10FFFF else ""
    if head.isdigit():
        return chr(int(esc, 8))
    if head == "c" and len(esc) == 2:
        return chr(ord(esc[1]) & 0x1F)
    return _ANSI_SIMPLE.get(esc, "\\" + esc)


_UNBACKTICK_RE = re.compile(r"\\([\\`$])")


_SUB_START_RE = re.compile(r"\$\(|`")


def _unbacktick(text: str) -> str:
    """The text of a backtick substitution with its backslash escapes undone."""
    return _UNBACKTICK_RE.sub(r"\1", text)


def _read_dollar(s: str, i: int, parts: list[str], subs: list[str], in_dq: bool) -> tuple[int, int]:
    """Read a ``$`` construct at ``i``: returns (next index, flags: 1 quoted, 2 unterminated)."""
    n = len(s)
    nxt = s[i + 1 : i + 2]
    if nxt == "(":
        j = _close(s, i + 2, ")")
        inner = s[i + 2 : j]
        if inner.startswith("("):  # $(( arithmetic ))
            parts.append(s[i : j + 1])
        else:
            subs.append(inner)
            parts.append(f"$({inner})")
        return j + 1, 2 if j >= n else 0
    if nxt == "{":
        j = s.find("}", i + 2)
        j = n if j < 0 else j
        parts.append(s[i : j + 1])
        return j + 1, 2 if j >= n else 0
    if nxt == "'" and not in_dq:
        j, text, broken = _ansi_c(s, i + 2)
        parts.append(text)
        return j, 1 | (2 if broken else 0)
    if nxt == '"' and not in_dq:  # $"…" (locale string): the quote is read next
        return i + 1, 0
    parts.append("$")
    return i + 1, 0


def _read_backtick(s: str, i: int, parts: list[str], subs: list[str]) -> tuple[int, bool]:
    """Read a backtick substitution at ``i``: (index after it, unterminated)."""
    j = _close(s, i + 1, "`")
    inner = _unbacktick(s[i + 1 : j])
    subs.append(inner)
    parts.append(f"$({inner})")
    return j + 1, j >= len(s)


def _read_dquote(s: str, i: int, parts: list[str], subs: list[str]) -> tuple[int, bool]:
    """Read a double-quoted body from ``i``: (index after the closing quote, unterminated)."""
    n = len(s)
    broken = False
    while i < n:
        m = _DQ_PLAIN_RE.match(s, i)
        if m is not None:
            parts.append(m.group())
            i = m.end()
            continue
        c = s[i]
        if c == '"':
            return i + 1, broken
        if c == "\\":
            nxt = s[i + 1 : i + 2]
            if nxt == "\n":
                i += 2
            elif nxt and nxt in '$`"\\':
                parts.append(nxt)
                i += 2
            else:
                parts.append("\\")
                i += 1
        elif c == "`":
            i, b = _read_backtick(s, i, parts, subs)
            broken = broken or b
        else:
            i, flags = _read_dollar(s, i, parts, subs, in_dq=True)
            broken = broken or bool(flags & 2)
    return n, True


def _read_word(s: str, i: int) -> Token:
    """Read one shell word at ``i``, removing quotes and collecting command substitutions."""
    start = i
    n = len(s)
    parts: list[str] = []
    subs: list[str] = []
    quoted = broken = False
    while i < n:
        m = _PLAIN_RE.match(s, i)
        if m is not None:
            parts.append(m.group())
            i = m.end()
            if i >= n:
                break
        c = s[i]
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                j, broken = n, True
            parts.append(s[i + 1 : j])
            quoted = True
            i = j + 1
        elif c == '"':
            i, b = _read_dquote(s, i + 1, parts, subs)
            quoted, broken = True, broken or b
        elif c == "\\":
            if s[i + 1 : i + 2] != "\n":
                parts.append(s[i + 1 : i + 2])
            i += 2
        elif c == "`":
            i, b = _read_backtick(s, i, parts, subs)
            broken = broken or b
        elif c == "$":
            i, flags = _read_dollar(s, i, parts, subs, in_dq=False)
            quoted = quoted or bool(flags & 1)
            broken = broken or bool(flags & 2)
        elif c == "(" and parts and _ARRAY_ASSIGN_RE.match("".join(parts)):
            j = _close(s, i + 1, ")")
            parts.append(s[i : j + 1])
            i = j + 1
        else:
            break
    return Token("w", "".join(parts), start, min(i, n), quoted, tuple(subs), broken=broken)


def _read_heredocs(s: str, i: int, pending: list[tuple[Token, str, bool]]) -> int:
    """Read the bodies of the pending here-documents from ``i``: the index after them."""
    n = len(s)
    for tok, delim, strip_tabs in pending:
        lines: list[str] = []
        while i < n:
            j = s.find("\n", i)
            line = s[i:] if j < 0 else s[i:j]
            i = n if j < 0 else j + 1
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                break
            lines.append(line)
        tok.body = "\n".join(lines)
    return i


_NEEDS_FULL_LEX_RE = re.compile(r"[\"'\\$`<>()#\n]")
_FAST_TOKEN_RE = re.compile(r"(&&|\|\||;;|\|&|[|&;])|[^\s|&;]+")


def _lex_simple(s: str) -> list[Token]:
    """Tokens of text with no quotes, substitutions, redirections or comments: most commands."""
    return [
        Token("op" if m.group(1) else "w", m.group(), m.start(), m.end())
        for m in _FAST_TOKEN_RE.finditer(s)
    ]


def _read_redirect(
    s: str, i: int, toks: list[Token], heredocs: list[tuple[Token, str, bool]]
) -> int | None:
    """Read a redirection at ``i`` into ``toks`` (a here-document's delimiter too, its body
    left for the next newline): the index after it, or None when there is none at ``i``."""
    m = _REDIR_RE.match(s, i)
    if m is None or (s[i] == "&" and not m.group().startswith("&>")):
        return None
    op = m.group().lstrip("0123456789")
    if op.startswith("{"):
        op = op[op.index("}") + 1 :]
    tok = Token("r", op, i, m.end())
    toks.append(tok)
    i = m.end()
    if op in ("<<", "<<-"):
        n = len(s)
        while i < n and s[i] in " \t":
            i += 1
        delim = _read_word(s, i)
        tok.expand_body = not delim.quoted
        heredocs.append((tok, delim.text, op == "<<-"))
        toks.append(delim)
        i = max(delim.end, i)
    return i


def lex(s: str) -> list[Token]:
    """Split shell text into words, operators and redirections (never raises)."""
    if _NEEDS_FULL_LEX_RE.search(s) is None:
        return _lex_simple(s)
    toks: list[Token] = []
    heredocs: list[tuple[Token, str, bool]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in _BLANKS:
            i += 1
            continue
        if c == "\n":
            toks.append(Token("op", "\n", i, i + 1))
            i += 1
            if heredocs:
                i = _read_heredocs(s, i, heredocs)
                heredocs = []
            continue
        if c == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\\" and s.startswith("\n", i + 1):
            i += 2
            continue
        if c in "<>" and s.startswith("(", i + 1):  # process substitution <( ) / >( )
            j = _close(s, i + 2, ")")
            inner = s[i + 2 : j]
            toks.append(Token("w", f"{c}({inner})", i, min(j + 1, n), True, (inner,), True, j >= n))
            i = j + 1
            continue
        if c in "<>&{" or c.isdigit():
            after = _read_redirect(s, i, toks, heredocs)
            if after is not None:
                i = after
                continue
        if c in "|&;()":
            two = s[i : i + 2]
            op = two if two in ("&&", "||", ";;", "|&") else c
            toks.append(Token("op", op, i, i + len(op)))
            i += len(op)
            continue
        tok = _read_word(s, i)
        toks.append(tok)
        i = tok.end if tok.end > i else i + 1
    for tok, _, _ in heredocs:
        tok.body = ""
    return toks


def simple_words(text: str) -> list[str]:
    """The words of a short text (an alias, ``env -S``), without operators or redirections."""
    return [t.text for t in lex(text) if t.kind == "w"]


def subs_in_text(text: str) -> list[str]:
    """Command substitutions inside an expanding here-document body."""
    found: list[str] = []
    i = 0
    while True:
        m = _SUB_START_RE.search(text, i)
        if m is None:
            return found
        if m.group() == "`":
            j = _close(text, m.end(), "`")
            found.append(_unbacktick(text[m.end() : j]))
        else:
            j = _close(text, m.end(), ")")
            if not text.startswith("(", m.end()):
                found.append(text[m.end() : j])
        i = j + 1
