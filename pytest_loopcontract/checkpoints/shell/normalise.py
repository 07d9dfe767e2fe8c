"""Normalisation: shell text to the simple commands it runs, the way a shell would run them.

An agent that wants to get past a filter only has to write ``bash -c "git push"``, ``env X=1
/usr/bin/git -C repo push``, ``g'i't push`` or ``$(echo git) push``, so a command is judged
only after :func:`parse_command` has turned it into :class:`Command` objects: it splits on
``&& || ; | &`` and newlines, descends into ``bash -c``/``sh -c``/``eval`` strings, ``$( )``,
backticks, ``<( )``, subshells, ``{ }`` groups, here-documents and here-strings fed to a shell,
``echo … | sh`` (also through ``base64 -d``), ``ssh host CMD``, ``find -exec``, ``git submodule
foreach``, inline ``git -c alias.x=…`` and aliases that ``git config alias.x …`` defined
earlier in the text (or that the caller says the repository defines); it strips ``env``,
``VAR=x`` prefixes, ``command``, ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``,
``xargs``, tool runners (``uv run``, ``npx``, ``poetry run``…) and ``python -m``; it resolves
``/usr/bin/git`` to ``git``,
``$'\\x67it'`` to ``git``, simple variables set earlier in the same text (``X=git; $X push``),
``${IFS}`` and ``alias``; and it tracks ``cd`` so that ``cd / && rm -rf *`` is seen for what it
is. ``sudo``, ``doas``, ``su`` and ``pkexec`` are recorded as commands of their own and the
command they run is checked too.

It never raises: on unbalanced quotes it also adds a tolerant word split, so malformed input is
read both ways, and nesting deeper than it follows (12 levels) is read that way too. Interpreter
code (``python -c``…) is not parsed as a language: only string literals handed straight to a
process call (``os.system('…')``, ``subprocess.run(['git', 'push'])``) are followed. Script
files the agent runs, and functions or aliases defined in sourced files, are not opened. Pure:
the only state is the :class:`_State` of one call.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_loopcontract.checkpoints.model import Command
from pytest_loopcontract.checkpoints.shell.expansion import expand_vars, static_output
from pytest_loopcontract.checkpoints.shell.grouping import RawCommand, group_commands
from pytest_loopcontract.checkpoints.shell.lexer import Token, lex, simple_words, subs_in_text
from pytest_loopcontract.checkpoints.shell.programs import (
    chdir,
    elevation,
    env_command,
    git_alias,
    git_config_alias,
    git_foreach,
    interpreter_code,
    program_name,
    python_module,
    runner_start,
    shell_args,
    skip_options,
)
from pytest_loopcontract.checkpoints.shell.tolerant import tolerant_commands
from pytest_loopcontract.checkpoints.shell.vocabulary import (
    ASSIGN_WORD_RE,
    ELEVATORS,
    INTERPRETERS,
    KEYWORDS,
    SHELLS,
    SPECIAL,
    SSH_VALUE,
    WATCH_VALUE,
    WRAPPERS,
)

__all__ = ["parse_command", "split_command"]

_MAX_DEPTH = 12  # nesting of bash -c / $( ) / eval we follow; deeper text is left as it stands
_MAX_COMMANDS = 5000  # a hostile input cannot make one scan produce unbounded work


@dataclass
class _State:
    """What earlier commands of the same text left behind: variables, aliases, ``cd``."""

    env: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    git_aliases: dict[str, str] = field(default_factory=dict)  # git config alias.x / the repo's
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


def _static_of(cmds: Sequence[Command]) -> str | None:
    """What a parsed pipeline prints, when the text alone says so (see static_output)."""
    if not cmds:
        return None
    last = cmds[-1]
    chain = (*last.upstream, last.argv)
    return static_output(chain) if len(chain) == len(cmds) else None


def _parse(text: str, st: _State, depth: int) -> list[Command]:
    """The commands of one script text, at nesting ``depth``."""
    out: list[Command] = []
    toks = lex(text)
    for raw in group_commands(toks):
        if st.count > _MAX_COMMANDS:
            break
        _resolve(raw, text, st, depth, out)
    if any(t.broken for t in toks):
        known = {c.argv for c in out}
        out.extend(c for c in tolerant_commands(text) if c.argv not in known)
    return out


def _sub_commands(inner: str, st: _State, depth: int, out: list[Command]) -> list[Command]:
    """The commands of a substitution, parsed once per text and remembered."""
    cached = st.subs.get(inner)
    if cached is not None:
        return cached
    st.subs[inner] = []
    # Nesting deeper than we follow is itself suspicious: read the rest the tolerant way.
    cmds = _parse(inner, st, depth + 1) if depth < _MAX_DEPTH else tolerant_commands(inner)
    st.subs[inner] = cmds
    out.extend(cmds)
    return cmds


def _word_values(
    tok: Token, st: _State, depth: int, out: list[Command], sub_argvs: list[tuple[str, ...]]
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
        expanded = expand_vars(value, st.env)
        changed = changed or expanded != value
        value = expanded
    if changed and not tok.quoted:
        return value.split()
    return [value]


def _resolve(raw: RawCommand, text: str, st: _State, depth: int, out: list[Command]) -> None:
    """Expand one simple command's words and redirections, then emit what it runs."""
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
                for inner in subs_in_text(body):
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
    while i < len(words) and "=" in words[i] and ASSIGN_WORD_RE.match(words[i]):
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
    """Record a command unless one text has already produced too many."""
    st.count += 1
    if st.count <= _MAX_COMMANDS:
        out.append(cmd)


def _descend(script: str, st: _State, depth: int, out: list[Command]) -> None:
    """Parse a script a command runs (``bash -c``, ``eval``, a here-document fed to a shell)."""
    if depth >= _MAX_DEPTH:
        out.extend(tolerant_commands(script))
    else:
        out.extend(_parse(script, st, depth + 1))


# One step of _emit: a list is the next argument vector to look at (a wrapper came off), a
# tuple the final one (already recorded or followed), None "argv itself is the command".
_Step = list[str] | tuple[str, ...] | None


@dataclass(slots=True)
class _Followed:
    """What :func:`_emit` already followed for one command, so alias loops end."""

    aliases: set[str] = field(default_factory=set)
    git_alias: bool = False


def _emit(
    argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]
) -> tuple[str, ...]:
    """Strip wrappers off one command, follow what it runs, append the result to ``out``."""
    followed = _Followed()
    for _ in range(64):
        if not argv:
            return ()
        name = program_name(argv[0])
        argv = [name, *argv[1:]]
        if name not in SPECIAL and name not in st.aliases:
            break
        step = _step(argv, base, st, depth, out, followed)
        if step is None:
            break
        if isinstance(step, tuple):
            return step
        argv = step
    _append(out, st, base.command(argv, st.cwd))
    return tuple(argv)


def _step(
    argv: list[str], base: _Base, st: _State, depth: int, out: list[Command], followed: _Followed
) -> _Step:
    """Look once at ``argv`` (its program name resolved): the order of the checks matters."""
    name = argv[0]
    if name in st.aliases and name not in followed.aliases:
        followed.aliases.add(name)
        return simple_words(st.aliases[name]) + argv[1:]
    if name in KEYWORDS:
        return argv[2:] if name == "function" else argv[1:]
    if name in ELEVATORS:
        return _elevated(argv, base, st, depth, out)
    if name == "env":
        return env_command(argv) or None
    if name == "command" and any(a in ("-v", "-V") for a in argv[1:2]):
        return None
    wrapper = WRAPPERS.get(name)
    if wrapper is not None:
        k = skip_options(argv, 1, wrapper[0]) + wrapper[1]
        return argv[k:] if k < len(argv) else None
    runner = runner_start(argv)
    if runner is not None:
        return argv[runner:]
    module = python_module(argv) if name == "python" else None
    if module is not None:
        return module
    if name in INTERPRETERS:
        _spawned(argv, base, st, depth, out)
        return None
    if name in SHELLS or name in ("eval", "source", ".", "watch"):
        script = _script_of(argv, base, st)
        if script is None:
            return None
        _descend(script, st, depth, out)
        return tuple(argv)
    if name == "ssh":
        return _ssh(argv, base, st, depth, out)
    if name == "git" and not followed.git_alias:
        followed.git_alias = True
        alias = git_alias(argv, st.git_aliases)
        if isinstance(alias, str):
            _descend(alias, st, depth, out)
            return tuple(argv)
        if alias is not None:
            return alias
    _follow_inner(argv, base, st, depth, out)
    return None


def _elevated(argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]) -> _Step:
    """Record ``sudo …`` (or doas, su, pkexec, run0) as a command of its own; go on with what
    it runs, or stop at the record when it runs nothing more (``su -c`` scripts are followed)."""
    record, inner, script = elevation(argv)
    _append(out, st, base.command(record, st.cwd))
    if script is not None:
        _descend(script, st, depth, out)
    return inner if inner else record


def _ssh(argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]) -> _Step:
    """``ssh host CMD…``: the ssh itself, then CMD read as a shell would on the other side."""
    _append(out, st, base.command(argv, st.cwd))
    k = skip_options(argv, 1, SSH_VALUE) + 1
    if k < len(argv):
        _descend(" ".join(argv[k:]), st, depth, out)
    return tuple(argv)


def _follow_inner(argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]) -> None:
    """What a plain command runs inside (``find -exec``, ``git submodule foreach``) and the
    state it leaves for later commands (``cd``, ``export``, ``alias``)."""
    if argv[0] == "find":
        _find_exec(argv, base, st, depth, out)
    if argv[0] == "git":
        script = git_foreach(argv)
        if script:
            _descend(script, st, depth, out)
    _track_state(argv, st)


_SPAWN_RE = re.compile(
    r"\b(?:system|popen|spawn|spawnSync|execSync|execFileSync|execFile|exec|run|call"
    r"|check_call|check_output|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open)"
    r"\s*\(\s*(?:(?P<list>\[[^\]]*\])|[rbfu]?(?P<q>['\"`])(?P<cmd>(?:\\.|(?!(?P=q)).)*)(?P=q))"
)
_LITERAL_RE = re.compile(r"(['\"])((?:\\.|(?!\1).)*)\1")
_QX_RE = re.compile(r"`([^`]+)`|\bqx\s*[{(\[]([^})\]]+)[})\]]")


def _spawned(argv: list[str], base: _Base, st: _State, depth: int, out: list[Command]) -> None:
    """Follow the commands interpreter code (``python -c``, ``node -e``, a here-document fed to
    one) hands to a shell or spawns as literals: ``os.system('…')``, ``subprocess.run(['git',
    'push'])``, ``execSync('…')``, Perl and Ruby backticks. Code that builds the command at run
    time is not followed."""
    name = argv[0]
    code = interpreter_code(argv) or base.stdin
    if not code or depth >= _MAX_DEPTH:
        return
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


def _script_of(argv: list[str], base: _Base, st: _State) -> str | None:
    """The text a shell, ``eval``, ``source`` or ``watch`` will run, when it can be known."""
    name = argv[0]
    if name == "eval":
        return " ".join(argv[1:])
    if name == "watch":
        k = skip_options(argv, 1, WATCH_VALUE)
        return " ".join(argv[k:]) if k < len(argv) else None
    if name in ("source", "."):
        return st.procs.get(argv[1]) if len(argv) > 1 else None
    script, k = shell_args(argv)
    if script is not None:
        return script
    if k < len(argv):
        return st.procs.get(argv[k])
    if base.stdin:
        return base.stdin
    return static_output(base.upstream)


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
    if name == "git":
        definition = git_config_alias(argv)
        if definition is not None:
            st.git_aliases[definition[0]] = definition[1]
    elif name in ("cd", "pushd"):
        k = skip_options(argv, 1, frozenset())
        st.cwd = chdir(st.cwd, argv[k] if k < len(argv) else "")
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
            if ASSIGN_WORD_RE.match(a):
                key, _, value = a.partition("=")
                st.env[key.rstrip("+")] = value


def _parse_argv(argv: Sequence[str], st: _State) -> list[Command]:
    """The commands of an argument vector run without a shell (each word stays one word)."""
    text = shlex.join(argv)
    words = [Token("w", str(a), 0, len(text), quoted=True) for a in argv]
    out: list[Command] = []
    if words:
        _resolve(RawCommand(words, [], []), text, st, 0, out)
    return out


def parse_command(
    command: str | Sequence[str], git_aliases: Mapping[str, str] | None = None
) -> list[Command]:
    """Normalise a shell command (text, or an argument vector run without a shell) into
    :class:`Command` objects, in the order they would run. Never raises.

    ``git_aliases`` are the aliases git already knows (the repository's and the user's
    configuration, see :mod:`pytest_loopcontract.checkpoints.gitconfig`): ``git x`` is read as
    what ``alias.x`` makes it, like an alias that ``git config alias.x …`` defined earlier in
    the same text.

    A checkpoint scanner that crashed would wave the command through, so any unexpected
    error falls back to a tolerant word split of the text.
    """
    st = _State(git_aliases=dict(git_aliases or {}))
    try:
        if isinstance(command, str):
            return _parse(command, st, 0)
        return _parse_argv(list(command), st)
    except Exception:
        text = command if isinstance(command, str) else " ".join(map(str, command))
        return _on_internal_error(text)


def _on_internal_error(text: str) -> list[Command]:
    """Last resort when normalisation itself fails (tests replace this to prove it never does)."""
    return tolerant_commands(text)


def split_command(command: str | Sequence[str]) -> list[list[str]]:
    """The simple commands (argument vectors) a shell command runs, wrappers stripped and
    nested scripts followed; ``sudo …`` appears as its own entry before the command it runs."""
    return [list(c.argv) for c in parse_command(command) if c.argv]
