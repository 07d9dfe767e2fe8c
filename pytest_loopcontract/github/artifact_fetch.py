"""Fetch a verify run's candidate artifacts: listed and size-checked before any byte arrives.

Why it is built this way:

* **Publish holds a write token and reads what a pull request's run uploaded.**
  ``actions/download-artifact`` with a pattern downloads every artifact of the run, whatever
  its name or size, before anything looks at it. Here the run's artifacts are listed through
  the API first, and only ``candidate-<number>`` artifacts are taken (at most
  :data:`.artifacts.MAX_CANDIDATES`), each not expired and no larger than
  :data:`MAX_ARTIFACT_BYTES` as GitHub reports it.
* **The cap holds on the bytes that arrive too**: the download stops one byte past it, so a
  size the listing understated costs nothing. The archive is then unpacked member by member:
  only the files an artifact holds (:data:`.artifacts.ARTIFACT_FILES`), flat, regular files,
  each within its own cap, read with that cap; anything else refuses the whole artifact.
* **The token stays with GitHub**: the download URL answers with a redirect to storage, and the
  client (``requests``) drops the ``Authorization`` header when the host changes.

:func:`.artifacts.check_artifacts` then reads the folder exactly as before.
"""

from __future__ import annotations

import io
import logging
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import requests
from github.Repository import Repository

from pytest_loopcontract.github.artifacts import (
    ARTIFACT_FILES,
    DIFF_FILE,
    MAX_CANDIDATES,
    MAX_DIFF_BYTES,
    MAX_META_BYTES,
    MAX_VERDICT_BYTES,
    META_FILE,
    VERDICT_FILE,
    candidate_dirname,
)

__all__ = ["MAX_ARTIFACT_BYTES", "Fetched", "fetch_run_artifacts"]

log = logging.getLogger("loopcontract.github")

MAX_ARTIFACT_BYTES = MAX_VERDICT_BYTES + MAX_DIFF_BYTES + MAX_META_BYTES + 64 * 1024
"""A candidate's zip at most: its three files stored uncompressed, plus the zip's own bytes."""
_LIMITS = {VERDICT_FILE: MAX_VERDICT_BYTES, DIFF_FILE: MAX_DIFF_BYTES, META_FILE: MAX_META_BYTES}
_NAME = re.compile(r"candidate-([1-9][0-9]{0,8})")
_TIMEOUT = 60


@dataclass
class Fetched:
    """What was taken (pull request numbers) and what was refused or skipped, with why."""

    taken: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def fetch_run_artifacts(repo: Repository, run_id: int, dest: Path, *, token: str) -> Fetched:
    """Download run ``run_id``'s ``candidate-<n>`` artifacts into ``dest/candidate-<n>/``."""
    dest.mkdir(parents=True, exist_ok=True)
    found = Fetched()
    listed = list(repo.get_workflow_run(run_id).get_artifacts())
    for artifact in listed:
        match = _NAME.fullmatch(artifact.name)
        problem = _listing_problem(artifact.name, artifact.size_in_bytes, artifact.expired, match)
        if problem is None and len(found.taken) >= MAX_CANDIDATES:
            problem = f"more than {MAX_CANDIDATES} candidate artifacts in one run"
        if problem is None and match is not None:
            problem = _download(artifact.archive_download_url, token, dest, int(match.group(1)))
        if problem is None and match is not None:
            found.taken.append(int(match.group(1)))
        else:
            found.refused.append(f"{artifact.name[:80]!r}: {problem}")
            log.warning("artifact %r not taken: %s", artifact.name[:80], problem)
    return found


def _listing_problem(
    name: str, size: int, expired: bool, match: re.Match[str] | None
) -> str | None:
    if match is None:
        return "not a candidate artifact (candidate-<pull request number>)"
    if expired:
        return "expired"
    if size > MAX_ARTIFACT_BYTES:
        return f"{size} bytes, more than the limit of {MAX_ARTIFACT_BYTES}"
    return None


def _download(url: str, token: str, dest: Path, number: int) -> str | None:
    """The archive, unpacked into ``dest/candidate-<number>``; the problem, or None."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    try:
        with requests.get(url, headers=headers, stream=True, timeout=_TIMEOUT) as response:
            if response.status_code != 200:
                return f"download answered {response.status_code}"
            data = _bounded(response, MAX_ARTIFACT_BYTES)
    except requests.RequestException as exc:
        return f"download failed: {type(exc).__name__}"
    if data is None:
        return f"more than {MAX_ARTIFACT_BYTES} bytes arrived"
    return _unpack(data, dest / candidate_dirname(number))


def _bounded(response: requests.Response, limit: int) -> bytes | None:
    received = bytearray()
    for chunk in response.iter_content(64 * 1024):
        received += chunk
        if len(received) > limit:
            return None
    return bytes(received)


def _unpack(data: bytes, folder: Path) -> str | None:
    """The archive's members written into ``folder``, or why not (then nothing is kept)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        return f"not a zip archive ({exc})"
    contents: dict[str, bytes] = {}
    for member in members:
        problem = _member_problem(member, contents)
        if problem is not None:
            return problem
        with archive.open(member) as fh:
            body = fh.read(_LIMITS[member.filename] + 1)
        if len(body) > _LIMITS[member.filename]:
            return f"{member.filename} is larger than {_LIMITS[member.filename]} bytes"
        contents[member.filename] = body
    folder.mkdir(parents=True, exist_ok=False)
    for name, body in contents.items():
        (folder / name).write_bytes(body)
    return None


def _member_problem(member: zipfile.ZipInfo, seen: dict[str, bytes]) -> str | None:
    name = member.filename
    if name not in _LIMITS:
        return f"unexpected entry {name[:80]!r} (an artifact holds {', '.join(ARTIFACT_FILES)})"
    if name in seen:
        return f"{name} appears twice"
    kind = stat.S_IFMT(member.external_attr >> 16)  # 0: the archiver recorded no type
    if member.is_dir() or kind not in (0, stat.S_IFREG):
        return f"{name} is not a regular file"
    if member.file_size > _LIMITS[name]:
        return f"{name} is larger than {_LIMITS[name]} bytes"
    return None
