"""The exfiltration matcher: the environment or a secret file handed to a network client.

A network client (``curl``, ``wget``, ``nc``, ``socat``, ``ssh``, ``scp``, httpie…) sends what
it is given, so it matches when what it is given is secret: a pipe from ``env``/``printenv``/
``set``/``export -p``, from a command that reads a ``.env`` or credential file (``cat .env |
nc …``, ``base64 ~/.ssh/id_rsa | curl -d @- …``), or from ``echo $SOME_TOKEN``; the same
inside a substitution (``curl -d "$(env)" …``); a stdin redirection from such a file; or its
own upload options naming one (``curl -d @.env``, ``-F f=@~/.aws/credentials``, ``-T``,
``wget --post-file=``, httpie ``field@file``, ``scp ~/.aws/credentials host:``). A client that
only downloads, or sends an ordinary file, is fine. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pytest_loopcontract.checkpoints.matchers.files import classify_path
from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.vocabulary import PRINTERS, word_set

__all__ = ["NETWORK_CLIENTS", "exfiltration"]

NETWORK_CLIENTS = word_set(
    "curl wget nc ncat netcat socat telnet http https xh xhs curlie httpie ssh scp sftp rsync "
    "ftp lftp openssl"
)
_DUMPERS = word_set("env printenv set")
_DECLARERS = word_set("export declare typeset")
_SECRET_VAR_RE = re.compile(
    r"\$\{?[A-Za-z_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE)[A-Za-z_0-9]*"
)
_ENVIRON_RE = re.compile(r"/proc/(?:self|\d+|\$\$|\*)/environ")
_UPLOAD_FLAGS = word_set(
    "-d --data --data-binary --data-urlencode --data-ascii --json -F --form -T --upload-file"
)
_COPY_VALUE = word_set("-i -F -o -P -e -c -J -l -S --rsh --password-file")
_UPLOAD_PREFIXES = ("--post-file=", "--body-file=", "--data=", "--data-binary=", "--upload-file=")


def _secret_path(word: str) -> str | None:
    """What a word names that holds secrets (a .env, a key, the process environment)."""
    if _ENVIRON_RE.search(word):
        return "the process environment (/proc/…/environ)"
    kind = classify_path(word)
    return kind[1] if kind is not None else None


def _source_secret(argv: Sequence[str]) -> str | None:
    """Why the output of one upstream or substituted command is secret, or None."""
    if not argv:
        return None
    name, args = argv[0], argv[1:]
    if name in _DUMPERS and (name != "env" or not args or all(a.startswith("-") for a in args)):
        return f"the environment ({name})"
    if name in _DECLARERS and (not args or args[0] in ("-p", "-x", "-px")):
        return f"the environment ({name} {' '.join(args)})".replace(" )", ")")
    if name in PRINTERS:
        m = next((_SECRET_VAR_RE.search(a) for a in args if _SECRET_VAR_RE.search(a)), None)
        return f"a secret variable ({m.group().lstrip('${')})" if m else None
    for a in args:
        found = _secret_path(a.partition("=")[2] if a.startswith("-") else a)
        if found:
            return found
    return None


def _first(reasons: Iterable[str | None]) -> str | None:
    """The first reason that is not None."""
    return next((r for r in reasons if r), None)


def _upload_secret(argv: Sequence[str]) -> str | None:
    """A secret file the client's own options upload (``-d @.env``, ``-F f=@key``, ``-T``…)."""
    name = argv[0]
    for k, a in enumerate(argv[1:], start=1):
        value: str | None = None
        if a in _UPLOAD_FLAGS and k + 1 < len(argv):
            value = argv[k + 1]
        elif a.startswith(_UPLOAD_PREFIXES):
            value = a.partition("=")[2]
        elif name in ("http", "https", "xh", "xhs", "httpie") and "@" in a:
            value = a.rpartition("@")[2]
        elif name in ("scp", "rsync", "sftp") and not a.startswith("-"):
            value = None if argv[k - 1] in _COPY_VALUE else a
        if value is None:
            continue
        found = _secret_path(value.rpartition("@")[2].lstrip("<"))
        if found:
            return found
    return None


def exfiltration(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A network client sent the environment or a secret file, by pipe, substitution,
    redirection or its own upload options."""
    reason = _first(
        (
            _first(_source_secret(a) for a in cmd.upstream),
            _first(_source_secret(a) for a in cmd.substitutions),
            _first(_secret_path(t) for op, t in cmd.redirects if op in ("<", "<>")),
            _upload_secret(cmd.argv),
        )
    )
    if reason is None:
        return ()
    return single_hit(cmd.text, f"{reason} sent through {cmd.program}", always=True)
