"""The checkpoint data model: what a matcher sees, what it reports, what a scan returns.

Every matcher is a strategy behind one of two small protocols, :class:`CommandMatcher` (a
normalised :class:`Command` in a :class:`ScanContext`) and :class:`TextMatcher` (one added diff
line or one path), and reports :class:`Hit` objects; a :class:`Pattern` names a matcher (or a
regex) with the reason a person is needed, and a scan turns each hit into a :class:`Match`.
Pure data, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from pytest_loopcontract.contract.model import DEFAULT_PROTECTED_BRANCHES

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
    "single_hit",
]

KINDS = ("command", "diff", "path")


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
        """The program's base name (empty for a bare assignment or redirection)."""
        return self.argv[0] if self.argv else ""


class CommandMatcher(Protocol):
    """A command strategy: what in one normalised command needs a person (nothing = fine)."""

    def __call__(self, cmd: Command, ctx: ScanContext, /) -> Iterable[Hit]: ...


class TextMatcher(Protocol):
    """A text strategy: what in one added diff line, or one path, needs a person."""

    def __call__(self, text: str, /) -> Iterable[Hit]: ...


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


def single_hit(evidence: str, detail: str = "", always: bool = False) -> tuple[Hit, ...]:
    """The one hit most matchers report: a command or line either needs a person or not."""
    return (Hit(evidence, detail, always),)
