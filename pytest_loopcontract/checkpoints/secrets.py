"""Secrets detection and redaction: provider token shapes, private keys, secret assignments and
passwords in URLs.

An assignment to a secret-looking name (``password``, ``secret``, ``token``, ``api_key``…)
counts when its value is at least 16 characters, mixes two of lower case/upper case/digits,
contains no space, is not a placeholder (``changeme``, ``xxx``, ``${VAR}``, ``os.environ[...]``,
``<your key>``…) and has a Shannon entropy of at least 3.5 bits per character. Unquoted values
must also contain a digit and not be a dotted name (``settings.SECRET_KEY``), which keeps code
out. Matches are never shown with a full secret: provider tokens, secret assignments and URL
passwords in any evidence show their first 4 characters and "…" (only "…" for values of 8
characters or fewer). Cheap substring checks rule out almost every line before a regex has to
look at it. Pure.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from pytest_loopcontract.checkpoints.model import Hit

__all__ = ["redact", "redact_secrets", "secret_hits", "shannon_entropy"]


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
    """Whether a provider token could be in ``text`` (substring checks, no regex)."""
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
    """Whether a URL with a password could be in ``text``."""
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
    """``text`` with every value assigned to a secret-looking name redacted."""
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


def secret_hits(line: str) -> list[Hit]:
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
