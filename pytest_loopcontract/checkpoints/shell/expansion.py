"""What the text alone says a word or a pipeline becomes, without running anything.

Variables set earlier in the same text (``X=git; $X push``), ``${IFS}`` and ``${X:-default}``
are expanded; ``echo``/``printf`` (optionally through ``base64 -d`` or ``rev``) and ``which X``
have an output known from their arguments, so ``$(echo git) push`` and ``echo … | base64 -d |
sh`` are read for what they run. Anything that needs the real environment stays as written.
Pure.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence

from pytest_loopcontract.checkpoints.shell.lexer import ANSI_ESC_RE, ansi_char

__all__ = ["expand_vars", "static_output"]

_ECHO_FLAGS_RE = re.compile(r"-[neE]+")
_VAR_RE = re.compile(
    r"\$(?:\{(?P<b>[A-Za-z_]\w*)(?P<op>:?[-=+])?(?P<d>[^}]*)\}|(?P<n>[A-Za-z_]\w*))"
)


def expand_vars(word: str, env: Mapping[str, str]) -> str:
    """``word`` with the variables ``env`` knows (and ``${IFS}``, ``${X:-d}``) replaced."""

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


def _printf(fmt: str, args: Sequence[str]) -> str:
    """What ``printf FMT ARGS`` prints, for the %s and escapes a command line uses."""
    out = ANSI_ESC_RE.sub(ansi_char, fmt)
    for arg in args:
        if "%s" not in out:
            break
        out = out.replace("%s", arg, 1)
    return out.replace("%s", "")


def static_output(chain: Sequence[Sequence[str]]) -> str | None:
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
            out = ANSI_ESC_RE.sub(ansi_char, out)
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
