"""Verify artifacts: written by the unprivileged job, read as untrusted data by the privileged one.

Why it is built this way:

* **Who wrote it.** A ``pull_request`` run executes the pull request's own code, and for a
  pull request the workflow file itself comes from the pull request. Whatever that run
  uploads may have been written by the candidate. The publishing run (``workflow_run``,
  privileged) therefore reads each artifact as hostile input: bounded sizes, no symbolic
  links, no files beyond the three it expects, JSON parsed strictly, the verdict checked
  against its schema.
* **Whose SHA.** ``meta.json`` says which pull request and head SHA the verdict belongs to, but
  only as a hint. The pull request and its head SHA come from the API (``expected``); an
  artifact claiming another SHA (in ``meta.json`` or as the verdict's measured commit) is
  rejected, so a verdict for an old or a different commit cannot win for the current head.
* **All or nothing.** An artifact with any problem yields no verdict and no diff, only the
  problems, each a sentence a person can act on. A problem in one candidate's folder never
  affects another candidate's.
* **Never follow a link.** Every open goes through a directory file descriptor with
  ``O_NOFOLLOW``, and each file is checked with ``lstat`` and again with ``fstat`` after the
  open, so a link or a FIFO swapped in between is still refused; reads stop one byte past
  the limit.

Layout: ``<folder>/candidate-<pr>/{verdict.json, diff.patch, meta.json}``, one folder per
candidate, which is what ``actions/download-artifact`` produces for artifacts named
``candidate-<pr>``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.fsio import loads_strict, write_bytes_atomic
from pytest_loopcontract.verdict import validate_verdict

__all__ = [
    "ARTIFACT_FILES",
    "DIFF_FILE",
    "MAX_CANDIDATES",
    "MAX_DIFF_BYTES",
    "MAX_META_BYTES",
    "MAX_VERDICT_BYTES",
    "META_FILE",
    "VERDICT_FILE",
    "ArtifactCheck",
    "candidate_dirname",
    "check_artifacts",
    "verdict_problems",
    "write_artifact",
]

log = logging.getLogger("loopcontract.github")

MAX_CANDIDATES = 64
"""At most this many entries in the artifact folder (and candidates in a contest)."""
MAX_VERDICT_BYTES = 2 * 1024 * 1024
MAX_DIFF_BYTES = 1024 * 1024
MAX_META_BYTES = 4 * 1024

VERDICT_FILE = "verdict.json"
DIFF_FILE = "diff.patch"
META_FILE = "meta.json"
ARTIFACT_FILES = (VERDICT_FILE, DIFF_FILE, META_FILE)
_LIMITS = {VERDICT_FILE: MAX_VERDICT_BYTES, DIFF_FILE: MAX_DIFF_BYTES, META_FILE: MAX_META_BYTES}

_SHA = re.compile(r"[0-9a-f]{40}")
_MAX_NAMED_EXTRAS = 5
"""Unexpected entries named one by one in a problem; the rest are counted."""
_MAX_SCHEMA_ERRORS = 3
_MAX_TEXT = 160
"""Untrusted text quoted in a problem (a file name, a JSON error) is cut to this length."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a FIFO swapped in after the lstat must not hang the privileged job.
_FILE_FLAGS = (
    os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
)


@dataclass(frozen=True)
class ArtifactCheck:
    """One candidate's artifact after checking: a verdict and a diff, or only problems."""

    pr: int
    verdict: Mapping[str, Any] | None
    diff: str | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict is not None and not self.problems


def candidate_dirname(pr: int) -> str:
    """The folder (and artifact name) of one candidate: ``candidate-<pr>``."""
    return f"candidate-{pr}"


def _show(text: str) -> str:
    """A name or message from the artifact, quoted inert (``repr`` escapes control characters)."""
    shown = repr(text)
    return shown if len(shown) <= _MAX_TEXT else shown[: _MAX_TEXT - 1] + "…"


def _check_expected(expected: Mapping[int, str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for pr, sha in expected.items():
        if isinstance(pr, bool) or not isinstance(pr, int) or pr <= 0:
            raise ValueError(f"expected: pull request number must be a positive int, got {pr!r}")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha.lower()):
            raise ValueError(f"expected: head SHA of #{pr} must be 40 hex digits, got {sha!r}")
        out[pr] = sha.lower()
    return out


def check_artifacts(folder: Path, *, expected: Mapping[int, str]) -> dict[int, ArtifactCheck]:
    """Check the downloaded artifact of every expected candidate.

    ``expected`` maps each candidate pull request to its head SHA *as the API reports it*.
    The result has exactly one entry per expected pull request. Entries of the folder that
    belong to no expected candidate are logged and ignored: they cannot affect anyone.
    """
    wanted = _check_expected(expected)
    if len(wanted) > MAX_CANDIDATES:
        problem = (
            f"the contest has {len(wanted)} candidates, more than the limit of {MAX_CANDIDATES}"
        )
        return _all_rejected(wanted, problem)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return _all_rejected(wanted, f"no artifacts were downloaded ({folder} does not exist)")
    except OSError as exc:
        return _all_rejected(wanted, f"the artifact folder {folder} is unreadable: {exc.strerror}")
    if stat.S_ISLNK(st.st_mode):
        problem = f"the artifact folder {folder} is a symbolic link (links are never followed)"
        return _all_rejected(wanted, problem)
    if not stat.S_ISDIR(st.st_mode):
        return _all_rejected(wanted, f"the artifact folder {folder} is not a folder")
    try:
        dfd = os.open(folder, _DIR_FLAGS)
    except OSError as exc:
        problem = f"the artifact folder {folder} could not be opened: {exc.strerror}"
        return _all_rejected(wanted, problem)
    try:
        names, overflow = _list_names(dfd, MAX_CANDIDATES)
        if overflow:
            problem = (
                f"the artifact folder holds more than {MAX_CANDIDATES} entries "
                "(too many candidates); none was read"
            )
            return _all_rejected(wanted, problem)
        for name in sorted(set(names) - {candidate_dirname(pr) for pr in wanted}):
            log.warning(
                "ignoring artifact entry %s: not expected from this run "
                "(another run speaks for it, or it is no candidate)",
                _show(name),
            )
        return {pr: _check_candidate(dfd, pr, sha) for pr, sha in wanted.items()}
    finally:
        os.close(dfd)


def _all_rejected(wanted: Mapping[int, str], problem: str) -> dict[int, ArtifactCheck]:
    return {pr: ArtifactCheck(pr, None, None, [problem]) for pr in wanted}


def _list_names(dfd: int, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` entry names of an open folder, and whether there were more."""
    names: list[str] = []
    with os.scandir(dfd) as entries:
        for entry in entries:
            if len(names) == limit:
                return names, True
            names.append(entry.name)
    return names, False


def _check_candidate(dfd: int, pr: int, head_sha: str) -> ArtifactCheck:
    where = candidate_dirname(pr)
    problem = _entry_problem(dfd, where, where + "/", want_dir=True)
    if problem is not None:
        return ArtifactCheck(pr, None, None, [problem])
    try:
        cfd = os.open(where, _DIR_FLAGS, dir_fd=dfd)
    except OSError as exc:
        return ArtifactCheck(pr, None, None, [f"{where}/ could not be opened: {exc.strerror}"])
    try:
        problems = _extra_entries(cfd, where)
        raw: dict[str, bytes] = {}
        for name in ARTIFACT_FILES:
            data, problem = _read_bounded(cfd, name, f"{where}/{name}", _LIMITS[name])
            if problem is not None:
                problems.append(problem)
            elif data is not None:
                raw[name] = data
    finally:
        os.close(cfd)
    if META_FILE in raw:
        problems += _meta_problems(raw[META_FILE], pr, head_sha, f"{where}/{META_FILE}")
    verdict: Mapping[str, Any] | None = None
    if VERDICT_FILE in raw:
        where_verdict = f"{where}/{VERDICT_FILE}"
        document, problem = _parse_json(raw[VERDICT_FILE], where_verdict)
        if problem is not None:
            problems.append(problem)
        else:
            found = verdict_problems(document, head_sha, where=where_verdict)
            problems += found
            if not found:
                verdict = document
    diff = raw[DIFF_FILE].decode("utf-8", errors="replace") if DIFF_FILE in raw else None
    if problems:
        return ArtifactCheck(pr, None, None, problems)
    return ArtifactCheck(pr, verdict, diff, [])


def _entry_problem(dfd: int, name: str, where: str, *, want_dir: bool) -> str | None:
    """Why ``name`` in the open folder is not what we want (missing, link, wrong type)."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return f"{where} is missing"
    except OSError as exc:
        return f"{where} could not be inspected: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{where} is a symbolic link (links are never followed)"
    if want_dir and not stat.S_ISDIR(st.st_mode):
        return f"{where} is not a folder"
    if not want_dir and not stat.S_ISREG(st.st_mode):
        return f"{where} is not a regular file"
    return None


def _extra_entries(cfd: int, where: str) -> list[str]:
    names, overflow = _list_names(cfd, len(ARTIFACT_FILES) + _MAX_NAMED_EXTRAS)
    extras = sorted(set(names) - set(ARTIFACT_FILES))
    problems = [f"{where}/ holds an unexpected entry {_show(name)}" for name in extras]
    if overflow:
        problems.append(f"{where}/ holds more unexpected entries than are listed here")
    return problems


def _read_bounded(cfd: int, name: str, where: str, limit: int) -> tuple[bytes | None, str | None]:
    """At most ``limit`` bytes of a regular file, never through a link; or a problem."""
    problem = _entry_problem(cfd, name, where, want_dir=False)
    if problem is not None:
        return None, problem
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=cfd)
    except OSError as exc:
        return None, f"{where} could not be opened: {exc.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{where} is not a regular file"
        if st.st_size > limit:
            return None, f"{where} is oversized: {st.st_size} bytes, the limit is {limit}"
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, f"{where} could not be read: {exc.strerror}"
    finally:
        os.close(fd)
    if size > limit:
        return None, f"{where} is oversized: more than {limit} bytes"
    return b"".join(chunks), None


def _parse_json(data: bytes, where: str) -> tuple[Any, str | None]:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity, bounded nesting."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{where} is not JSON: not UTF-8 text"
    try:
        document = loads_strict(text)
    except RecursionError:
        return None, f"{where} is not JSON we accept: nested too deeply"
    except ValueError as exc:
        return None, f"{where} is not JSON: {_show(str(exc))[1:-1]}"
    return document, None


def _meta_problems(data: bytes, pr: int, head_sha: str, where: str) -> list[str]:
    meta, problem = _parse_json(data, where)
    if problem is not None:
        return [problem]
    if not isinstance(meta, dict) or set(meta) != {"pr", "head_sha"}:
        return [f'{where} is schema-invalid: want exactly {{"pr": int, "head_sha": hex40}}']
    claimed_pr, claimed_sha = meta["pr"], meta["head_sha"]
    problems: list[str] = []
    if isinstance(claimed_pr, bool) or not isinstance(claimed_pr, int):
        problems.append(f"{where} is schema-invalid: pr is not an integer")
    elif claimed_pr != pr:
        problems.append(f"{where} claims pull request #{claimed_pr}, not #{pr}")
    if not isinstance(claimed_sha, str) or not _SHA.fullmatch(claimed_sha):
        problems.append(f"{where} is schema-invalid: head_sha is not 40 lower-case hex digits")
    elif claimed_sha != head_sha:
        problems.append(
            f"{where} claims head SHA {claimed_sha}, but the API says the head of "
            f"#{pr} is {head_sha}"
        )
    return problems


def verdict_problems(document: Any, head_sha: str, *, where: str = VERDICT_FILE) -> list[str]:
    """Why a parsed verdict cannot stand for ``head_sha`` (empty when it can)."""
    if not isinstance(document, dict):
        return [f"{where} is schema-invalid: not a JSON object"]
    errors = validate_verdict(document)
    if errors:
        shown = "; ".join(_show(e)[1:-1] for e in errors[:_MAX_SCHEMA_ERRORS])
        more = len(errors) - _MAX_SCHEMA_ERRORS
        tail = f" (and {more} more)" if more > 0 else ""
        return [f"{where} is schema-invalid: {shown}{tail}"]
    problems: list[str] = []
    if document["trust"] != "isolated":
        problems.append(f"{where} has trust {_show(document['trust'])}, a contest needs 'isolated'")
    environment = document["environment"]
    commit = environment.get("commit")
    if not isinstance(commit, str) or commit.lower() != head_sha:
        problems.append(
            f"{where} claims it measured commit {_show(str(commit))}, but the API says the "
            f"head is {head_sha}"
        )
    if environment.get("dirty") is True:
        problems.append(f"{where} was measured on a modified work tree, not on the commit")
    return problems


def write_artifact(
    folder: Path, *, pr: int, head_sha: str, verdict: Mapping[str, Any], diff: str
) -> Path:
    """Write one candidate's artifact folder (verify side); returns ``<folder>/candidate-<pr>``.

    Refuses what the checker would reject anyway (an invalid verdict, one measured on another
    commit, an oversized verdict), so the failure shows in the job that can explain it. A diff
    over the limit is cut on a character boundary with a closing note: the judges still see
    most of it.
    """
    if isinstance(pr, bool) or not isinstance(pr, int) or pr <= 0:
        raise ValueError(f"pr must be a positive int, got {pr!r}")
    if not isinstance(head_sha, str) or not _SHA.fullmatch(head_sha):
        raise ValueError(f"head_sha must be 40 lower-case hex digits, got {head_sha!r}")
    document = dict(verdict)
    problems = verdict_problems(document, head_sha)
    if problems:
        raise ValueError("; ".join(problems))
    verdict_bytes = (json.dumps(document, ensure_ascii=False, allow_nan=False) + "\n").encode()
    if len(verdict_bytes) > MAX_VERDICT_BYTES:
        raise ValueError(
            f"{VERDICT_FILE} would be {len(verdict_bytes)} bytes, the limit is {MAX_VERDICT_BYTES}"
        )
    meta_bytes = (json.dumps({"pr": pr, "head_sha": head_sha}) + "\n").encode()
    target = Path(folder) / candidate_dirname(pr)
    target.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or not target.is_dir():
        raise ValueError(f"{target} is not a plain folder")
    extras = sorted(p.name for p in target.iterdir() if p.name not in ARTIFACT_FILES)
    if extras:
        raise ValueError(f"{target} already holds other entries: {', '.join(map(_show, extras))}")
    write_bytes_atomic(target / VERDICT_FILE, verdict_bytes)
    write_bytes_atomic(target / DIFF_FILE, _capped_diff(diff))
    write_bytes_atomic(target / META_FILE, meta_bytes)
    return target


def _capped_diff(diff: str) -> bytes:
    data = diff.encode("utf-8", errors="surrogateescape")
    if len(data) <= MAX_DIFF_BYTES:
        return data
    note = f"\n# loop-contract: diff cut at {MAX_DIFF_BYTES} bytes of {len(data)}\n".encode()
    cut = MAX_DIFF_BYTES - len(note)
    while cut > 0 and data[cut] & 0xC0 == 0x80:  # never split a UTF-8 character in two
        cut -= 1
    return data[:cut] + note
