"""Added lines of files that execute as shell, read as the commands they will run.

``*.sh`` (and bash, zsh, ksh) files and git hooks, Makefile recipes (tab-indented lines),
Dockerfile ``RUN``/``CMD``/``ENTRYPOINT`` lines (exec form too) and ``COPY``/``ADD``, and the
``run:``/``script:`` steps of CI workflows (GitHub, GitLab, CircleCI). Lines ending in a
backslash are joined with the next one. Pure.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence

from pytest_loopcontract.checkpoints.shell.vocabulary import word_set

__all__ = ["joined_lines", "script_command", "script_flavour"]

_YAML_KEY_RE = re.compile(r"[\w.-]+\s*:(?:\s|$)")
_YAML_RUN_RE = re.compile(
    r"(?:run|script|before_script|after_script|command|entrypoint)\s*:\s*(.*)"
)
_DOCKER_RE = re.compile(r"(?i)\s*([A-Z]+)\s+(.*)")
_DOCKER_INSTRUCTIONS = word_set(
    "FROM COPY ADD ENV ARG LABEL WORKDIR USER EXPOSE VOLUME CMD ENTRYPOINT HEALTHCHECK SHELL "
    "STOPSIGNAL ONBUILD MAINTAINER RUN"
)


def script_flavour(path: str) -> str | None:
    """How the added lines of ``path`` execute: "shell", "make", "docker", "ci" or None."""
    base = posixpath.basename(path)
    low = base.lower()
    if low.endswith((".sh", ".bash", ".zsh", ".ksh")) or path.startswith((".husky/", ".githooks/")):
        return "shell"
    if base in ("Makefile", "makefile", "GNUmakefile") or low.endswith(".mk"):
        return "make"
    if low.startswith(("dockerfile", "containerfile")) or low.endswith(".dockerfile"):
        return "docker"
    workflow = ("/" + path).find("/.github/workflows/") >= 0 or path.startswith(".circleci/")
    if (workflow and low.endswith((".yml", ".yaml"))) or low == ".gitlab-ci.yml":
        return "ci"
    return None


def script_command(flavour: str, line: str) -> str | Sequence[str] | None:
    """The shell command on one added line of a script-like file, or None."""
    if flavour == "make":
        if not line.startswith("\t"):
            return None
        return line.strip().lstrip("@-+") or None
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if flavour == "docker":
        m = _DOCKER_RE.match(line)
        if m is None or m.group(1).upper() not in _DOCKER_INSTRUCTIONS:
            return stripped  # a continuation line of a RUN
        instruction, rest = m.group(1).upper(), m.group(2).strip()
        if instruction in ("RUN", "CMD", "ENTRYPOINT"):
            if rest.startswith("["):
                try:
                    argv = json.loads(rest)
                except ValueError:
                    return rest
                return [str(a) for a in argv] if isinstance(argv, list) else rest
            return rest
        return stripped if instruction in ("COPY", "ADD") else None
    if flavour == "ci":
        if stripped.startswith("- "):
            stripped = stripped[2:].lstrip()
        m = _YAML_RUN_RE.match(stripped)
        if m is not None:
            stripped = m.group(1).strip()
            if stripped in ("", "|", ">", "|-", ">-", "|+", ">+"):
                return None
            if len(stripped) > 1 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
                stripped = stripped[1:-1]
        elif _YAML_KEY_RE.match(stripped):
            return None
    return stripped


def joined_lines(added: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join added lines ending in a backslash with the consecutive line that follows."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    prev = -2
    for lineno, text in added:
        if pending is not None and lineno == prev + 1:
            pending = (pending[0], pending[1][:-1] + " " + text.strip())
        else:
            if pending is not None:
                out.append(pending)
            pending = (lineno, text)
        prev = lineno
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
        else:
            pending = (pending[0], pending[1].rstrip())
    if pending is not None:
        out.append(pending)
    return out
