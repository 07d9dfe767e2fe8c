"""Argument readers for the programs the normaliser sees through.

Each function reads one program's command line the way that program does (``sudo -u root
cmd``, ``env -S 'a b'``, ``uv run``, ``python -m``, ``bash -c``, ``git -c alias.x=… x``,
``git submodule foreach``, ``cd``) and says what it runs or where it leaves the text. They
look at argument vectors only, never at the machine. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from pytest_loopcontract.checkpoints.shell.lexer import simple_words
from pytest_loopcontract.checkpoints.shell.vocabulary import (
    ASSIGN_WORD_RE,
    CODE_FLAGS,
    DOAS_VALUE,
    GIT_VALUE,
    PKEXEC_VALUE,
    PY_VALUE,
    RUN0_VALUE,
    RUNNERS,
    SU_VALUE,
    SUDO_VALUE,
    word_set,
)

__all__ = [
    "chdir",
    "elevation",
    "env_command",
    "git_alias",
    "git_config_alias",
    "git_foreach",
    "git_globals",
    "interpreter_code",
    "operands",
    "program_name",
    "python_module",
    "runner_start",
    "shell_args",
    "skip_options",
]

_PY_RE = re.compile(r"python(?:\d+(?:\.\d+)*)?[mtd]?|pypy3?")
_PIP_RE = re.compile(r"pip\d+(?:\.\d+)*")
_SHELL_VARS = word_set("$shell ${shell} $bash ${bash}")


def skip_options(argv: Sequence[str], i: int, takes_value: frozenset[str]) -> int:
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


def operands(argv: Sequence[str], takes_value: frozenset[str] = frozenset()) -> list[str]:
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


def program_name(word: str) -> str:
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


def elevation(argv: list[str]) -> tuple[tuple[str, ...], list[str], str | None]:
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
            elif a in SU_VALUE:
                record.extend(argv[i : i + 2])
                i += 2
                continue
            else:
                record.append(a)
            i += 1
        return ("su", *record), [], script
    takes = {"doas": DOAS_VALUE, "pkexec": PKEXEC_VALUE, "run0": RUN0_VALUE}.get(name, SUDO_VALUE)
    i = skip_options(argv, 1, takes)
    if name == "sudoedit" or any(o in ("-e", "--edit") for o in argv[1:i]):
        return tuple(argv), [], None
    return tuple(argv[:i]), argv[i:], None


def env_command(argv: list[str]) -> list[str]:
    """The command ``env [options] [NAME=value…] command…`` runs (``-S`` strings split)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-S", "--split-string"):
            return simple_words(argv[i + 1] if i + 1 < len(argv) else "") + argv[i + 2 :]
        if a.startswith("--split-string="):
            return simple_words(a.partition("=")[2]) + argv[i + 1 :]
        if a.startswith("-S"):
            return simple_words(a[2:]) + argv[i + 1 :]
        if a in ("-u", "--unset", "-C", "--chdir", "-P", "-a", "--argv0"):
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    while i < len(argv) and ASSIGN_WORD_RE.match(argv[i]):
        i += 1
    return argv[i:]


def runner_start(argv: list[str]) -> int | None:
    """Where the command starts in ``uv run …``, ``poetry run …`` and such (None: not a runner)."""
    if len(argv) < 2:
        return None
    if argv[0] == "uv" and argv[1] == "tool" and argv[2:3] == ["run"]:
        k = skip_options(argv, 3, RUNNERS[("uv", "run")])
    else:
        takes = RUNNERS.get((argv[0], argv[1]))
        if takes is None:
            return None
        k = skip_options(argv, 2, takes)
    return k if k < len(argv) else None


def interpreter_code(argv: Sequence[str]) -> str | None:
    """The code given to an interpreter on its command line (``python -c``, ``node -e``…)."""
    for i, a in enumerate(argv[1:-1], start=1):
        if a in CODE_FLAGS:
            return argv[i + 1]
        if not a.startswith("-"):
            return None
    return None


def python_module(argv: list[str]) -> list[str] | None:
    """``python -m module args`` -> ``[module, args…]``; None when python runs anything else."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[i + 1 :] or None
        if a.startswith("-m") and len(a) > 2:
            return [a[2:], *argv[i + 1 :]]
        if a in PY_VALUE:
            i += 2
        elif a.startswith("-c") or not a.startswith("-") or a == "-":
            return None
        else:
            i += 1
    return None


def shell_args(argv: Sequence[str]) -> tuple[str | None, int]:
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


def git_globals(argv: Sequence[str]) -> tuple[int, dict[str, str]]:
    """(index of git's subcommand, aliases defined inline with ``-c alias.name=value``)."""
    i = 1
    aliases: dict[str, str] = {}
    while i < len(argv):
        a = argv[i]
        if a in GIT_VALUE:
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


def git_alias(argv: list[str], known: Mapping[str, str] | None = None) -> list[str] | str | None:
    """What a git alias makes git run: new argv, a shell line (``!``), or None. Inline ``-c
    alias.x=…`` comes first, then ``known`` (defined earlier in the text, or in the repo's
    configuration)."""
    i, aliases = git_globals(argv)
    if i >= len(argv) or not (aliases or known):
        return None
    word = argv[i].lower()
    value = aliases.get(word)
    if value is None and known:
        value = known.get(word)
    if value is None:
        return None
    if value.startswith("!"):
        return " ".join([value[1:], *argv[i + 1 :]])
    return [*argv[:i], *simple_words(value), *argv[i + 1 :]]


_CONFIG_VALUE = word_set("-f --file --blob --type --default --comment")
_CONFIG_KEEP = word_set("--add --replace-all --global --system --local --worktree --bool --int")


def git_config_alias(argv: Sequence[str]) -> tuple[str, str] | None:
    """(name, value) of an alias that ``git config [set] [options] alias.NAME VALUE`` defines;
    None for any other git command (reads, ``--unset``, ``--get``)."""
    if "config" not in argv:  # the common case, answered without reading the options
        return None
    i, _ = git_globals(argv)
    if i >= len(argv) or argv[i] != "config":
        return None
    words: list[str] = []
    k = i + 1
    while k < len(argv):
        a = argv[k]
        k += 1
        if a.startswith("-") and len(a) > 1:
            if a in _CONFIG_VALUE:
                k += 1
            elif a not in _CONFIG_KEEP and "=" not in a:
                return None  # --get, --unset, --list, --edit…: not a definition
            continue
        words.append(a)
    if words[:1] == ["set"]:
        words = words[1:]
    if len(words) >= 2 and words[0].lower().startswith("alias.") and len(words[0]) > 6:
        return words[0][6:].lower(), words[1]
    return None


def git_foreach(argv: Sequence[str]) -> str | None:
    """The command ``git submodule foreach [--recursive] CMD…`` runs in a shell."""
    i, _ = git_globals(argv)
    if list(argv[i : i + 2]) != ["submodule", "foreach"]:
        return None
    k = skip_options(argv, i + 2, frozenset())
    return " ".join(argv[k:]) or None


def chdir(cwd: str | None, target: str) -> str | None:
    """Where ``cd target`` from ``cwd`` leads ("~" for home, None when it cannot be known)."""
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
