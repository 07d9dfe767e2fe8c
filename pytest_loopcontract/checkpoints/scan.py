"""Scanning: a command, a diff or file paths against a set of patterns, into matches.

Three things are scanned: a shell command the agent is about to run (:func:`scan_command`),
the diff of a candidate (:func:`scan_diff`) and file paths (:func:`scan_paths`). Each finding is
a :class:`~pytest_loopcontract.checkpoints.model.Match` that names a stable pattern id, says in a
sentence why a person is needed and shows the offending segment with secrets redacted (never
more than 200 characters). A dispatch plan per pattern set, built once and cached, sends each
normalised command only to the patterns for its program, and a single search over every hint
rules most commands out before any matcher runs.

:func:`scan_diff` looks at added lines only (a removed secret is a fix). With ``scripts=True``
(the default) it also runs the command patterns over added lines of files that execute as
shell (see :mod:`pytest_loopcontract.checkpoints.scripts`), so a candidate cannot smuggle
``curl | sh`` into CI. The only outside facts read are the user's home directory (a default
for ``home``), the current directory (to make ``workspace`` absolute) and the git aliases the
workspace's configuration defines (so ``git ship`` after ``git config alias.ship push`` in an
earlier call is read as a push).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_loopcontract.checkpoints.diff import parse_diff
from pytest_loopcontract.checkpoints.gitconfig import repo_git_aliases
from pytest_loopcontract.checkpoints.model import (
    DEFAULT_PROTECTED_BRANCHES,
    Command,
    Hit,
    Match,
    Pattern,
    ScanContext,
    single_hit,
)
from pytest_loopcontract.checkpoints.scripts import joined_lines, script_command, script_flavour
from pytest_loopcontract.checkpoints.secrets import redact_secrets
from pytest_loopcontract.checkpoints.shell.normalise import parse_command

__all__ = ["scan_command", "scan_diff", "scan_paths"]

_EVIDENCE_MAX = 200


def _evidence(text: str) -> str:
    """What a match shows: secrets redacted, at most 200 characters."""
    text = redact_secrets(text.strip())
    return text if len(text) <= _EVIDENCE_MAX else text[: _EVIDENCE_MAX - 1] + "…"


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
        """(patterns without a hint, patterns with one)."""
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
    """A matcher's hit as the match a scan returns, message and evidence completed."""
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
    """A regex pattern against the normalised words, then the command's source text."""
    assert pattern.regex is not None
    m = pattern.regex.search(" ".join(cmd.argv)) or pattern.regex.search(cmd.text)
    return single_hit(cmd.text) if m else ()


def _home() -> str:
    """The user's home directory: the default for judging ``rm -rf ~``."""
    return os.environ.get("HOME") or os.path.expanduser("~")


def scan_command(
    command: str | Sequence[str],
    patterns: Sequence[Pattern],
    *,
    workspace: Path | str | None = None,
    protected_branches: Sequence[str] = DEFAULT_PROTECTED_BRANCHES,
    home: str | None = None,
    git_aliases: Mapping[str, str] | None = None,
) -> list[Match]:
    """Checkpoint matches for a command the agent is about to run (text or argument vector).

    ``workspace`` anchors relative paths for ``rm`` (None: the command runs in an unnamed
    workspace and every absolute path is outside it); ``home`` defaults to the user's home.
    ``git_aliases`` are the aliases ``git x`` may mean; None asks the workspace's git
    configuration (see :mod:`pytest_loopcontract.checkpoints.gitconfig`).
    """
    plan = _plan_for(patterns)
    ws = os.path.normpath(os.path.abspath(workspace)) if workspace is not None else None
    ctx = ScanContext(ws, home if home is not None else _home(), tuple(protected_branches))
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for cmd in _commands(command, ws, git_aliases):
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


def _commands(
    command: str | Sequence[str], ws: str | None, git_aliases: Mapping[str, str] | None
) -> list[Command]:
    """The normalised commands; the repository's git aliases are asked for only when git runs
    (a command line without git cannot reach an alias, and most do not run git)."""
    if git_aliases is not None:
        return parse_command(command, git_aliases)
    commands = parse_command(command)
    if any(c.program == "git" for c in commands):
        aliases = repo_git_aliases(ws)
        if aliases:
            return parse_command(command, aliases)
    return commands


def _command_hits(pattern: Pattern, cmd: Command, ctx: ScanContext) -> Iterable[Hit]:
    """What one command pattern finds in one command."""
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
    """What one diff or path pattern finds in one line or path."""
    if pattern.match_text is not None:
        return pattern.match_text(text)
    assert pattern.regex is not None
    return single_hit(text) if pattern.regex.search(text) else ()


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
    for f in parse_diff(diff_text):
        if not f.deleted:
            matches.extend(scan_paths([f.path], path_patterns))
        for lineno, text in f.added:
            for pattern in diff_patterns:
                hits = _text_hits(pattern, text)
                matches.extend(_to_match(pattern, "diff", hit, f.path, lineno) for hit in hits)
        flavour = script_flavour(f.path) if command_patterns else None
        if flavour is None:
            continue
        for lineno, text in joined_lines(f.added):
            command = script_command(flavour, text)
            if command is None:
                continue
            for m in scan_command(command, command_patterns, git_aliases={}):
                matches.append(dataclasses.replace(m, path=f.path, line=lineno))
    return matches
