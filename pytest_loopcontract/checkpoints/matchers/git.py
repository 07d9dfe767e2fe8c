"""Git matchers: pushes, force pushes and pushes or merges into protected branches.

``git push --dry-run`` is not a push. A push without a refspec (or to ``HEAD``) has an unknown
target: it matches ``git-push`` (needs a person) but not the ``always`` patterns, because
``push.default`` and the upstream decide where it goes. ``gh pr merge`` merges into a base
branch and counts as a push to a protected one. Defining an alias that pushes (``git config
alias.ship push``, ``git -c alias.ship='!git push'``) is ``git-alias-push`` on its own, so the
name cannot be set up in one call and used in the next.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.lexer import simple_words
from pytest_loopcontract.checkpoints.shell.normalise import parse_command
from pytest_loopcontract.checkpoints.shell.programs import git_config_alias, git_globals

__all__ = ["git_alias_push", "git_force_push", "git_push", "git_push_protected"]


@dataclass(frozen=True)
class _Push:
    """A ``git push`` read: target branches, forcing options, all branches, unknown, dry run."""

    targets: tuple[str, ...]
    forced: tuple[str, ...]
    everything: bool
    unknown: bool
    dry: bool


_PUSH_VALUE = frozenset({"--repo", "--push-option", "-o", "--receive-pack", "--exec"})


def _parse_push(args: Sequence[str]) -> _Push:
    """What ``git push ARGS`` pushes where, and whether it forces, deletes or only pretends."""
    forced: list[str] = []
    positional: list[str] = []
    dry = everything = tags = False
    words = iter(args)
    for a in words:
        if a == "--":
            positional.extend(words)
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
                next(words, None)  # the option's value
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
                    if k == len(a) - 1:
                        next(words, None)  # -o VALUE; "-oVALUE" holds its own
                    break
            continue
        positional.append(a)
    targets, matching, to_head = _refspecs(positional[1:], forced)
    unknown = (len(positional) < 2 and not everything and not tags) or to_head
    return _Push(tuple(targets), tuple(forced), everything or matching, unknown, dry)


def _refspecs(specs: Sequence[str], forced: list[str]) -> tuple[list[str], bool, bool]:
    """(branches the refspecs push to, whether ``:`` pushes every matching branch, whether one
    goes to ``HEAD``); a ``+`` or an empty source (a deletion) is added to ``forced``."""
    targets: list[str] = []
    matching = to_head = False
    for spec in specs:
        if spec.startswith("+"):
            forced.append(spec)
            spec = spec[1:]
        if spec == ":":
            matching = True
            continue
        src, colon, dst = spec.partition(":")
        if colon and not src:
            forced.append(f"delete {dst}")
        dst = (dst or src) if colon else src
        dst = dst.removeprefix("refs/heads/")
        if dst in ("HEAD", "@", ""):
            to_head = True
        else:
            targets.append(dst)
    return targets, matching, to_head


@functools.lru_cache(maxsize=512)
def _push_of(argv: tuple[str, ...]) -> _Push | None:
    """The push a git command line makes, or None when it is not a push (cached: asked thrice)."""
    i, _ = git_globals(argv)
    if i < len(argv) and argv[i] == "push":
        return _parse_push(argv[i + 1 :])
    return None


def git_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """Any real push: it publishes work to a shared remote."""
    push = _push_of(cmd.argv)
    if push is None or push.dry:
        return ()
    if push.everything:
        detail = "all branches"
    elif push.targets:
        detail = "to " + ", ".join(push.targets)
    else:
        detail = "target unknown: no refspec, so push.default and the upstream decide"
    return single_hit(cmd.text, detail)


def git_force_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A push that can destroy history: force, mirror, delete, prune, a + refspec."""
    push = _push_of(cmd.argv)
    if push is None or push.dry or not push.forced:
        return ()
    return single_hit(cmd.text, ", ".join(dict.fromkeys(push.forced)), always=True)


def _is_protected(branch: str, protected: Sequence[str]) -> bool:
    """Whether a branch name matches one of the protected globs."""
    return any(fnmatch.fnmatchcase(branch, pat) for pat in protected)


def git_push_protected(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A push to a protected branch (or every branch), or ``gh pr merge``."""
    if cmd.program == "gh":
        ops = [a for a in cmd.argv[1:] if not a.startswith("-")]
        if ops[:2] == ["pr", "merge"]:
            return single_hit(cmd.text, "merges a pull request into its base branch", always=True)
        return ()
    push = _push_of(cmd.argv)
    if push is None or push.dry:
        return ()
    hit = [t for t in push.targets if _is_protected(t, ctx.protected_branches)]
    if push.everything:
        hit.append("every branch (--all, --mirror or ':')")
    if not hit:
        return ()
    return single_hit(cmd.text, "to " + ", ".join(hit), always=True)


def _reaches_push(value: str) -> bool:
    """Whether running an alias with this value pushes (``push …``, ``!git push``, a shell
    function around it)."""
    if value.startswith("!"):
        return any(c.program == "git" and _push_of(c.argv) for c in parse_command(value[1:]))
    return _push_of(("git", *simple_words(value))) is not None


def git_alias_push(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """Defining a git alias that pushes (``git config alias.x push``, ``git -c alias.x=…``):
    a later ``git x`` would push under another name."""
    if "config" not in cmd.argv and "-c" not in cmd.argv:
        return ()
    definitions = [git_config_alias(cmd.argv)]
    _, inline = git_globals(cmd.argv)
    definitions += list(inline.items())
    names = [name for d in definitions if d is not None for name in [d[0]] if _reaches_push(d[1])]
    if not names:
        return ()
    return single_hit(cmd.text, "alias " + ", ".join(dict.fromkeys(names)) + " pushes")
