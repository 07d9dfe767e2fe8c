"""What a judge must not see: secrets (tokens, keys, passwords, credentials in assignments,
env and YAML lines) become ``[REDACTED]``, and identities (seat names, families, branches,
paths, commit ids and commit metadata) become ``[candidate]``, ``[redacted]`` or ``[commit]``.

Kept apart from the packet it cleans because the same redaction guards what is recorded of a
judge's reply (:mod:`.judging`), and both rules are tested on text alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["CANDIDATE_MARK", "IDENTITY_MARK", "REDACTED", "redact_secrets", "scrub"]

REDACTED = "[REDACTED]"
"""What a secret becomes."""
CANDIDATE_MARK = "[candidate]"
"""What a candidate seat's name becomes."""
IDENTITY_MARK = "[redacted]"
"""What any other identity (a family, a branch, a path, an e-mail) becomes."""


# --------------------------------------------------------------------------------------------
# secrets

_PRIVATE_KEY_RE = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    # to the matching END line, or (a truncated block) over the base64 lines that follow
    r"(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n[+ -]?[A-Za-z0-9+/=]*)*)"
)
_TOKEN_RE = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"
    r"|\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"  # OpenAI/Anthropic (sk-ant-...), has digits
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\b[sr]k_live_[A-Za-z0-9]{16,}"
    r"|\bnpm_[A-Za-z0-9]{36}\b"
    r"|\bpypi-AgE[A-Za-z0-9_-]{50,}"
)
_AWS_SECRET_RE = re.compile(
    r"(?i)(aws_?secret\w*[\"']?\s*(?::=|=>|=|:)\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
_AUTH_HEADER_RE = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?\s*(?:bearer|token|basic)\s+)"
    r"([A-Za-z0-9._~+/=-]+)"
)
_BEARER_RE = re.compile(r"(\b[Bb]earer\s+)([A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD_RE = re.compile(
    r"(?i)(\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@'\"]{1,64}:)([^\s/@'\"]+)(@)"
)
_SECRET_NAME_RE = re.compile(
    r"passw(?:or)?d|passwd|secret|api[_-]?key|apikey|private[_-]?key|token(?![a-z])",
    re.IGNORECASE,
)
# NAME = value / NAME: value / "name": "value" / name := value / name => value
_ASSIGN_RE = re.compile(
    r"(?<![\w.])(?P<key>[\"']?[A-Za-z_][\w.-]*[\"']?)"
    r"(?P<sep>[ \t]*(?::=|=>|=(?!=)|:(?![:/]))[ \t]*)"
    r"(?P<val>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[^\s,;)\]}(\[\"'#]+)"
)
# .env lines: NAME=value, optionally exported, the whole rest of the line is the value
_ENV_LINE_RE = re.compile(
    r"(?m)^(?P<pre>[+ -]?[ \t]*(?:export[ \t]+)?)(?P<key>[A-Z_][A-Z0-9_]*)=(?P<val>[^\n]+)$"
)
# YAML-ish lines: "name: value" with nothing else on the line
_YAML_LINE_RE = re.compile(
    r"(?m)^(?P<pre>[+ -]?[ \t]*(?:-[ \t]+)?)(?P<key>[\"']?[A-Za-z_][\w.-]*[\"']?)"
    r"(?P<sep>:[ \t]+)(?P<val>[^\s\"'#&*!|>{\[][^\n#]*?)[ \t]*(?:#[^\n]*)?$"
)
_IDENTIFIER_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_NUMBER_RE = re.compile(r"[-+]?\d{1,7}(?:\.\d+)?")
_CODE_WORDS = frozenset(
    {
        *("none", "true", "false", "null", "nil", "undefined", "self", "cls"),
        *("str", "bytes", "int", "float", "bool", "any", "object", "optional", "secretstr"),
    }
)


def redact_secrets(text: str) -> str:
    """Replace likely secrets in ``text`` with ``[REDACTED]``.

    Provider tokens (GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``ghr_``/``github_pat_``,
    ``sk-``/``sk-ant-`` keys, AWS ``AKIA``/``ASIA`` key ids and secret access keys, Slack
    ``xox?-``, Google ``AIza``, GitLab, Stripe, npm, PyPI), private key blocks, bearer tokens,
    URL passwords, and the values of assignments (``KEY = value``, ``"key": "value"``, ``.env``
    and YAML lines) whose name contains password/passwd/secret/token/api_key/apikey/
    private_key. The name is kept, the value goes.

    Ordinary code survives: an unquoted value that reads as code (a name, an attribute, a call,
    a type, a short number) is left alone (``token = request.headers["x"]``,
    ``password: str``, ``max_tokens = 100``), since the secret is not in it.
    """
    text = _PRIVATE_KEY_RE.sub(REDACTED, text)
    text = _TOKEN_RE.sub(REDACTED, text)
    text = _AWS_SECRET_RE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _AUTH_HEADER_RE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _BEARER_RE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _URL_PASSWORD_RE.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _ENV_LINE_RE.sub(_redact_env_line, text)
    text = _YAML_LINE_RE.sub(_redact_yaml_line, text)
    return _ASSIGN_RE.sub(_redact_assignment, text)


def _secret_name(key: str) -> bool:
    return _SECRET_NAME_RE.search(key.strip("\"'")) is not None


def _redact_env_line(m: re.Match[str]) -> str:
    value = m.group("val").strip()
    if not _secret_name(m.group("key")) or not value or REDACTED in value:
        return m.group()
    if value.startswith("$") and not value.startswith("$$"):  # a reference to another variable
        return m.group()
    if _continues_code(value):
        return m.group()
    return f"{m.group('pre')}{m.group('key')}={REDACTED}"


def _redact_yaml_line(m: re.Match[str]) -> str:
    value = m.group("val")
    if not _secret_name(m.group("key")) or REDACTED in value:
        return m.group()
    if _reads_as_type(value) or _continues_code(value):
        return m.group()
    start, end = m.span("val")
    return m.string[m.start() : start] + REDACTED + m.string[end : m.end()]


def _redact_assignment(m: re.Match[str]) -> str:
    value = m.group("val")
    if not _secret_name(m.group("key")) or REDACTED in value:
        return m.group()
    head = m.group("key") + m.group("sep")
    if value[0] in "\"'":
        if len(value) <= 2:  # an empty string hides nothing
            return m.group()
        return head + value[0] + REDACTED + value[-1]
    if _reads_as_code(value):
        return m.group()
    return head + REDACTED


def _reads_as_code(value: str) -> bool:
    """An unquoted value that is a name, an attribute path, a keyword or a short number."""
    if value.casefold() in _CODE_WORDS or _NUMBER_RE.fullmatch(value):
        return True
    if _IDENTIFIER_RE.fullmatch(value):
        # A long run of mixed letters and digits is a key, not a variable name.
        return not (len(value) >= 20 and any(c.isdigit() for c in value))
    return False


def _continues_code(value: str) -> bool:
    """A line's value that is code: a keyword argument or dict entry (trailing comma), a call,
    an attribute access. ``.env`` and YAML values have none of these."""
    value = value.strip()
    return (
        value.endswith((",", "(", ":", "\\"))
        or "(" in value
        or ("." in value and _IDENTIFIER_RE.fullmatch(value) is not None)
    )


def _reads_as_type(value: str) -> bool:
    """A YAML-looking value that is really a Python annotation (``password: str | None``)."""
    value = value.strip()
    if value.casefold() in _CODE_WORDS or any(c in value for c in "[|="):
        return True
    return bool(re.fullmatch(r"[A-Z][A-Za-z]*", value))  # a class name


# --------------------------------------------------------------------------------------------
# identities

_INDEX_LINE_RE = re.compile(
    r"(?m)^index [0-9a-fA-F]{4,64}\.\.[0-9a-fA-F]{4,64}(?: \d+)?[ \t]*\r?\n?"
)
_METADATA_LINE_RE = re.compile(
    r"(?mi)^(?: {4})?(?:author|authordate|commit|commitdate|committer|date|from|merge"
    r"|signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|helped-by"
    r"|suggested-by):[^\n]*\r?\n?"
)
_COMMIT_LINE_RE = re.compile(r"(?m)^(?:commit [0-9a-f]{7,64}|From [0-9a-f]{40} )[^\n]*\r?\n?")
_SHA_RE = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40})(?![0-9A-Za-z])")
_SHA_MARK = "[commit]"
_SHORT_IDENTITY = 3


def scrub(
    text: str,
    *,
    identities: Iterable[str],
    candidate_names: Iterable[str] = (),
) -> str:
    """Remove what identifies a seat from ``text``.

    Every string in ``candidate_names`` becomes ``[candidate]`` and every other identity
    (families, branches, worktree and repository paths, e-mail addresses...) ``[redacted]``,
    case-insensitively, longest first, in one pass. Where an identity starts or ends with a
    letter, it is only replaced at a word edge (a non-letter, or a camelCase step), so a seat
    named ``alpha`` is caught in ``alpha_fix.py`` and ``useAlpha`` but leaves ``alphabet``
    alone; identities shorter than 3 characters are only replaced as whole words, so a seat
    named ``a`` does not eat every ``a``. Then ``index <sha>..<sha>`` lines, ``commit``/
    ``From <sha>`` lines and commit metadata lines (Author, Date, Signed-off-by,
    Co-authored-by...) are dropped and remaining 40- or 64-hex commit ids become ``[commit]``.
    """
    table: dict[str, str] = {}
    for name in identities:
        if name and name.strip():
            table.setdefault(name.strip().casefold(), IDENTITY_MARK)
    for name in candidate_names:
        if name and name.strip():
            table[name.strip().casefold()] = CANDIDATE_MARK
    if table:
        pattern = _identity_pattern(tuple(sorted(table, key=lambda s: (-len(s), s))))
        text = pattern.sub(lambda m: table.get(m.group().casefold(), IDENTITY_MARK), text)
    text = _INDEX_LINE_RE.sub("", text)
    text = _COMMIT_LINE_RE.sub("", text)
    text = _METADATA_LINE_RE.sub("", text)
    return _SHA_RE.sub(_SHA_MARK, text)


def _identity_pattern(names: Sequence[str]) -> re.Pattern[str]:
    before = r"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))"
    after = r"(?:(?![A-Za-z])|(?<=[a-z])(?=[A-Z]))"
    parts: list[str] = []
    for name in names:
        body = f"(?i:{re.escape(name)})"
        if len(name) < _SHORT_IDENTITY:
            parts.append(rf"(?<![\w]){body}(?![\w])")
            continue
        pre = before if name[0].isalpha() else ""
        post = after if name[-1].isalpha() else ""
        parts.append(pre + body + post)
    return re.compile("|".join(parts))
