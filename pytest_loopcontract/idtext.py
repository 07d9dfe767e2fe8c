"""Node ids shown as the text they are: ``test_town[Ærøskøbing]``, not ``[\\xc6r\\xf8sk\\xf8bing]``.

Why: pytest escapes every non-ASCII character of a parametrize id (unless a project sets
``disable_test_id_escaping_and_forfeit_all_rights_to_community_support``), so the ids the
collector records, the baseline stores and the verdict matches are the escaped ones. Those
stay exactly as they are: matching, pins and id sets never see this module. Only what a
person reads (terminal lines, the markdown and HTML reports) goes through
:func:`readable_nodeid` or :func:`readable_ids`.

Only printable characters beyond ASCII come back; an escaped control character, a
bidirectional override or a zero-width character (``\\x1b``, ``\\u202e``, ``\\u200b``) stays
escaped, so an id cannot move a terminal's cursor or reorder the text around it. A
backslash pytest escaped (``\\\\``) is left as it is, so ``\\\\xc6`` stays five characters.
Pure functions, stdlib only.
"""

from __future__ import annotations

import re

__all__ = ["readable_ids", "readable_nodeid"]

_ESCAPE = re.compile(r"\\(\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")
# A node id inside a message: a path, ``::``, the test's name, its bracketed parameters.
_NODEID = re.compile(r"[^\s\[\]]+::[^\s\[\]]+\[[^\s\]]*\]")


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code == "\\":
        return match.group(0)
    char = chr(int(code[1:], 16)) if int(code[1:], 16) <= 0x10FFFF else ""
    return char if char and ord(char) >= 0x80 and char.isprintable() else match.group(0)


def readable_nodeid(nodeid: str) -> str:
    """``nodeid`` with pytest's escapes in its parameters turned back into the characters.

    Only the bracketed parameters are touched (pytest escapes those; a path is never escaped).
    """
    start = nodeid.find("[", max(0, nodeid.find("::")))
    if start < 0 or "::" not in nodeid or not nodeid.endswith("]"):
        return nodeid
    return nodeid[:start] + _ESCAPE.sub(_unescape, nodeid[start:])


def readable_ids(text: str) -> str:
    """Every parametrized node id inside ``text`` (a message, a line) made readable."""
    if "\\" not in text:
        return text
    return _NODEID.sub(lambda m: readable_nodeid(m.group(0)), text)
