"""File matchers: ``.env`` files and credential files, named by a command or added to a diff.

``ls``, ``stat``, ``test``/``[`` and ``echo``/``printf`` of an ``.env`` or key path do not count
as reading it; anything else that names one (``cat``, ``cp``, ``source``, editors, ``git add``,
``docker --env-file``, ``curl -d @file``, ``>``/``<`` redirections) does. ``.env.example``,
``.env.sample``, ``.env.template``, ``.env.dist`` (and ``.tmpl``, ``.tpl``, ``.defaults``) are
templates, not secrets; ``*.pub`` keys are public.
"""

from __future__ import annotations

import re

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.vocabulary import GLOB_RE, PRINTERS, SEARCHERS, word_set

__all__ = [
    "FILE_HINTS",
    "classify_path",
    "credential_file",
    "credential_path",
    "env_file",
    "env_path",
]

_NOT_FILE_ARGS = PRINTERS | {"test", "[", "[[", "ls", "stat"}


_ENV_TEMPLATES = word_set("example sample template dist tmpl tpl defaults")
_CRED_NAMES = word_set(
    "id_rsa id_dsa id_ecdsa id_ed25519 id_ecdsa_sk id_ed25519_sk .npmrc .pypirc .netrc _netrc "
    ".git-credentials credentials credentials.json .pgpass .htpasswd .dockercfg kubeconfig "
    ".my.cnf secrets.yml secrets.yaml secrets.json master.key"
)
_CRED_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore", ".p8", ".kdbx")
_CRED_DIR_RE = re.compile(
    r"(?:^|[/:=@~])\.(?:ssh|aws|gnupg|azure)(?:/|$)|(?:^|/)\.config/(?:gh|gcloud)(?:/|$)"
    r"|(?:^|/)\.kube/config$|(?:^|/)\.docker/config\.json$"
)
FILE_HINTS = (
    ".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".pem", ".key", ".p12", ".pfx", ".ppk",
    ".jks", ".keystore", ".p8", ".kdbx", "npmrc", "pypirc", "netrc", "credential", ".ssh",
    ".aws", ".gnupg", ".azure", ".kube", ".docker", ".config/g", "pgpass", "htpasswd",
    "dockercfg", "kubeconfig", "my.cnf", "secrets.", "client_secret",
)  # fmt: skip


def classify_path(path: str) -> tuple[str, str] | None:
    """("env-file" | "credential-file", what it is) for a path that holds secrets, else None."""
    p = path.strip().rstrip("/")
    if "://" not in p and ":" in p:
        p = p.rsplit(":", 1)[1]
    base = p.rsplit("/", 1)[-1]
    low = base.lower()
    if low in (".env", ".envrc"):
        return "env-file", base
    if low.startswith(".env."):
        return None if low[5:] in _ENV_TEMPLATES else ("env-file", base)
    if low.startswith(".env") and GLOB_RE.search(low):
        return "env-file", f"{base} (a glob that matches .env files)"
    if low.endswith(".pub"):
        return None
    if low in _CRED_NAMES or (low.startswith("client_secret") and low.endswith(".json")):
        return "credential-file", base
    if low.endswith(_CRED_SUFFIXES):
        return "credential-file", f"{base} (key or certificate file)"
    if _CRED_DIR_RE.search(p):
        return "credential-file", f"{p} (credential directory)"
    return None


def _file_operands(cmd: Command) -> list[str]:
    """Words of a command that name files it reads or writes, plus redirection targets."""
    out: list[str] = []
    name = cmd.program
    if name and name not in _NOT_FILE_ARGS:
        args = list(cmd.argv[1:])
        if name in SEARCHERS and not any(a in ("-e", "-f", "--regexp", "--file") for a in args):
            ops = [i for i, a in enumerate(args) if not a.startswith("-")]
            if ops:
                del args[ops[0]]
        for a in args:
            if a.startswith("-"):
                if "=" in a:
                    out.append(a.partition("=")[2])
                continue
            out.append(a.lstrip("@"))
    out.extend(target for _, target in cmd.redirects)
    return out


def _file_hits(cmd: Command, wanted: str) -> tuple[Hit, ...]:
    """The files of ``wanted`` kind a command reads or writes."""
    found = []
    for operand in _file_operands(cmd):
        kind = classify_path(operand)
        if kind is not None and kind[0] == wanted:
            found.append(kind[1])
    if not found:
        return ()
    return single_hit(cmd.text, ", ".join(dict.fromkeys(found)))


def env_file(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A command that reads or writes a .env file."""
    return _file_hits(cmd, "env-file")


def credential_file(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A command that reads or writes a key or credential file."""
    return _file_hits(cmd, "credential-file")


def _path_hits(path: str, wanted: str) -> tuple[Hit, ...]:
    """A path of ``wanted`` kind."""
    kind = classify_path(path)
    return single_hit(path, kind[1]) if kind is not None and kind[0] == wanted else ()


def env_path(path: str) -> tuple[Hit, ...]:
    """A .env file added to or changed in the repository."""
    return _path_hits(path, "env-file")


def credential_path(path: str) -> tuple[Hit, ...]:
    """A key or credential file added to or changed in the repository."""
    return _path_hits(path, "credential-file")
