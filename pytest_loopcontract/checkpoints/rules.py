"""Checkpoints: actions an unattended agent may not take until a named person clears them.

Three things are scanned: a shell command the agent is about to run (:func:`scan_command`),
the diff of a candidate (:func:`scan_diff`) and file paths (:func:`scan_paths`). Each finding is
a :class:`Match` that names a stable pattern id, says in a sentence why a person is needed and
shows the offending segment with secrets redacted. The governed loop answers ``await_human``
for any match; ``always`` marks the ones a standing approval cannot pre-clear.

A command is checked after it is normalised the way a shell would run it, because an agent that
wants to get past a filter only has to write ``bash -c "git push"``, ``env X=1 /usr/bin/git -C
repo push``, ``g'i't push`` or ``$(echo git) push``. :func:`split_command` turns the text into
simple commands (argument vectors) with its own small POSIX lexer: it splits on ``&& || ; | &``
and newlines, descends into ``bash -c``/``sh -c``/``eval`` strings, ``$( )``, backticks,
``<( )``, subshells, ``{ }`` groups, here-documents and here-strings fed to a shell, ``echo … | sh``
(also through ``base64 -d``), ``ssh host CMD``, ``find -exec``, ``git submodule foreach`` and
inline ``git -c alias.x=…``; it strips ``env``, ``VAR=x`` prefixes, ``command``, ``exec``,
``nohup``, ``time``, ``nice``, ``timeout``, ``xargs``, tool runners (``uv run``, ``npx``,
``poetry run``…) and ``python -m``; it resolves ``/usr/bin/git`` to ``git``, ``$'\\x67it'`` to
``git``, simple variables set earlier in the same text (``X=git; $X push``), ``${IFS}`` and
``alias``; and it tracks ``cd`` so that ``cd / && rm -rf *`` is seen for what it is. ``sudo``,
``doas``, ``su`` and ``pkexec`` are recorded as commands of their own and the command they run
is checked too. The lexer never raises; on unbalanced quotes it also adds a tolerant word split,
so malformed input is read both ways, and nesting deeper than it follows (12 levels) is read
that way too.

Decisions that shape the results (what is deliberately *not* matched):

* A quoted string given to ``echo``/``printf`` is data, not a command: ``echo "git push"``
  does not match; the same string after ``bash -c``, ``eval`` or piped into ``sh`` does.
* Search tools (``grep``, ``rg``, ``ag``, ``ack``) and ``git`` itself never trigger the SQL
  patterns (``grep "DROP TABLE users" dump.sql`` and commit messages are text);
  ``echo``/``printf``/``cat`` trigger them only when their output is piped on. A bare keyword
  (``grep DROP file``) never matches: a statement needs its object (``DROP TABLE users``).
  Lower-case SQL counts in SQL clients (``psql``, ``mysql``, ``sqlite3``…), in interpreters'
  arguments (``python -c``) and in here-documents; elsewhere only upper-case keywords do, so
  ``gh pr create --body "delete from the list"`` is prose. ``TRUNCATE x`` without ``TABLE``
  counts only in upper case or as a SQL client's input.
* Interpreter code (``python -c``, ``node -e``, ``perl -e``, ``ruby -e``, ``php -r``, or a
  here-document fed to one) is not parsed as a language: only string literals handed straight
  to a process call (``os.system('…')``, ``subprocess.run(['git', 'push'])``, ``execSync``,
  ``system``, Perl/Ruby backticks) are read as commands, so ``python -c "print('git push')"``
  stays quiet and a command assembled at run time is not followed. Script files the agent runs
  (``python deploy.py``, ``bash release.sh``) are not opened; ``curl -o x.sh URL && sh x.sh``
  is not ``curl | sh``; functions and aliases defined in sourced files are not followed.
* ``git push --dry-run`` is not a push, and ``--dry-run`` publishes nothing. A push without a
  refspec (or to ``HEAD``) has an unknown target: it matches ``git-push`` (needs a person) but
  not the ``always`` patterns.
* ``rm`` needs ``-r``/``-R``/``--recursive`` to count (``-f`` is not required). Inside the
  workspace is fine, including ``rm -rf build/``; the workspace itself (``rm -rf .``, ``rm -rf
  *`` at its root) matches but not ``always``; the filesystem root, the home directory, another
  user's home and any parent of them or of the workspace match ``always``. A named child of a
  temp root (``/tmp/build-1``, ``$TMPDIR/x``) is fine. ``$VAR/...`` with an unknown variable
  matches (empty or unset, it becomes ``/...``); ``"$VAR"`` alone and ``${VAR:?}/x`` do not.
  After ``cd`` to an unknown place (``cd "$X"``) relative targets are not judged.
  ``find PATH … -delete`` and ``find PATH -exec rm -r {} +`` count as deleting inside PATH.
* ``ls``, ``stat``, ``test``/``[`` and ``echo``/``printf`` of an ``.env`` or key path do not
  count as reading it; anything else that names one (``cat``, ``cp``, ``source``, editors,
  ``git add``, ``docker --env-file``, ``curl -d @file``, ``>``/``<`` redirections) does.
  ``.env.example``, ``.env.sample``, ``.env.template``, ``.env.dist`` (and ``.tmpl``, ``.tpl``,
  ``.defaults``) are templates, not secrets; ``*.pub`` keys are public.
* Secrets: provider token shapes, private-key blocks, credentials in URLs, and assignments to
  a secret-looking name (``password``, ``secret``, ``token``, ``api_key``…) whose value is at
  least 16 characters, mixes two of lower case/upper case/digits, contains no space, is not a
  placeholder (``changeme``, ``xxx``, ``${VAR}``, ``os.environ[...]``, ``<your key>``…) and has
  a Shannon entropy of at least 3.5 bits per character. Unquoted values must also contain a
  digit and not be a dotted name (``settings.SECRET_KEY``), which keeps code out.
* :func:`scan_diff` looks at added lines only (a removed secret is a fix). With
  ``scripts=True`` (the default) it also runs the command patterns over added lines of files
  that execute as shell: ``*.sh``, Makefile recipes, Dockerfile ``RUN`` lines, CI workflow
  steps and git hooks, so a candidate cannot smuggle ``curl | sh`` into CI.
* Matches are never printed with a full secret: provider tokens, secret assignments and URL
  passwords in any evidence show their first 4 characters and "…" (only "…" for values of 8
  characters or fewer).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import fnmatch
import functools
import json
import math
import os
import posixpath
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_PROTECTED_BRANCHES",
    "KINDS",
    "Command",
    "CommandMatcher",
    "Hit",
    "Match",
    "Pattern",
    "ScanContext",
    "TextMatcher",
    "classify_path",
    "default_patterns",
    "parse_command",
    "patterns_from_contract",
    "redact",
    "redact_secrets",
    "scan_command",
    "scan_diff",
    "scan_paths",
    "shannon_entropy",
    "split_command",
]

KINDS = ("command", "diff", "path")
DEFAULT_PROTECTED_BRANCHES = ("main", "master", "release/*")

_MAX_DEPTH = 12  # nesting of bash -c / $( ) / eval we follow; deeper text is left as it stands
_MAX_COMMANDS = 5000  # a hostile input cannot make one scan produce unbounded work
_EVIDENCE_MAX = 200


def _names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps long tables readable)."""
    return frozenset(text.split())


# --------------------------------------------------------------------------------------------
# Public data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """One checkpoint hit: which pattern, why it needs a person, and where."""

    pattern_id: str
    kind: str
    message: str
    evidence: str
    path: str = ""
    line: int | None = None
    always: bool = False


@dataclass(frozen=True)
class Hit:
    """What a matcher reports; :func:`scan_command` and friends turn it into a :class:`Match`.

    ``detail`` names the sub-kind ("force push", "aws access key"); ``evidence`` is the
    offending segment (redacted again before it is shown); ``always`` marks a hit that a
    standing approval cannot pre-clear.
    """

    evidence: str
    detail: str = ""
    always: bool = False


@dataclass(frozen=True)
class ScanContext:
    """Facts about the place a command runs in, for patterns whose answer depends on it."""

    workspace: str | None = None
    home: str = ""
    protected_branches: tuple[str, ...] = DEFAULT_PROTECTED_BRANCHES


@dataclass(frozen=True)
class Command:
    """One simple command after normalisation, with what a matcher needs to judge it.

    ``argv[0]`` is the program's base name (``/usr/bin/git`` becomes ``git``; ``python3.12``
    becomes ``python``). ``upstream`` holds the argument vectors of the commands piping into
    this one (nearest last), ``substitutions`` those whose output became one of its words
    (``$( )``, backticks, ``<( )``), ``stdin`` a here-document or here-string, ``cwd`` the
    directory ``cd`` left the text in ("" = where it started, None = unknown).
    """

    argv: tuple[str, ...]
    text: str = ""
    redirects: tuple[tuple[str, str], ...] = ()
    stdin: str = ""
    upstream: tuple[tuple[str, ...], ...] = ()
    piped: bool = False
    substitutions: tuple[tuple[str, ...], ...] = ()
    cwd: str | None = ""
    blob: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        targets = tuple(target for _, target in self.redirects)
        object.__setattr__(self, "blob", "\n".join((*self.argv, self.stdin, *targets)))

    @property
    def program(self) -> str:
        return self.argv[0] if self.argv else ""


CommandMatcher = Callable[[Command, ScanContext], Iterable[Hit]]
TextMatcher = Callable[[str], Iterable[Hit]]


@dataclass(frozen=True)
class Pattern:
    """A checkpoint pattern: a compiled regex or a matcher function, and why it needs a person.

    ``kind`` says what it looks at: ``command`` (a :class:`Command`; matcher
    ``match_command``), ``diff`` (one added line; ``match_text``) or ``path`` (one path;
    ``match_text``). A regex is searched in the normalised command (its words joined by
    spaces), then in the command's source text, then in the whole input; or in the added line;
    or in the path. Two cheap prefilters keep scans fast: ``programs`` lets a command pattern
    run only for those program names (None = every command), and ``hint`` lists lower-case
    substrings one of which must occur in the lower-cased :attr:`Command.blob` (words, stdin,
    redirection targets) before the matcher runs (empty = no hint).
    The same id may appear with several kinds: ``env-file`` is both a command and a path
    pattern, and disabling the id disables both.
    """

    id: str
    kind: str
    message: str
    regex: re.Pattern[str] | None = None
    match_command: CommandMatcher | None = None
    match_text: TextMatcher | None = None
    programs: frozenset[str] | None = None
    hint: tuple[str, ...] = ()
    always: bool = False
    origin: str = "default"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"checkpoint {self.id!r}: kind must be one of {KINDS}, not {self.kind!r}"
            )
        given = sum(x is not None for x in (self.regex, self.match_command, self.match_text))
        if given != 1:
            raise ValueError(f"checkpoint {self.id!r}: give exactly one of regex or a matcher")
        if self.match_command is not None and self.kind != "command":
            raise ValueError(f"checkpoint {self.id!r}: match_command needs kind 'command'")
        if self.match_text is not None and self.kind == "command":
            raise ValueError(f"checkpoint {self.id!r}: kind 'command' needs match_command")
        object.__setattr__(self, "hint", tuple(h.lower() for h in self.hint))


# --------------------------------------------------------------------------------------------
# Small helpers: entropy, redaction, evidence
# --------------------------------------------------------------------------------------------


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``: random keys score high, words and placeholders low."""
    n = len(text)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def redact(secret: str) -> str:
    """Show only enough of a secret to recognise it: its first 4 characters and "…"."""
    return secret[:4] + "…" if len(secret) > 8 else "…"


_SECRET_LABELS = {
    "aws": "aws access key id",
    "github": "github token",
    "gitlab": "gitlab token",
    "slack": "slack token",
    "stripe": "stripe live key",
    "anthropic": "anthropic api key",
    "openai": "openai api key",
    "google": "google api key",
    "npm": "npm token",
    "pypi": "pypi token",
    "private_key": "private key block",
}
_SECRET_RE = re.compile(
    r"(?P<private_key>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
    r"|(?P<aws>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"
    r"|(?P<github>\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))"
    r"|(?P<gitlab>\bglpat-[A-Za-z0-9_-]{20,})"
    r"|(?P<slack>\bxox[baprs]-[A-Za-z0-9-]{10,})"
    r"|(?P<stripe>\b[sr]k_live_[A-Za-z0-9]{16,})"
    r"|(?P<anthropic>\bsk-ant-[A-Za-z0-9_-]{20,})"
    r"|(?P<openai>\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,})"
    r"|(?P<google>\bAIza[0-9A-Za-z_-]{35})"
    r"|(?P<npm>\bnpm_[A-Za-z0-9]{36})"
    r"|(?P<pypi>\bpypi-AgE[A-Za-z0-9_-]{50,})"
)
_ASSIGN_SOURCE = (
    r"(?:passw(?:or)?d|passwd|\bpwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|(?:access|private|signing|encryption|master|client)[_-]?key|credentials?)"
    r"[\w.-]{0,40}?[\"'\]]?\s{0,4}(?::=|=>|=(?!=)|:|<-)\s{0,4}"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{0,400})(?P=q)|(?P<uv>[^\s\"'`,;)\]}(]{1,400}))"
)
# Searched in lower-cased text (several times faster than IGNORECASE); the spans map back to
# the original because ASCII lower-casing keeps lengths. The IGNORECASE twin is for the rare
# text whose lower-casing does not.
_ASSIGN_LOW_RE = re.compile(_ASSIGN_SOURCE)
_ASSIGN_ANY_RE = re.compile(_ASSIGN_SOURCE, re.IGNORECASE)
_URL_CRED_RE = re.compile(
    r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@'\"]{1,64}:(?P<pw>[^\s/@'\"]{1,128})@"
)
_PLACEHOLDER_RE = re.compile(
    r"(?i)^\$|\$\{|\$\(|\{\{|%\(|%s|<[^>]*>|x{4,}|\*{3,}|\.{3}|…|changeme|change[_-]?me|example"
    r"|placeholder|your[_-]?|dummy|redacted|sample|fake|environ|getenv|process\.env|secrets\."
    r"|vault:|\bENV\[|\bnone\b|\bnull\b|password"
)
_DOTTED_NAME_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


# Substring checks run in C and rule out almost every line before a regex has to look at it.
_TOKEN_HINTS = (
    "-----BEGIN", "AKIA", "ASIA", "hp_", "ho_", "hu_", "hs_", "hr_", "github_pat_", "glpat-",
    "xox", "k_live_", "sk-", "AIza", "npm_", "pypi-",
)  # fmt: skip
_ASSIGN_HINTS = ("pass", "pwd", "secret", "token", "key", "credential")


def _may_hold_token(text: str) -> bool:
    return any(map(text.__contains__, _TOKEN_HINTS))


def _assignments(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, quoted) of each value assigned to a secret-looking name in ``text``."""
    low = text.lower()
    if not any(map(low.__contains__, _ASSIGN_HINTS)):
        return []
    regex, subject = (_ASSIGN_LOW_RE, low) if len(low) == len(text) else (_ASSIGN_ANY_RE, text)
    spans: list[tuple[int, int, bool]] = []
    for m in regex.finditer(subject):
        group = "qv" if m.group("q") else "uv"
        start, end = m.span(group)
        spans.append((start, end, group == "qv"))
    return spans


def _may_hold_url_password(text: str) -> bool:
    return "://" in text and "@" in text


def _looks_secret(value: str, quoted: bool, minimum: int = 16) -> bool:
    """Whether an assigned value is a real secret rather than code, prose or a placeholder."""
    if len(value) < minimum or " " in value or _PLACEHOLDER_RE.search(value):
        return False
    if "://" in value and not _URL_CRED_RE.search(value):
        return False
    if not quoted and (not any(ch.isdigit() for ch in value) or _DOTTED_NAME_RE.fullmatch(value)):
        return False
    classes = (
        any(ch.islower() for ch in value)
        + any(ch.isupper() for ch in value)
        + any(ch.isdigit() for ch in value)
    )
    return classes >= 2 and shannon_entropy(value) >= 3.5


def _redact_value(match: re.Match[str], group: str) -> str:
    """Redact one group of a match, however short: a short password is still a password."""
    start, end = match.span(group)
    if start == end or match.string[end - 1] == "…":  # empty, or already redacted
        return match.group()
    whole = match.group()
    offset = match.start()
    return (
        whole[: start - offset]
        + redact(whole[start - offset : end - offset])
        + whole[end - offset :]
    )


def _redact_assignments(text: str) -> str:
    for start, end, _ in reversed(_assignments(text)):
        if start < end and text[end - 1] != "…":  # empty, or already redacted
            text = text[:start] + redact(text[start:end]) + text[end:]
    return text


def redact_secrets(text: str) -> str:
    """Replace every secret-shaped token, secret assignment and URL password in ``text``.

    Used on all evidence, whatever pattern produced it: a payment call or a ``.env`` write can
    carry a key as well.
    """
    if _may_hold_token(text):
        text = _SECRET_RE.sub(
            lambda m: m.group() if m.lastgroup == "private_key" else redact(m.group()), text
        )
    text = _redact_assignments(text)
    if _may_hold_url_password(text):
        text = _URL_CRED_RE.sub(lambda m: _redact_value(m, "pw"), text)
    return text


def _evidence(text: str) -> str:
    text = redact_secrets(text.strip())
    return text if len(text) <= _EVIDENCE_MAX else text[: _EVIDENCE_MAX - 1] + "…"


# --------------------------------------------------------------------------------------------
# Lexer: shell text -> tokens
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Tok:
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
_ANSI_ESC_RE = re.compile(
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
    return j + 1, _ANSI_ESC_RE.sub(_ansi_char, body), j >= n


def _ansi_char(m: re.Match[str]) -> str:
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
_ECHO_FLAGS_RE = re.compile(r"-[neE]+")
_SUB_START_RE = re.compile(r"\$\(|`")


def _unbacktick(text: str) -> str:
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


def _read_word(s: str, i: int) -> _Tok:
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
    return _Tok("w", "".join(parts), start, min(i, n), quoted, tuple(subs), broken=broken)


def _read_heredocs(s: str, i: int, pending: list[tuple[_Tok, str, bool]]) -> int:
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


def _lex_simple(s: str) -> list[_Tok]:
    """Tokens of text with no quotes, substitutions, redirections or comments: most commands."""
    return [
        _Tok("op" if m.group(1) else "w", m.group(), m.start(), m.end())
        for m in _FAST_TOKEN_RE.finditer(s)
    ]


def _lex(s: str) -> list[_Tok]:
    """Split shell text into words, operators and redirections (never raises)."""
    if _NEEDS_FULL_LEX_RE.search(s) is None:
        return _lex_simple(s)
    toks: list[_Tok] = []
    heredocs: list[tuple[_Tok, str, bool]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in _BLANKS:
            i += 1
            continue
        if c == "\n":
            toks.append(_Tok("op", "\n", i, i + 1))
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
            toks.append(_Tok("w", f"{c}({inner})", i, min(j + 1, n), True, (inner,), True, j >= n))
            i = j + 1
            continue
        if c in "<>&{" or c.isdigit():
            m = _REDIR_RE.match(s, i)
            if m is not None and (c != "&" or m.group().startswith("&>")):
                op = m.group().lstrip("0123456789")
                if op.startswith("{"):
                    op = op[op.index("}") + 1 :]
                tok = _Tok("r", op, i, m.end())
                toks.append(tok)
                i = m.end()
                if op in ("<<", "<<-"):
                    while i < n and s[i] in " \t":
                        i += 1
                    delim = _read_word(s, i)
                    tok.expand_body = not delim.quoted
                    heredocs.append((tok, delim.text, op == "<<-"))
                    toks.append(delim)
                    i = max(delim.end, i)
                continue
        if c in "|&;()":
            two = s[i : i + 2]
            op = two if two in ("&&", "||", ";;", "|&") else c
            toks.append(_Tok("op", op, i, i + len(op)))
            i += len(op)
            continue
        tok = _read_word(s, i)
        toks.append(tok)
        i = tok.end if tok.end > i else i + 1
    for tok, _, _ in heredocs:
        tok.body = ""
    return toks


# --------------------------------------------------------------------------------------------
# Grouping: tokens -> simple commands with their pipeline context
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Raw:
    words: list[_Tok]
    redirects: list[tuple[_Tok, _Tok | None]]
    upstream: list[_Raw]
    piped: bool = False
    final: tuple[str, ...] = ()

    def span(self) -> tuple[int, int]:
        """Where the command sits in its source text (tokens come in source order)."""
        starts: list[int] = []
        ends: list[int] = []
        if self.words:
            starts.append(self.words[0].start)
            ends.append(self.words[-1].end)
        if self.redirects:
            starts.append(self.redirects[0][0].start)
            op, target = self.redirects[-1]
            ends.append((target or op).end)
        return min(starts), max(ends)


def _group(toks: list[_Tok]) -> list[_Raw]:
    raws: list[_Raw] = []
    words: list[_Tok] = []
    redirs: list[tuple[_Tok, _Tok | None]] = []
    pipeline: list[_Raw] = []
    pipe_pending = False
    want: _Tok | None = None

    def flush() -> None:
        nonlocal words, redirs, pipeline, pipe_pending
        if not words and not redirs:
            return
        raw = _Raw(words, redirs, list(pipeline) if pipe_pending else [])
        if pipe_pending and pipeline:
            pipeline[-1].piped = True
            pipeline = [*pipeline, raw]
        else:
            pipeline = [raw]
        pipe_pending = False
        raws.append(raw)
        words, redirs = [], []

    for tok in toks:
        if tok.kind == "w":
            if want is not None:
                redirs.append((want, tok))
                want = None
            else:
                words.append(tok)
            continue
        if want is not None:
            redirs.append((want, None))
            want = None
        if tok.kind == "r":
            want = tok
            continue
        flush()
        if tok.text in ("|", "|&"):
            pipe_pending = True
        elif tok.text not in ("(", ")"):
            pipeline, pipe_pending = [], False
    if want is not None:
        redirs.append((want, None))
    flush()
    return raws


# --------------------------------------------------------------------------------------------
# Normalisation: simple commands -> Command objects (wrappers stripped, scripts descended)
# --------------------------------------------------------------------------------------------


@dataclass
class _State:
    env: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    cwd: str | None = ""
    subs: dict[str, list[Command]] = field(default_factory=dict)
    procs: dict[str, str] = field(default_factory=dict)  # "<(…)" word -> its static output
    count: int = 0


@dataclass(frozen=True)
class _Base:
    """What every command produced from one simple command shares."""

    text: str
    redirects: tuple[tuple[str, str], ...]
    stdin: str
    upstream: tuple[tuple[str, ...], ...]
    piped: bool
    substitutions: tuple[tuple[str, ...], ...]

    def command(self, argv: Sequence[str], cwd: str | None) -> Command:
        return Command(
            tuple(argv),
            self.text,
            self.redirects,
            self.stdin,
            self.upstream,
            self.piped,
            self.substitutions,
            cwd,
        )


_ASSIGN_WORD_RE = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
_VAR_RE = re.compile(
    r"\$(?:\{(?P<b>[A-Za-z_]\w*)(?P<op>:?[-=+])?(?P<d>[^}]*)\}|(?P<n>[A-Za-z_]\w*))"
)
_PY_RE = re.compile(r"python(?:\d+(?:\.\d+)*)?[mtd]?|pypy3?")
_PIP_RE = re.compile(r"pip\d+(?:\.\d+)*")
_SHELL_VARS = _names("$shell ${shell} $bash ${bash}")

_SHELLS = _names("sh bash zsh dash ksh mksh ash fish csh tcsh yash rbash posh")
_KEYWORDS = _names("if then else elif do while until ! { } fi done esac function coproc")
_ELEVATORS = _names("sudo sudoedit doas su pkexec run0")
_INTERPRETERS = _names("python node nodejs perl ruby php deno bun")
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # program: (options that take a value, operands to skip before the command)
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-o", "--output", "-f", "--format"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (_names("-c -n -p -P -u --class --classdata"), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (_names("-i -o -e --input --output --error"), 0),
    "setsid": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "builtin": (frozenset(), 0),
    "command": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "chronic": (frozenset(), 0),
    "torsocks": (frozenset(), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "strace": (_names("-o -e -p -s -u -E"), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (
        _names(
            "-I -n -P -L -s -d -E -a --arg-file --max-args --max-procs --max-lines --max-chars "
            "--delimiter --eof --replace --process-slot-var"
        ),
        0,
    ),
    "npx": (frozenset({"-p", "--package"}), 0),
    "pnpx": (frozenset(), 0),
    "bunx": (frozenset(), 0),
    "uvx": (
        _names("--from --with -p --python --with-requirements --index --index-url --with-editable"),
        0,
    ),
}
_RUNNERS: dict[tuple[str, str], frozenset[str]] = {
    ("uv", "run"): _names(
        "--with --python -p --project --directory --package --env-file --extra --group --index "
        "--with-requirements --with-editable"
    ),
    ("poetry", "run"): frozenset({"-C", "--directory", "-P", "--project"}),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("pipenv", "run"): frozenset(),
    ("hatch", "run"): frozenset(),
    ("rye", "run"): frozenset(),
    ("pipx", "run"): frozenset({"--spec", "--python", "--index-url", "--pip-args"}),
    ("bundle", "exec"): frozenset(),
    ("npm", "exec"): frozenset({"-p", "--package", "-w", "--workspace"}),
    ("pnpm", "exec"): frozenset(),
    ("pnpm", "dlx"): frozenset(),
    ("yarn", "dlx"): frozenset(),
    ("yarn", "exec"): frozenset(),
    ("conda", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("mamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("micromamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
}
_SUDO_VALUE = _names(
    "-u -g -p -C -D -r -t -U -T -R --user --group --prompt --close-from --chdir --role --type "
    "--other-user --command-timeout --chroot --host"
)
_DOAS_VALUE = frozenset({"-u", "-C"})
_PKEXEC_VALUE = frozenset({"--user"})
_RUN0_VALUE = _names("-u --user -g --group -D --chdir --setenv --unit")
_SU_VALUE = _names("-s --shell -g --group -G --supp-group -w")
_SSH_VALUE = _names("-b -B -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")
_WATCH_VALUE = frozenset({"-n", "--interval", "-q", "--equexit"})
_GIT_VALUE = _names("-C -c --git-dir --work-tree --namespace --super-prefix --config-env")
_PY_VALUE = frozenset({"-W", "-X", "-Q"})


# Programs _emit has to look at; everything else is a plain command and leaves at once.
_SPECIAL = (
    _KEYWORDS
    | _ELEVATORS
    | _SHELLS
    | _INTERPRETERS
    | frozenset(_WRAPPERS)
    | frozenset(name for name, _ in _RUNNERS)
    | _names("env command python eval source . watch ssh git find uv")
    | _names("cd pushd popd alias unset export declare typeset local readonly")
)


def _skip_options(argv: Sequence[str], i: int, takes_value: frozenset[str]) -> int:
    """Index of the first operand at or after ``i``: skips ``-x``, ``--long[=v]``, clusters and
    the values of options in ``takes_value``; ``--`` ends the options."""
    n = len(argv)
    while i < n:
        a = argv[i]
        if a == "--":
            return i + 1
        if len(a) < 2 or a[0] != "-":
            return i
        i += 1
        if a in takes_value:
            i += 1
        elif not a.startswith("--"):
            for k in range(1, len(a)):
                if "-" + a[k] in takes_value:
                    i += k == len(a) - 1
                    break
    return i


def _program(word: str) -> str:
    """The name a shell would look up: base name, lower case, no ``.exe``, python3.x -> python."""
    if "/" in word and not word.startswith(("$(", "<(")):
        word = word.rsplit("/", 1)[1]
    word = word.lower()
    if word.endswith(".exe"):
        word = word[:-4]
    if word.startswith("py") and _PY_RE.fullmatch(word):
        return "python"
    if word.startswith("pip") and _PIP_RE.fullmatch(word):
        return "pip"
    if word in _SHELL_VARS:  # "$SHELL" -c '…' runs the user's shell
        return "sh"
    return word


def _expand_vars(word: str, env: Mapping[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group("b") or m.group("n")
        if name == "IFS":
            return " "
        op = m.group("op") or ""
        if name in env:
            value = env[name]
            return (m.group("d") if value else "") if op.endswith("+") else value
        if op and op[-1] in "-=":
            return m.group("d")
        return m.group()

    return _VAR_RE.sub(repl, word)


def _simple_words(text: str) -> list[str]:
    return [t.text for t in _lex(text) if t.kind == "w"]


def _printf(fmt: str, args: Sequence[str]) -> str:
    out = _ANSI_ESC_RE.sub(_ansi_char, fmt)
    for arg in args:
        if "%s" not in out:
            break
        out = out.replace("%s", arg, 1)
    return out.replace("%s", "")


def _static_output(chain: Sequence[Sequence[str]]) -> str | None:
    """What a pipeline prints, when the text alone says so: ``echo``/``printf`` (optionally
    through ``base64 -d`` or ``rev``) and ``which X``/``command -v X``. Else None."""
    if not chain or not chain[0]:
        return None
    first = list(chain[0])
    name, args = first[0], first[1:]
    if name == "echo":
        escapes = False
        while args and _ECHO_FLAGS_RE.fullmatch(args[0]):
            escapes = escapes or "e" in args[0]
            args = args[1:]
        out = " ".join(args)
        if escapes:
            out = _ANSI_ESC_RE.sub(_ansi_char, out)
    elif name == "printf" and args:
        out = _printf(args[0], args[1:])
    elif (name in ("which", "whence") or (name == "command" and args[:1] == ["-v"])) and args:
        out = args[-1]
    elif name == "type" and args[:1] in (["-P"], ["-p"]) and len(args) == 2:
        out = args[1]
    else:
        return None
    for argv in chain[1:]:
        if argv and argv[0] == "base64" and any(a in ("-d", "--decode", "-D") for a in argv[1:]):
            data = "".join(out.split())
            try:
                out = base64.b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return None
        elif argv and argv[0] == "rev":
            out = "\n".join(line[::-1] for line in out.split("\n"))
        else:
            return None
    return out


def _static_of(cmds: Sequence[Command]) -> str | None:
    if not cmds:
        return None
    last = cmds[-1]
    chain = (*last.upstream, last.argv)
    return _static_output(chain) if len(chain) == len(cmds) else None


def _parse(text: str, st: _State, depth: int) -> list[Command]:
    out: list[Command] = []
    toks = _lex(text)
    for raw in _group(toks):
        if st.count > _MAX_COMMANDS:
            break
        _resolve(raw, text, st, depth, out)
    if any(t.broken for t in toks):
        known = {c.argv for c in out}
        out.extend(c for c in _tolerant_commands(text) if c.argv not in known)
    return out


_TOLERANT_SPLIT_RE = re.compile(r"&&|\|\||[;|&\n()`{}<>]|\$\(")


def _tolerant_commands(text: str) -> list[Command]:
    """A forgiving reading of text the lexer found malformed: split on operators, drop quotes."""
    out: list[Command] = []
    for segment in _TOLERANT_SPLIT_RE.split(text):
        words = segment.replace("'", " ").replace('"', " ").replace("\\", "").split()
        while words and (_ASSIGN_WORD_RE.match(words[0]) or _program(words[0]) in _TOLERANT_SKIP):
            words = words[1:]
        if words:
            out.append(Command((_program(words[0]), *words[1:]), segment.strip()))
    return out


_TOLERANT_SKIP = _names("env command exec nohup time sudo doas eval xargs then do else !")


def _sub_commands(inner: str, st: _State, depth: int, out: list[Command]) -> list[Command]:
    cached = st.subs.get(inner)
    if cached is not None:
        return cached
    st.subs[inner] = []
    # Nesting deeper than we follow is itself suspicious: read the rest the tolerant way.
    cmds = _parse(inner, st, depth + 1) if depth < _MAX_DEPTH else _tolerant_commands(inner)
    st.subs[inner] = cmds
    out.extend(cmds)
    return cmds


def _word_values(
    tok: _Tok, st: _State, depth: int, out: list[Command], sub_argvs: list[tuple[str, ...]]
) -> list[str]:
    """The words a shell word becomes: substitutions run (and replaced when their output is
    known from the text), variables set earlier expanded, unquoted results split."""
    value = tok.text
    changed = False
    for inner in tok.subs:
        cmds = _sub_commands(inner, st, depth, out)
        sub_argvs.extend(c.argv for c in cmds if c.argv)
        static = _static_of(cmds)
        if static is None:
            continue
        if tok.procsub:
            st.procs[value] = static
        else:
            value = value.replace(f"$({inner})", static.rstrip("\n"))
            changed = True
    if "$" in value and not tok.procsub:
        expanded = _expand_vars(value, st.env)
        changed = changed or expanded != value
        value = expanded
    if changed and not tok.quoted:
        return value.split()
    return [value]


def _subs_in_text(text: str) -> list[str]:
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


def _resolve(raw: _Raw, text: str, st: _State, depth: int, out: list[Command]) -> None:
    sub_argvs: list[tuple[str, ...]] = []
    words: list[str] = []
    for tok in raw.words:
        if tok.subs or "$" in tok.text:
            words.extend(_word_values(tok, st, depth, out, sub_argvs))
        else:
            words.append(tok.text)
    redirects: list[tuple[str, str]] = []
    stdin: list[str] = []
    for rtok, target in raw.redirects if raw.redirects else ():
        if rtok.text in ("<<", "<<-"):
            body = rtok.body or ""
            if rtok.expand_body:
                for inner in _subs_in_text(body):
                    sub_argvs.extend(c.argv for c in _sub_commands(inner, st, depth, out) if c.argv)
            stdin.append(body)
            continue
        value = " ".join(_word_values(target, st, depth, out, sub_argvs)) if target else ""
        if rtok.text == "<<<":
            stdin.append(value)
        else:
            redirects.append((rtok.text, value))
    start, end = raw.span()
    base = _Base(
        text[start:end],
        tuple(redirects),
        "\n".join(stdin),
        tuple(r.final for r in raw.upstream if r.final) if raw.upstream else (),
        raw.piped,
        tuple(sub_argvs),
    )
    i = 0
    while i < len(words) and "=" in words[i] and _ASSIGN_WORD_RE.match(words[i]):
        i += 1
    if i == len(words):
        for word in words:
            name, _, value = word.partition("=")
            st.env[name.rstrip("+")] = value
        if redirects or base.stdin:
            _append(out, st, base.command((), st.cwd))
        return
    raw.final = _emit(words[i:], base, st, depth, out)


def _append(out: list[Command], st: _State, cmd: Command) -> None:
    st.count += 1
    if st.count <= _MAX_COMMANDS:
        out.append(cmd)


def _descend(script: str, st: _State, depth: int, out: list[Command]) -> bool:
    """Parse a script a command runs (``bash -c``, ``eval``, a here-document fed to a shell)."""
    if depth >= _MAX_DEPTH:
        out.extend(_tolerant_commands(script))
    else:
        out.extend(_parse(script, st, depth + 1))
    return True


def _emit(
    argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]
) -> tuple[str, ...]:
    """Strip wrappers off one command, follow what it runs, append the result to ``out``."""
    expanded_aliases: set[str] = set()
    git_alias_done = False
    for _ in range(64):
        if not argv:
            return ()
        name = _program(argv[0])
        argv = [name, *argv[1:]]
        if name not in _SPECIAL and name not in st.aliases:
            break
        if name in st.aliases and name not in expanded_aliases:
            expanded_aliases.add(name)
            argv = _simple_words(st.aliases[name]) + argv[1:]
            continue
        if name in _KEYWORDS:
            argv = argv[2:] if name == "function" else argv[1:]
            continue
        if name in _ELEVATORS:
            record, inner, script = _elevation(argv)
            _append(out, st, base.command(record, st.cwd))
            if script is not None:
                _descend(script, st, depth, out)
            if not inner:
                return record
            argv = inner
            continue
        if name == "env":
            inner = _env_command(argv)
            if not inner:
                break
            argv = inner
            continue
        if name == "command" and any(a in ("-v", "-V") for a in argv[1:2]):
            break
        wrapper = _WRAPPERS.get(name)
        if wrapper is not None:
            k = _skip_options(argv, 1, wrapper[0]) + wrapper[1]
            if k >= len(argv):
                break
            argv = argv[k:]
            continue
        runner = _runner_start(argv)
        if runner is not None:
            argv = argv[runner:]
            continue
        if name == "python":
            module = _python_module(argv)
            if module is not None:
                argv = module
                continue
        if name in _INTERPRETERS:
            code = _interpreter_code(argv) or base.stdin
            if code and depth < _MAX_DEPTH:
                _spawned(code, name, base, st, depth, out)
            break
        if name in _SHELLS or name in ("eval", "source", ".", "watch"):
            script = _script_of(argv, base, st)
            if script is not None and _descend(script, st, depth, out):
                return tuple(argv)
            break
        if name == "ssh":
            _append(out, st, base.command(argv, st.cwd))
            k = _skip_options(argv, 1, _SSH_VALUE) + 1
            if k < len(argv):
                _descend(" ".join(argv[k:]), st, depth, out)
            return tuple(argv)
        if name == "git" and not git_alias_done:
            git_alias_done = True
            alias = _git_alias(argv)
            if isinstance(alias, str):
                _descend(alias, st, depth, out)
                return tuple(argv)
            if alias is not None:
                argv = alias
                continue
        if name == "find":
            _find_exec(argv, base, st, depth, out)
        if name == "git":
            script = _git_foreach(argv)
            if script:
                _descend(script, st, depth, out)
        _track_state(argv, st)
        break
    _append(out, st, base.command(argv, st.cwd))
    return tuple(argv)


def _elevation(argv: list[str]) -> tuple[tuple[str, ...], list[str], str | None]:
    """Split ``sudo …``/``doas``/``su``/``pkexec``/``run0`` into (the record of the elevation,
    the command it runs, a script it runs)."""
    name = argv[0]
    if name == "su":
        record: list[str] = []
        script = None
        i = 1
        while i < len(argv):
            a = argv[i]
            if a in ("-c", "--command"):
                script = argv[i + 1] if i + 1 < len(argv) else ""
                i += 2
                continue
            if a.startswith("--command="):
                script = a.partition("=")[2]
            elif a in _SU_VALUE:
                record.extend(argv[i : i + 2])
                i += 2
                continue
            else:
                record.append(a)
            i += 1
        return ("su", *record), [], script
    takes = {"doas": _DOAS_VALUE, "pkexec": _PKEXEC_VALUE, "run0": _RUN0_VALUE}.get(
        name, _SUDO_VALUE
    )
    i = _skip_options(argv, 1, takes)
    if name == "sudoedit" or any(o in ("-e", "--edit") for o in argv[1:i]):
        return tuple(argv), [], None
    return tuple(argv[:i]), argv[i:], None


def _env_command(argv: list[str]) -> list[str]:
    """The command ``env [options] [NAME=value…] command…`` runs (``-S`` strings split)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-S", "--split-string"):
            return _simple_words(argv[i + 1] if i + 1 < len(argv) else "") + argv[i + 2 :]
        if a.startswith("--split-string="):
            return _simple_words(a.partition("=")[2]) + argv[i + 1 :]
        if a.startswith("-S"):
            return _simple_words(a[2:]) + argv[i + 1 :]
        if a in ("-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"):
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    while i < len(argv) and _ASSIGN_WORD_RE.match(argv[i]):
        i += 1
    return argv[i:]


def _runner_start(argv: list[str]) -> int | None:
    if len(argv) < 2:
        return None
    if argv[0] == "uv" and argv[1] == "tool" and argv[2:3] == ["run"]:
        k = _skip_options(argv, 3, _RUNNERS[("uv", "run")])
    else:
        takes = _RUNNERS.get((argv[0], argv[1]))
        if takes is None:
            return None
        k = _skip_options(argv, 2, takes)
    return k if k < len(argv) else None


_CODE_FLAGS = _names("-c -e -E -r -p --eval --print")
_SPAWN_RE = re.compile(
    r"\b(?:system|popen|spawn|spawnSync|execSync|execFileSync|execFile|exec|run|call"
    r"|check_call|check_output|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open)"
    r"\s*\(\s*(?:(?P<list>\[[^\]]*\])|[rbfu]?(?P<q>['\"`])(?P<cmd>(?:\\.|(?!(?P=q)).)*)(?P=q))"
)
_LITERAL_RE = re.compile(r"(['\"])((?:\\.|(?!\1).)*)\1")
_QX_RE = re.compile(r"`([^`]+)`|\bqx\s*[{(\[]([^})\]]+)[})\]]")


def _interpreter_code(argv: Sequence[str]) -> str | None:
    """The code given to an interpreter on its command line (``python -c``, ``node -e``…)."""
    for i, a in enumerate(argv[1:-1], start=1):
        if a in _CODE_FLAGS:
            return argv[i + 1]
        if not a.startswith("-"):
            return None
    return None


def _spawned(code: str, name: str, base: _Base, st: _State, depth: int, out: list[Command]) -> None:
    """Follow the commands interpreter code hands to a shell or spawns as literals:
    ``os.system('…')``, ``subprocess.run(['git', 'push'])``, ``execSync('…')``, Perl and Ruby
    backticks. Code that builds the command at run time is not followed."""
    for m in _SPAWN_RE.finditer(code):
        if m.group("list"):
            argv = [literal for _, literal in _LITERAL_RE.findall(m.group("list"))]
            if argv:
                _emit(argv, base, st, depth + 1, out)
        elif m.group("cmd"):
            _descend(m.group("cmd"), st, depth, out)
    if name in ("perl", "ruby", "php"):
        for m in _QX_RE.finditer(code):
            _descend(m.group(1) or m.group(2), st, depth, out)


def _python_module(argv: list[str]) -> list[str] | None:
    """``python -m module args`` -> ``[module, args…]``; None when python runs anything else."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[i + 1 :] or None
        if a.startswith("-m") and len(a) > 2:
            return [a[2:], *argv[i + 1 :]]
        if a in _PY_VALUE:
            i += 2
        elif a.startswith("-c") or not a.startswith("-") or a == "-":
            return None
        else:
            i += 1
    return None


def _shell_args(argv: Sequence[str]) -> tuple[str | None, int]:
    """(the ``-c`` script, or None; index of the first operand) for a shell invocation."""
    i = 1
    has_c = False
    while i < len(argv):
        a = argv[i]
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):
            if a.startswith("--command="):
                return a.partition("=")[2], i + 1
            if a == "--command":
                has_c = True
            i += 2 if a in ("--rcfile", "--init-file") else 1
            continue
        if a[:1] in "-+" and len(a) > 1:
            if a[0] == "-" and "c" in a[1:]:
                has_c = True
            i += 2 if ("o" in a[1:] or "O" in a[1:]) else 1
            continue
        break
    if has_c:
        return (argv[i] if i < len(argv) else ""), i + 1
    return None, i


def _script_of(argv: list[str], base: _Base, st: _State) -> str | None:
    """The text a shell, ``eval``, ``source`` or ``watch`` will run, when it can be known."""
    name = argv[0]
    if name == "eval":
        return " ".join(argv[1:])
    if name == "watch":
        k = _skip_options(argv, 1, _WATCH_VALUE)
        return " ".join(argv[k:]) if k < len(argv) else None
    if name in ("source", "."):
        return st.procs.get(argv[1]) if len(argv) > 1 else None
    script, k = _shell_args(argv)
    if script is not None:
        return script
    if k < len(argv):
        return st.procs.get(argv[k])
    if base.stdin:
        return base.stdin
    return _static_output(base.upstream)


def _git_globals(argv: Sequence[str]) -> tuple[int, dict[str, str]]:
    """(index of git's subcommand, aliases defined inline with ``-c alias.name=value``)."""
    i = 1
    aliases: dict[str, str] = {}
    while i < len(argv):
        a = argv[i]
        if a in _GIT_VALUE:
            if a == "-c" and i + 1 < len(argv):
                key, _, value = argv[i + 1].partition("=")
                if key.lower().startswith("alias."):
                    aliases[key[6:].lower()] = value
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    return i, aliases


def _git_alias(argv: list[str]) -> list[str] | str | None:
    i, aliases = _git_globals(argv)
    if i >= len(argv) or not aliases:
        return None
    value = aliases.get(argv[i].lower())
    if value is None:
        return None
    if value.startswith("!"):
        return " ".join([value[1:], *argv[i + 1 :]])
    return [*argv[:i], *_simple_words(value), *argv[i + 1 :]]


def _git_foreach(argv: Sequence[str]) -> str | None:
    """The command ``git submodule foreach [--recursive] CMD…`` runs in a shell."""
    i, _ = _git_globals(argv)
    if list(argv[i : i + 2]) != ["submodule", "foreach"]:
        return None
    k = _skip_options(argv, i + 2, frozenset())
    return " ".join(argv[k:]) or None


def _find_exec(argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]) -> None:
    """Emit what ``find … -exec CMD {} ;`` runs, with ``{}`` placed under each start path."""
    starts: list[str] = []
    j = 1
    while j < len(argv) and not argv[j].startswith(("-", "(", "!", ")")):
        starts.append(argv[j])
        j += 1
    starts = starts[:4] or ["."]
    while j < len(argv):
        if argv[j] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = j + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            inner = argv[j + 1 : end]
            for start in starts:
                child = posixpath.join(start, "{}")
                _emit([w.replace("{}", child) for w in inner], base, st, depth, out)
            j = end
        j += 1


def _track_state(argv: list[str], st: _State) -> None:
    """Follow ``cd``, ``export``/``declare`` and ``alias`` so later commands read correctly."""
    name = argv[0]
    if name in ("cd", "pushd"):
        k = _skip_options(argv, 1, frozenset())
        st.cwd = _chdir(st.cwd, argv[k] if k < len(argv) else "")
    elif name == "popd":
        st.cwd = None
    elif name == "alias":
        for a in argv[1:]:
            key, eq, value = a.partition("=")
            if eq:
                st.aliases[key] = value
    elif name == "unset":
        for a in argv[1:]:
            st.env.pop(a, None)
    elif name in ("export", "declare", "typeset", "local", "readonly"):
        for a in argv[1:]:
            if _ASSIGN_WORD_RE.match(a):
                key, _, value = a.partition("=")
                st.env[key.rstrip("+")] = value


def _chdir(cwd: str | None, target: str) -> str | None:
    if target.startswith(("$HOME", "${HOME}")):
        target = "~" + target[len("${HOME}") if target.startswith("${") else len("$HOME") :]
    if target in ("", "~"):
        return "~"
    if target == "-" or "$" in target or (target.startswith("~") and not target.startswith("~/")):
        return None
    if target.startswith(("/", "~/")):
        return target
    if cwd is None:
        return None
    return posixpath.join(cwd, target) if cwd else target


def _parse_argv(argv: Sequence[str], st: _State) -> list[Command]:
    text = shlex.join(argv)
    words = [_Tok("w", str(a), 0, len(text), quoted=True) for a in argv]
    out: list[Command] = []
    if words:
        _resolve(_Raw(words, [], []), text, st, 0, out)
    return out


def parse_command(command: str | Sequence[str]) -> list[Command]:
    """Normalise a shell command (text, or an argument vector run without a shell) into
    :class:`Command` objects, in the order they would run. Never raises.

    A checkpoint scanner that crashed would wave the command through, so any unexpected
    error falls back to a tolerant word split of the text.
    """
    st = _State()
    try:
        if isinstance(command, str):
            return _parse(command, st, 0)
        return _parse_argv(list(command), st)
    except Exception:
        text = command if isinstance(command, str) else " ".join(map(str, command))
        return _on_internal_error(text)


def _on_internal_error(text: str) -> list[Command]:
    """Last resort when normalisation itself fails (tests replace this to prove it never does)."""
    return _tolerant_commands(text)


def split_command(command: str | Sequence[str]) -> list[list[str]]:
    """The simple commands (argument vectors) a shell command runs, wrappers stripped and
    nested scripts followed; ``sudo …`` appears as its own entry before the command it runs."""
    return [list(c.argv) for c in parse_command(command) if c.argv]


# --------------------------------------------------------------------------------------------
# Command matchers
# --------------------------------------------------------------------------------------------

_NO_WORKSPACE = "/\x00workspace"
_TEMP_ROOTS = ("/tmp", "/var/tmp", "/private/tmp", "/dev/shm")
_GLOB_RE = re.compile(r"[*?\[]")
_ALL_GLOB_RE = re.compile(r"[*?.\[\]!]*")
_LEADING_VAR_RE = re.compile(r"\$(?:\{(?P<b>[A-Za-z_]\w*)(?P<mod>[^}]*)\}|(?P<n>[A-Za-z_]\w*))")

_FETCHERS = _names("curl wget fetch http https xh xhs curlie aria2c lwp-request")
_RUNS_CODE = _SHELLS | _names(
    "python perl ruby node nodejs php bun deno source . eval osascript pwsh powershell lua"
)
_PRINTERS = frozenset({"echo", "printf"})
_SEARCHERS = _names("grep egrep fgrep zgrep rg ag ack ack-grep git-grep")
_SQL_SILENT = _SEARCHERS | {"git"}
_SQL_PRINTERS = _PRINTERS | {"cat", "tee"}
_SQL_CLIENTS = _names(
    "psql mysql mariadb sqlite3 sqlite sqlcmd clickhouse-client clickhouse duckdb pgcli mycli "
    "litecli usql sqlplus snowsql cockroach bq isql trino presto spark-sql beeline cqlsh"
)
_NOT_FILE_ARGS = _PRINTERS | {"test", "[", "[[", "ls", "stat"}
_TEXT_ONLY = _SEARCHERS | _PRINTERS | {"git"}


def _hits(evidence: str, detail: str = "", always: bool = False) -> tuple[Hit, ...]:
    return (Hit(evidence, detail, always),)


# --- git ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Push:
    targets: tuple[str, ...]
    forced: tuple[str, ...]
    everything: bool
    unknown: bool
    dry: bool


_PUSH_VALUE = frozenset({"--repo", "--push-option", "-o", "--receive-pack", "--exec"})


def _parse_push(args: Sequence[str]) -> _Push:
    forced: list[str] = []
    positional: list[str] = []
    dry = everything = tags = False
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a.startswith("--"):
            opt = a.partition("=")[0]
            if opt in ("--force", "--force-with-lease", "--mirror", "--delete", "--prune"):
                forced.append(opt)
            elif opt in ("--all", "--branches"):
                everything = True
            elif opt in ("--tags", "--follow-tags"):
                tags = True
            elif opt == "--dry-run":
                dry = True
            elif opt in _PUSH_VALUE and "=" not in a:
                i += 1
            continue
        if a.startswith("-") and len(a) > 1:
            for k, ch in enumerate(a[1:], start=1):
                if ch == "f":
                    forced.append("-f")
                elif ch == "d":
                    forced.append("-d")
                elif ch == "n":
                    dry = True
                elif ch == "o":
                    i += k == len(a) - 1
                    break
            continue
        positional.append(a)
    targets: list[str] = []
    unknown = len(positional) < 2 and not everything and not tags
    for spec in positional[1:]:
        if spec.startswith("+"):
            forced.append(spec)
            spec = spec[1:]
        if spec == ":":
            everything = True
            continue
        src, colon, dst = spec.partition(":")
        if colon and not src:
            forced.append(f"delete {dst}")
        dst = (dst or src) if colon else src
        dst = dst.removeprefix("refs/heads/")
        if dst in ("HEAD", "@", ""):
            unknown = True
        else:
            targets.append(dst)
    return _Push(tuple(targets), tuple(forced), everything, unknown, dry)


@functools.lru_cache(maxsize=512)
def _push_of(argv: tuple[str, ...]) -> _Push | None:
    i, _ = _git_globals(argv)
    if i < len(argv) and argv[i] == "push":
        return _parse_push(argv[i + 1 :])
    return None


def _git_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    push = _push_of(cmd.argv)
    if push is None or push.dry:
        return ()
    if push.everything:
        detail = "all branches"
    elif push.targets:
        detail = "to " + ", ".join(push.targets)
    else:
        detail = "target unknown: no refspec, so push.default and the upstream decide"
    return _hits(cmd.text, detail)


def _git_force_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    push = _push_of(cmd.argv)
    if push is None or push.dry or not push.forced:
        return ()
    return _hits(cmd.text, ", ".join(dict.fromkeys(push.forced)), always=True)


def _is_protected(branch: str, protected: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(branch, pat) for pat in protected)


def _git_push_protected(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    if cmd.program == "gh":
        ops = [a for a in cmd.argv[1:] if not a.startswith("-")]
        if ops[:2] == ["pr", "merge"]:
            return _hits(cmd.text, "merges a pull request into its base branch", always=True)
        return ()
    push = _push_of(cmd.argv)
    if push is None or push.dry:
        return ()
    hit = [t for t in push.targets if _is_protected(t, ctx.protected_branches)]
    if push.everything:
        hit.append("every branch (--all, --mirror or ':')")
    if not hit:
        return ()
    return _hits(cmd.text, "to " + ", ".join(hit), always=True)


# --- publishing -----------------------------------------------------------------------------


def _operands(argv: Sequence[str], takes_value: frozenset[str] = frozenset()) -> list[str]:
    """The non-option words of a command line after its program name."""
    out: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            out.extend(argv[i:])
            break
        if len(a) > 1 and a[0] == "-":
            if a in takes_value:
                i += 1
            continue
        out.append(a)
    return out


_NPM_VALUE = _names(
    "--registry -w --workspace --prefix -C --dir --filter --cwd --userconfig --otp --tag "
    "--access -F"
)


def _unless_dry_run(matcher: CommandMatcher) -> CommandMatcher:
    """A publish with ``--dry-run`` uploads nothing, so it needs nobody."""

    def check(cmd: Command, ctx: ScanContext) -> Iterable[Hit]:
        return () if "--dry-run" in cmd.argv else matcher(cmd, ctx)

    return check


def _publish_npm(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    ops = _operands(cmd.argv, _NPM_VALUE)
    name = cmd.program
    if ops[:1] == ["publish"] or (name == "yarn" and ops[:2] == ["npm", "publish"]):
        return _hits(cmd.text, f"{name} publish")
    return ()


_PYPI_TOOLS = {
    "twine": ("upload", "register"),
    "uv": ("publish",),
    "poetry": ("publish",),
    "flit": ("publish",),
    "hatch": ("publish",),
    "pdm": ("publish",),
    "maturin": ("publish", "upload"),
}


def _publish_pypi(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    argv = cmd.argv
    if argv[0] == "python":
        if len(argv) > 2 and argv[1].endswith("setup.py") and "upload" in argv[2:]:
            return _hits(cmd.text, "setup.py upload")
        return ()
    ops = _operands(argv, frozenset({"-r", "--repository", "--repository-url", "-u", "-p"}))
    if ops and ops[0] in _PYPI_TOOLS.get(argv[0], ()):
        return _hits(cmd.text, f"{argv[0]} {ops[0]}")
    return ()


def _publish_cargo(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    ops = [
        o
        for o in _operands(cmd.argv, frozenset({"--manifest-path", "-Z", "--config", "-C"}))
        if not o.startswith("+")
    ]
    return _hits(cmd.text, "cargo publish") if ops[:1] == ["publish"] else ()


def _publish_gem(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    ops = _operands(cmd.argv, frozenset({"-k", "--key", "--host"}))
    if cmd.program == "gem" and ops[:1] == ["push"]:
        return _hits(cmd.text, "gem push")
    if cmd.program == "rake" and any(o == "release" or o.startswith("release[") for o in ops):
        return _hits(cmd.text, "rake release")
    return ()


_DOCKER_VALUE = _names(
    "--context -c -H --host --config -l --log-level --tlscacert --tlscert --tlskey -t --tag -f "
    "--file --platform --build-arg --target --network --output -o --cache-from --cache-to "
    "--secret"
)


def _docker_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    argv = cmd.argv
    ops = _operands(argv, _DOCKER_VALUE)
    if argv[0] == "skopeo":
        if ops[:1] == ["copy"] and any(o.startswith("docker://") for o in ops[2:]):
            return _hits(cmd.text, "skopeo copy to a registry")
        return ()
    if ops[:1] == ["push"] or ops[:2] in (
        ["image", "push"],
        ["manifest", "push"],
        ["compose", "push"],
    ):
        return _hits(cmd.text, f"{argv[0]} push")
    builds = ops[:1] == ["build"] or ops[:2] in (
        ["buildx", "build"],
        ["buildx", "bake"],
        ["image", "build"],
    )
    if builds and ("--push" in argv or any("type=registry" in a for a in argv)):
        return _hits(cmd.text, f"{argv[0]} build --push")
    return ()


def _gh_release(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    ops = _operands(cmd.argv, frozenset({"-R", "--repo"}))
    if ops[:1] == ["release"] and ops[1:2] and ops[1] in ("create", "upload", "edit", "delete"):
        return _hits(cmd.text, f"gh release {ops[1]}")
    return ()


# --- rm -rf ---------------------------------------------------------------------------------


def _rm_targets(argv: Sequence[str]) -> list[str] | None:
    """Operands of a recursive ``rm`` (or the start paths of ``find … -delete``); None if the
    command does not delete recursively."""
    if argv[0] == "find":
        if "-delete" not in argv:
            return None
        starts = []
        for a in argv[1:]:
            if a.startswith(("-", "(", "!")):
                break
            starts.append(a)
        # find deletes what matches under its start paths, not the start paths themselves
        return [posixpath.join(start, "{}") for start in starts or ["."]]
    recursive = False
    operands: list[str] = []
    options_done = False
    for a in argv[1:]:
        if not options_done and a == "--":
            options_done = True
        elif not options_done and len(a) > 1 and a[0] == "-":
            recursive = recursive or a == "--recursive" or (a[1] != "-" and ("r" in a or "R" in a))
        else:
            operands.append(a)
    return operands if recursive else None


def _deletion_reason(path: str, ctx: ScanContext) -> tuple[str, bool] | None:
    """Why recursively deleting the absolute, normalised ``path`` needs a person."""
    parts = path.split("/")
    for idx, part in enumerate(parts):
        if _GLOB_RE.search(part):
            keep = idx if _ALL_GLOB_RE.fullmatch(part) else idx + 1
            path = "/".join(parts[:keep]) or "/"
            break
    ws = posixpath.normpath(ctx.workspace) if ctx.workspace else _NO_WORKSPACE
    home = posixpath.normpath(ctx.home) if ctx.home else ""
    if path == "/":
        return "the filesystem root", True
    if path == ws:
        return "the whole workspace", False
    if path.startswith(ws + "/"):
        return None
    if home and path == home:
        return "the home directory", True
    if home and home.startswith(path + "/"):
        return "a directory that contains the home directory", True
    if ws.startswith(path + "/"):
        return "a directory that contains the workspace", True
    if any(path.startswith(t + "/") for t in _TEMP_ROOTS):
        return None
    return "outside the workspace", False


def _expand_home(path: str, home: str) -> str | None:
    """``~``, ``~/x``, ``$HOME/x`` -> absolute; ``~user`` -> None (someone else's home)."""
    for prefix in ("${HOME}", "$HOME"):
        if path == prefix or path.startswith(prefix + "/"):
            return home + path[len(prefix) :]
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    if path.startswith("~"):
        return None
    return path


_TEMP_VARS = _names("TMPDIR TMP TEMP RUNNER_TEMP")


def _rm_reason(operand: str, cwd: str | None, ctx: ScanContext) -> tuple[str, bool] | None:
    """Why ``rm -r operand`` needs a person and whether always; None when it stays inside."""
    if operand.startswith("$(pwd)"):
        operand = "." + operand[len("$(pwd)") :]
    m = _LEADING_VAR_RE.match(operand)
    if m is not None and not operand.startswith(("$HOME", "${HOME}")):
        var, rest = m.group("b") or m.group("n"), operand[m.end() :]
        guarded = (m.group("mod") or "").lstrip(":").startswith("?")  # ${X:?} stops if unset
        if var == "PWD":
            operand = "." + rest
        elif var in _TEMP_VARS or guarded or not rest.startswith("/"):
            return None
        else:
            return f"starts with ${var}: empty or unset, it deletes {rest}", False
    if operand.startswith(("$(", "`", "<(")) or "$(" in operand.split("/", 1)[0]:
        return None
    expanded = _expand_home(operand, ctx.home)
    if expanded is None:
        return "another user's home directory", True
    if not expanded.startswith("/"):
        if cwd is None:
            return None
        where = _expand_home(cwd, ctx.home)
        if where is None:
            return None
        expanded = posixpath.join(ctx.workspace or _NO_WORKSPACE, where, expanded)
    return _deletion_reason(posixpath.normpath(expanded), ctx)


def _rm_outside(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    targets = _rm_targets(cmd.argv)
    if not targets:
        return ()
    hits: list[Hit] = []
    for operand in targets:
        reason = _rm_reason(operand, cmd.cwd, ctx)
        if reason is not None:
            hits.append(Hit(cmd.text, f"{operand}: {reason[0]}", reason[1]))
    if not hits:
        return ()
    return (Hit(cmd.text, "; ".join(h.detail for h in hits), any(h.always for h in hits)),)


# --- SQL ------------------------------------------------------------------------------------

_SQL_HINTS = ("drop", "truncate", "delete")
_SQL_CODE = _SQL_CLIENTS | _names("python perl ruby node nodejs php bun deno java dotnet go")
_IDENT = r"[\w.\"`\[\]]"


def _both(source: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(upper-case keywords only, any case): prose says "delete from the list", SQL in code
    and in SQL clients may be lower case."""
    return re.compile(source), re.compile(source, re.IGNORECASE)


_DROP = _both(rf"\bDROP\s+(?:TEMPORARY\s+)?(?:TABLE|DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?{_IDENT}")
_TRUNCATE_TABLE = _both(rf"\bTRUNCATE\s+TABLE\s+{_IDENT}")
_TRUNCATE_BARE = _both(rf"\bTRUNCATE\s+(?:ONLY\s+)?{_IDENT}")
_DELETE = _both(rf"\bDELETE\s+FROM\s+{_IDENT}+")
_WHERE_RE = re.compile(r"(?i)\bWHERE\b")
_WHERE_ALL_RE = re.compile(r"(?i)\bWHERE\s+(?:1\s*=\s*1|TRUE|1|'1'\s*=\s*'1')\s*[\"')]*\s*$")


def _sql_texts(cmd: Command) -> list[tuple[str, bool, bool]]:
    """The strings of a command that may be SQL someone runs (see the module notes), each with
    (read in any case: code or SQL input; a SQL client's own input)."""
    name = cmd.program
    if not name or name in _SQL_SILENT or (name in _SQL_PRINTERS and not cmd.piped):
        return []
    code = name in _SQL_CODE
    client = name in _SQL_CLIENTS
    texts = [(arg, code, client) for arg in cmd.argv[1:]]
    if cmd.stdin:
        texts.append((cmd.stdin, True, True))
    return texts


def _statement(text: str, start: int) -> str:
    end = text.find(";", start)
    end = len(text) if end < 0 else end + 1
    return text[start : min(end, start + 160)]


def _sql_drop(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    for text, any_case, _ in _sql_texts(cmd):
        m = _DROP[any_case].search(text)
        if m is not None:
            return _hits(_statement(text, m.start()), "DROP")
    return ()


def _sql_truncate(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    for text, any_case, client in _sql_texts(cmd):
        m = _TRUNCATE_TABLE[any_case].search(text) or _TRUNCATE_BARE[client].search(text)
        if m is not None:
            return _hits(_statement(text, m.start()), "TRUNCATE")
    return ()


def _sql_delete(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    for text, any_case, _ in _sql_texts(cmd):
        for m in _DELETE[any_case].finditer(text):
            stmt = _statement(text, m.start())
            rest = stmt[m.end() - m.start() :].rstrip(" ;\n")
            if not _WHERE_RE.search(rest):
                return _hits(stmt, "DELETE without WHERE")
            if _WHERE_ALL_RE.search(rest):
                return _hits(stmt, "DELETE with a WHERE that matches every row")
    return ()


# --- files: .env and credentials ------------------------------------------------------------

_ENV_TEMPLATES = _names("example sample template dist tmpl tpl defaults")
_CRED_NAMES = _names(
    "id_rsa id_dsa id_ecdsa id_ed25519 id_ecdsa_sk id_ed25519_sk .npmrc .pypirc .netrc _netrc "
    ".git-credentials credentials credentials.json .pgpass .htpasswd .dockercfg kubeconfig "
    ".my.cnf secrets.yml secrets.yaml secrets.json master.key"
)
_CRED_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore", ".p8", ".kdbx")
_CRED_DIR_RE = re.compile(
    r"(?:^|[/:=@~])\.(?:ssh|aws|gnupg|azure)(?:/|$)|(?:^|/)\.config/(?:gh|gcloud)(?:/|$)"
    r"|(?:^|/)\.kube/config$|(?:^|/)\.docker/config\.json$"
)
_FILE_HINTS = (
    ".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".pem", ".key", ".p12", ".pfx", ".ppk",
    ".jks", ".keystore", ".p8", ".kdbx", "npmrc", "pypirc", "netrc", "credential", ".ssh",
    ".aws", ".gnupg", ".azure", ".kube", ".docker", ".config/g", "pgpass", "htpasswd",
    "dockercfg", "kubeconfig", "my.cnf", "secrets.", "client_secret",
)  # fmt: skip


def classify_path(path: str) -> tuple[str, str] | None:
    """("env-file" | "credential-file", what it is) for a path that holds secrets, else None."""
    p = path.strip().rstrip("/")
    if "://" not in p and ":" in p:
        p = p.rsplit(":", 1)[1]
    base = p.rsplit("/", 1)[-1]
    low = base.lower()
    if low in (".env", ".envrc"):
        return "env-file", base
    if low.startswith(".env."):
        return None if low[5:] in _ENV_TEMPLATES else ("env-file", base)
    if low.startswith(".env") and _GLOB_RE.search(low):
        return "env-file", f"{base} (a glob that matches .env files)"
    if low.endswith(".pub"):
        return None
    if low in _CRED_NAMES or (low.startswith("client_secret") and low.endswith(".json")):
        return "credential-file", base
    if low.endswith(_CRED_SUFFIXES):
        return "credential-file", f"{base} (key or certificate file)"
    if _CRED_DIR_RE.search(p):
        return "credential-file", f"{p} (credential directory)"
    return None


def _file_operands(cmd: Command) -> list[str]:
    """Words of a command that name files it reads or writes, plus redirection targets."""
    out: list[str] = []
    name = cmd.program
    if name and name not in _NOT_FILE_ARGS:
        args = list(cmd.argv[1:])
        if name in _SEARCHERS and not any(a in ("-e", "-f", "--regexp", "--file") for a in args):
            ops = [i for i, a in enumerate(args) if not a.startswith("-")]
            if ops:
                del args[ops[0]]
        for a in args:
            if a.startswith("-"):
                if "=" in a:
                    out.append(a.partition("=")[2])
                continue
            out.append(a.lstrip("@"))
    out.extend(target for _, target in cmd.redirects)
    return out


def _file_hits(cmd: Command, wanted: str) -> tuple[Hit, ...]:
    found = []
    for operand in _file_operands(cmd):
        kind = classify_path(operand)
        if kind is not None and kind[0] == wanted:
            found.append(kind[1])
    if not found:
        return ()
    return _hits(cmd.text, ", ".join(dict.fromkeys(found)))


def _env_file(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    return _file_hits(cmd, "env-file")


def _credential_file(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    return _file_hits(cmd, "credential-file")


def _path_hits(path: str, wanted: str) -> tuple[Hit, ...]:
    kind = classify_path(path)
    return _hits(path, kind[1]) if kind is not None and kind[0] == wanted else ()


def _env_path(path: str) -> tuple[Hit, ...]:
    return _path_hits(path, "env-file")


def _credential_path(path: str) -> tuple[Hit, ...]:
    return _path_hits(path, "credential-file")


# --- payments, curl | sh, sudo --------------------------------------------------------------

_PAYMENT_HINTS = ("stripe", "paypal", "braintree", "squareup", "adyen")
_PAYMENT_HOST_RE = re.compile(
    r"(?i)\b(?:api|files|connect|uploads)\.stripe\.com\b|\bapi(?:-m)?(?:\.sandbox)?\.paypal\.com\b"
    r"|\b(?:api|payments)(?:\.sandbox)?\.braintreegateway\.com\b"
    r"|\b(?:[\w-]+\.)*squareup(?:sandbox)?\.com\b|\b(?:[\w-]+\.)+adyen\.com\b"
)


def _payment_api(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    if cmd.program == "stripe":
        return _hits(cmd.text, "stripe CLI")
    if cmd.program in _TEXT_ONLY:
        return ()
    m = _PAYMENT_HOST_RE.search(cmd.blob)
    return _hits(cmd.text, m.group().lower()) if m else ()


def _curl_pipe_shell(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    if not cmd.upstream and not cmd.substitutions:
        return ()
    name = cmd.program
    piped = any(a and a[0] in _FETCHERS for a in cmd.upstream)
    substituted = any(a and a[0] in _FETCHERS for a in cmd.substitutions)
    if name in _RUNS_CODE and (piped or substituted):
        how = "piped into" if piped else "substituted into"
        return _hits(cmd.text, f"downloaded content {how} {name}")
    if substituted and name.startswith(("$(", "<(")):
        return _hits(cmd.text, "downloaded content run as a command")
    return ()


def _sudo(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    return _hits(cmd.text, cmd.program)


# --- diff lines -----------------------------------------------------------------------------


def _secret_hits(line: str) -> list[Hit]:
    """Secrets on one added line: provider token shapes, private keys, secret assignments."""
    hits: list[Hit] = []
    spans: list[tuple[int, int]] = []
    for m in _SECRET_RE.finditer(line) if _may_hold_token(line) else ():
        label = m.lastgroup or ""
        if label == "openai" and shannon_entropy(m.group()) < 3.0:
            continue
        spans.append(m.span())
        hits.append(Hit(line, _SECRET_LABELS.get(label, label)))
    for start, end, quoted in _assignments(line):
        if any(s < end and start < e for s, e in spans):
            continue
        if _looks_secret(line[start:end], quoted):
            spans.append((start, end))
            hits.append(Hit(line, "generic high-entropy assignment"))
    for m in _URL_CRED_RE.finditer(line) if _may_hold_url_password(line) else ():
        pw = m.group("pw")
        if not any(s < m.end() and m.start() < e for s, e in spans) and _looks_secret(
            pw, quoted=True, minimum=8
        ):
            hits.append(Hit(line, "password in a URL"))
    return hits


# --------------------------------------------------------------------------------------------
# Default patterns
# --------------------------------------------------------------------------------------------

_PUBLISH_WHY = "publishing a release is public and cannot be taken back; a person must approve it"


def _build_defaults() -> tuple[Pattern, ...]:
    def cmd(
        pid: str,
        message: str,
        matcher: CommandMatcher,
        programs: Iterable[str] | None = None,
        hint: tuple[str, ...] = (),
    ) -> Pattern:
        names = frozenset(programs) if programs is not None else None
        return Pattern(pid, "command", message, match_command=matcher, programs=names, hint=hint)

    return (
        cmd(
            "git-push",
            "Pushing publishes the agent's work to a shared remote; a person "
            "decides when that happens.",
            _git_push,
            ["git"],
        ),
        cmd(
            "git-force-push",
            "A force push, mirror push or remote branch deletion can destroy "
            "history others rely on; a person must approve each one.",
            _git_force_push,
            ["git"],
        ),
        cmd(
            "git-push-protected",
            "Protected branches reach everyone; only a person may push or merge into them.",
            _git_push_protected,
            ["git", "gh"],
        ),
        cmd(
            "publish-npm",
            f"npm package: {_PUBLISH_WHY}.",
            _unless_dry_run(_publish_npm),
            ["npm", "yarn", "pnpm", "bun", "lerna", "changeset"],
        ),
        cmd(
            "publish-pypi",
            f"Python package: {_PUBLISH_WHY}.",
            _unless_dry_run(_publish_pypi),
            ["twine", "uv", "poetry", "flit", "hatch", "pdm", "maturin", "python"],
        ),
        cmd(
            "publish-cargo",
            f"Rust crate: {_PUBLISH_WHY}.",
            _unless_dry_run(_publish_cargo),
            ["cargo"],
        ),
        cmd(
            "publish-gem",
            f"Ruby gem: {_PUBLISH_WHY}.",
            _unless_dry_run(_publish_gem),
            ["gem", "rake"],
        ),
        cmd(
            "docker-push",
            f"Container image: {_PUBLISH_WHY}.",
            _docker_push,
            ["docker", "podman", "nerdctl", "buildah", "skopeo"],
        ),
        cmd("gh-release", f"GitHub release: {_PUBLISH_WHY}.", _gh_release, ["gh"]),
        cmd(
            "rm-rf-outside",
            "Recursive deletion outside the workspace, or of home or root, "
            "destroys data the agent does not own.",
            _rm_outside,
            ["rm", "find"],
        ),
        cmd(
            "sql-drop",
            "DROP destroys a table, database or schema irreversibly.",
            _sql_drop,
            None,
            _SQL_HINTS,
        ),
        cmd(
            "sql-truncate",
            "TRUNCATE deletes every row of a table irreversibly.",
            _sql_truncate,
            None,
            _SQL_HINTS,
        ),
        cmd(
            "sql-delete-no-where",
            "DELETE without a WHERE clause deletes every row of a table.",
            _sql_delete,
            None,
            _SQL_HINTS,
        ),
        cmd(
            "env-file",
            "A .env file holds secrets: reading one leaks them into the agent's "
            "context and logs, writing one changes real configuration.",
            _env_file,
            None,
            _FILE_HINTS,
        ),
        cmd(
            "credential-file",
            "Key and credential files grant access to other systems; only "
            "a person may read, copy or change them.",
            _credential_file,
            None,
            _FILE_HINTS,
        ),
        cmd(
            "payment-api",
            "A payment API call can move real money.",
            _payment_api,
            None,
            _PAYMENT_HINTS,
        ),
        cmd(
            "curl-pipe-shell",
            "Running a script straight from the network executes code nobody has reviewed.",
            _curl_pipe_shell,
        ),
        cmd(
            "sudo",
            "Elevated privileges reach outside the sandbox the agent was given.",
            _sudo,
            _ELEVATORS,
        ),
        Pattern(
            "secret-in-diff",
            "diff",
            "A secret in the diff is exposed once it is pushed; "
            "it must be removed and rotated, which takes a person.",
            match_text=_secret_hits,
        ),
        Pattern(
            "env-file",
            "path",
            "A .env file holds secrets and must not enter the repository.",
            match_text=_env_path,
        ),
        Pattern(
            "credential-file",
            "path",
            "Key and credential files must not enter the repository.",
            match_text=_credential_path,
        ),
    )


_DEFAULTS = _build_defaults()


def default_patterns() -> tuple[Pattern, ...]:
    """The built-in checkpoints; every id is stable and can be named in ``disable``."""
    return _DEFAULTS


def patterns_from_contract(
    checkpoints: Mapping[str, Any] | None, extra: Iterable[Pattern] = ()
) -> tuple[Pattern, ...]:
    """Defaults and plugin patterns minus the contract's ``disable``, plus its ``add``.

    ``disable`` applies to built-in and plugin ids alike (unknown ids are ignored: the safe
    direction is to keep checking). Added patterns are regexes; an invalid one raises
    :class:`ValueError` naming its id, because a checkpoint that silently never matches is
    worse than a contract that does not load.
    """
    checkpoints = checkpoints or {}
    disabled = frozenset(checkpoints.get("disable") or ())
    kept = [p for p in (*_DEFAULTS, *extra) if p.id not in disabled]
    kept.extend(_contract_pattern(entry) for entry in checkpoints.get("add") or ())
    return tuple(kept)


def _contract_pattern(entry: Mapping[str, Any]) -> Pattern:
    pid = str(entry.get("id") or "")
    if not pid:
        raise ValueError("checkpoint without an id in checkpoints.add")
    kind = entry.get("kind", "command")
    if kind not in KINDS:
        raise ValueError(f"checkpoint {pid!r}: kind must be one of {', '.join(KINDS)}")
    source = entry.get("pattern")
    if not isinstance(source, str) or not source:
        raise ValueError(f"checkpoint {pid!r}: 'pattern' must be a non-empty regular expression")
    try:
        regex = re.compile(source)
    except re.error as exc:
        raise ValueError(
            f"checkpoint {pid!r}: invalid regular expression {source!r}: {exc}"
        ) from exc
    message = entry.get("message") or f"The contract's checkpoint {pid!r} needs a person."
    return Pattern(pid, kind, str(message), regex=regex, origin="contract")


# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """Which command patterns to try for a program: (without a hint, with a hint)."""

    by_program: Mapping[str, tuple[tuple[Pattern, ...], tuple[Pattern, ...]]]
    universal: tuple[tuple[Pattern, ...], tuple[Pattern, ...]]
    gate: re.Pattern[str]  # every hint at once: one search rules most commands out
    raw: tuple[Pattern, ...]  # regex patterns for every program, also tried on the whole input


@functools.lru_cache(maxsize=64)
def _plan(patterns: tuple[Pattern, ...]) -> _Plan:
    """Dispatch table: which command patterns to try for which program name."""
    commands = [p for p in patterns if p.kind == "command"]

    def split(chosen: list[Pattern]) -> tuple[tuple[Pattern, ...], tuple[Pattern, ...]]:
        return (
            tuple(p for p in chosen if not p.hint),
            tuple(p for p in chosen if p.hint),
        )

    universal = [p for p in commands if p.programs is None]
    names = {name for p in commands if p.programs is not None for name in p.programs}
    by_program = {
        name: split([p for p in commands if p.programs is None or name in p.programs])
        for name in names
    }
    hints = sorted({h.lower() for p in commands for h in p.hint}, key=len, reverse=True)
    gate = re.compile("|".join(map(re.escape, hints)) or "(?!)")
    raw = tuple(p for p in universal if p.regex is not None)
    return _Plan(by_program, split(universal), gate, raw)


def _to_match(
    pattern: Pattern, kind: str, hit: Hit, path: str = "", line: int | None = None
) -> Match:
    message = f"{pattern.message} [{hit.detail}]" if hit.detail else pattern.message
    evidence = _evidence(hit.evidence)
    return Match(pattern.id, kind, message, evidence, path, line, hit.always or pattern.always)


_PLAN_CACHE: dict[int, tuple[tuple[Pattern, ...], _Plan]] = {}


def _plan_for(patterns: Sequence[Pattern]) -> _Plan:
    """The dispatch plan, cached by identity for tuples (``default_patterns()`` and the result
    of ``patterns_from_contract`` are reused call after call), so scans do not rehash them."""
    if isinstance(patterns, tuple):
        entry = _PLAN_CACHE.get(id(patterns))
        if entry is not None and entry[0] is patterns:
            return entry[1]
        plan = _plan(patterns)
        if len(_PLAN_CACHE) > 64:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[id(patterns)] = (patterns, plan)
        return plan
    return _plan(tuple(patterns))


def _regex_command_hits(pattern: Pattern, cmd: Command) -> tuple[Hit, ...]:
    assert pattern.regex is not None
    m = pattern.regex.search(" ".join(cmd.argv)) or pattern.regex.search(cmd.text)
    return _hits(cmd.text) if m else ()


def _home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def scan_command(
    command: str | Sequence[str],
    patterns: Sequence[Pattern],
    *,
    workspace: Path | str | None = None,
    protected_branches: Sequence[str] = DEFAULT_PROTECTED_BRANCHES,
    home: str | None = None,
) -> list[Match]:
    """Checkpoint matches for a command the agent is about to run (text or argument vector).

    ``workspace`` anchors relative paths for ``rm`` (None: the command runs in an unnamed
    workspace and every absolute path is outside it); ``home`` defaults to the user's home.
    """
    plan = _plan_for(patterns)
    ws = os.path.normpath(os.path.abspath(workspace)) if workspace is not None else None
    ctx = ScanContext(ws, home if home is not None else _home(), tuple(protected_branches))
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for cmd in parse_command(command):
        plain, hinted = plan.by_program.get(cmd.program, plan.universal)
        chosen: Iterable[Pattern] = plain
        if hinted:
            low = cmd.blob.lower()
            if plan.gate.search(low):
                chosen = (*plain, *(p for p in hinted if any(h in low for h in p.hint)))
        for pattern in chosen:
            for hit in _command_hits(pattern, cmd, ctx):
                match = _to_match(pattern, "command", hit)
                if (match.pattern_id, match.evidence) not in seen:
                    seen.add((match.pattern_id, match.evidence))
                    matches.append(match)
    if plan.raw:
        # A contract regex may describe the raw text (say, a pipe): try it there as well.
        text = command if isinstance(command, str) else shlex.join(command)
        found = {m.pattern_id for m in matches}
        for pattern in plan.raw:
            if pattern.id not in found and pattern.regex and pattern.regex.search(text):
                matches.append(_to_match(pattern, "command", Hit(text)))
    return matches


def _command_hits(pattern: Pattern, cmd: Command, ctx: ScanContext) -> Iterable[Hit]:
    if pattern.match_command is not None:
        return pattern.match_command(cmd, ctx)
    return _regex_command_hits(pattern, cmd)


def scan_paths(paths: Iterable[str], patterns: Sequence[Pattern]) -> list[Match]:
    """Checkpoint matches for file paths (files a candidate adds or changes, say)."""
    path_patterns = [p for p in patterns if p.kind == "path"]
    matches: list[Match] = []
    for path in paths:
        for pattern in path_patterns:
            matches.extend(
                _to_match(pattern, "path", hit, path) for hit in _text_hits(pattern, path)
            )
    return matches


def _text_hits(pattern: Pattern, text: str) -> Iterable[Hit]:
    if pattern.match_text is not None:
        return pattern.match_text(text)
    assert pattern.regex is not None
    return _hits(text) if pattern.regex.search(text) else ()


# --- unified diffs --------------------------------------------------------------------------


@dataclass
class _FileDiff:
    path: str
    deleted: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)


_HUNK_RE = re.compile(r"@@+ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_QUOTE_RE = re.compile(r"\\([0-7]{3}|.)")


def _unquote_git_path(path: str) -> str:
    """Git quotes unusual paths C-style ("a/caf\\303\\251"); undo that."""
    if not (len(path) >= 2 and path[0] == path[-1] == '"'):
        return path
    simple = {
        "n": b"\n",
        "t": b"\t",
        "\\": b"\\",
        '"': b'"',
        "a": b"\a",
        "b": b"\b",
        "f": b"\f",
        "r": b"\r",
        "v": b"\v",
    }
    out = bytearray()
    body = path[1:-1]
    i = 0
    for m in _GIT_QUOTE_RE.finditer(body):
        out += body[i : m.start()].encode()
        esc = m.group(1)
        out += bytes([int(esc, 8) & 0xFF]) if esc[0].isdigit() else simple.get(esc, esc.encode())
        i = m.end()
    out += body[i:].encode()
    return out.decode("utf-8", "replace")


def _strip_ab(path: str) -> str:
    path = _unquote_git_path(path.split("\t", 1)[0].rstrip())
    return path[2:] if path.startswith(("a/", "b/")) else path


def _header_path(line: str) -> str:
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        tail = rest[end + 2 :] if end > 0 else rest
        return _strip_ab(tail)
    if rest.startswith("a/") and (len(rest) - 5) % 2 == 0:
        half = (len(rest) - 5) // 2
        if rest[2 + half : 5 + half] == " b/":
            return rest[5 + half :]
    idx = rest.find(" b/")
    return rest[idx + 3 :] if idx >= 0 else _strip_ab(rest)


def _parse_diff(text: str) -> list[_FileDiff]:
    files: list[_FileDiff] = []
    cur: _FileDiff | None = None
    old_left = new_left = 0
    new_line = 0
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if cur is not None and (old_left > 0 or new_left > 0):
            tag = line[:1]
            if tag == "+":
                cur.added.append((new_line, line[1:]))
                new_line += 1
                new_left -= 1
                continue
            if tag == "-":
                old_left -= 1
                continue
            if tag in (" ", ""):
                new_line += 1
                old_left -= 1
                new_left -= 1
                continue
            if tag == "\\":
                continue
            old_left = new_left = 0
        if line.startswith("diff --git "):
            cur = _FileDiff(_header_path(line))
            files.append(cur)
        elif line.startswith("--- ") and (cur is None or cur.added):
            cur = _FileDiff(_strip_ab(line[4:]))
            files.append(cur)
        elif cur is None:
            continue
        elif line.startswith("+++ "):
            target = line[4:].split("\t", 1)[0].rstrip()
            if target == "/dev/null":
                cur.deleted = True
            else:
                cur.path = _strip_ab(target)
        elif line.startswith("deleted file mode"):
            cur.deleted = True
        elif line.startswith(("rename to ", "copy to ")):
            cur.path = _unquote_git_path(line.split(" to ", 1)[1])
        elif line.startswith("@@"):
            m = _HUNK_RE.match(line)
            if m is not None:
                old_left = int(m.group(1)) if m.group(1) is not None else 1
                new_left = int(m.group(3)) if m.group(3) is not None else 1
                new_line = int(m.group(2))
    return files


_YAML_KEY_RE = re.compile(r"[\w.-]+\s*:(?:\s|$)")
_YAML_RUN_RE = re.compile(
    r"(?:run|script|before_script|after_script|command|entrypoint)\s*:\s*(.*)"
)
_DOCKER_RE = re.compile(r"(?i)\s*([A-Z]+)\s+(.*)")
_DOCKER_INSTRUCTIONS = _names(
    "FROM COPY ADD ENV ARG LABEL WORKDIR USER EXPOSE VOLUME CMD ENTRYPOINT HEALTHCHECK SHELL "
    "STOPSIGNAL ONBUILD MAINTAINER RUN"
)


def _script_flavour(path: str) -> str | None:
    """How the added lines of ``path`` execute: "shell", "make", "docker", "ci" or None."""
    base = posixpath.basename(path)
    low = base.lower()
    if low.endswith((".sh", ".bash", ".zsh", ".ksh")) or path.startswith((".husky/", ".githooks/")):
        return "shell"
    if base in ("Makefile", "makefile", "GNUmakefile") or low.endswith(".mk"):
        return "make"
    if low.startswith(("dockerfile", "containerfile")) or low.endswith(".dockerfile"):
        return "docker"
    workflow = ("/" + path).find("/.github/workflows/") >= 0 or path.startswith(".circleci/")
    if (workflow and low.endswith((".yml", ".yaml"))) or low == ".gitlab-ci.yml":
        return "ci"
    return None


def _script_command(flavour: str, line: str) -> str | Sequence[str] | None:
    """The shell command on one added line of a script-like file, or None."""
    if flavour == "make":
        if not line.startswith("\t"):
            return None
        return line.strip().lstrip("@-+") or None
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if flavour == "docker":
        m = _DOCKER_RE.match(line)
        if m is None or m.group(1).upper() not in _DOCKER_INSTRUCTIONS:
            return stripped  # a continuation line of a RUN
        instruction, rest = m.group(1).upper(), m.group(2).strip()
        if instruction in ("RUN", "CMD", "ENTRYPOINT"):
            if rest.startswith("["):
                try:
                    argv = json.loads(rest)
                except ValueError:
                    return rest
                return [str(a) for a in argv] if isinstance(argv, list) else rest
            return rest
        return stripped if instruction in ("COPY", "ADD") else None
    if flavour == "ci":
        if stripped.startswith("- "):
            stripped = stripped[2:].lstrip()
        m = _YAML_RUN_RE.match(stripped)
        if m is not None:
            stripped = m.group(1).strip()
            if stripped in ("", "|", ">", "|-", ">-", "|+", ">+"):
                return None
            if len(stripped) > 1 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
                stripped = stripped[1:-1]
        elif _YAML_KEY_RE.match(stripped):
            return None
    return stripped


def _joined_lines(added: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join added lines ending in a backslash with the consecutive line that follows."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    prev = -2
    for lineno, text in added:
        if pending is not None and lineno == prev + 1:
            pending = (pending[0], pending[1][:-1] + " " + text.strip())
        else:
            if pending is not None:
                out.append(pending)
            pending = (lineno, text)
        prev = lineno
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
        else:
            pending = (pending[0], pending[1].rstrip())
    if pending is not None:
        out.append(pending)
    return out


def scan_diff(diff_text: str, patterns: Sequence[Pattern], *, scripts: bool = True) -> list[Match]:
    """Checkpoint matches in a unified diff (``git diff`` output).

    Diff patterns (secrets) run over added lines; path patterns over the paths of added and
    modified files; with ``scripts`` the command patterns run over added lines of files that
    execute as shell (see the module notes). Every match carries its path and, for lines, the
    line number in the new file.
    """
    diff_patterns = [p for p in patterns if p.kind == "diff"]
    path_patterns = [p for p in patterns if p.kind == "path"]
    command_patterns = tuple(p for p in patterns if p.kind == "command") if scripts else ()
    matches: list[Match] = []
    for f in _parse_diff(diff_text):
        if not f.deleted:
            matches.extend(scan_paths([f.path], path_patterns))
        for lineno, text in f.added:
            for pattern in diff_patterns:
                hits = _text_hits(pattern, text)
                matches.extend(_to_match(pattern, "diff", hit, f.path, lineno) for hit in hits)
        flavour = _script_flavour(f.path) if command_patterns else None
        if flavour is None:
            continue
        for lineno, text in _joined_lines(f.added):
            command = _script_command(flavour, text)
            if command is None:
                continue
            for m in scan_command(command, command_patterns):
                matches.append(dataclasses.replace(m, path=f.path, line=lineno))
    return matches
