"""Writing the reports: the checkpoint evidence from the history, then write-then-rename.

The I/O edge of the reports: the pure builders (:mod:`.junit`, :mod:`.sarif`) get the verdict
the launcher composed and the history records it already trusts; nothing here reads a file
the candidate's run wrote. Reports are for other tools and people to read, so they are
``0644`` (the atomic writer's temporary file is private until renamed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints.clearance import RAISED
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.fsio import dumps_json, write_bytes_atomic
from pytest_loopcontract.history import History
from pytest_loopcontract.history.records import Record
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import VerdictView
from pytest_loopcontract.verifier.reports.junit import junit_xml
from pytest_loopcontract.verifier.reports.sarif import Evidence, sarif_log

__all__ = ["REPORT_MODE", "checkpoint_evidence", "evidence_of", "write_report", "write_reports"]

REPORT_MODE = 0o644


def evidence_of(document: Mapping[str, Any], records: Sequence[Record]) -> list[Evidence]:
    """The matches behind the verdict's checkpoint reasons, from the history's raise records
    (the verdict names each request by id at the start of the reason's message)."""
    wanted: dict[str, str] = {}
    for reason in VerdictView(document).reasons():
        code = str(reason.get("code", ""))
        if code in ("checkpoint_pending", "checkpoint_denied"):
            wanted[str(reason.get("message", "")).split(":", 1)[0]] = code
    found: list[Evidence] = []
    for record in records:
        request = str(record.data.get("id", ""))
        if record.kind != RAISED or request not in wanted:
            continue
        for match in record.data.get("matches") or ():
            if not isinstance(match, Mapping):
                continue
            line = match.get("line")
            found.append(
                Evidence(
                    reason=wanted[request],
                    request=request,
                    pattern=str(match.get("pattern_id") or "checkpoint"),
                    message=str(match.get("message") or ""),
                    path=str(match.get("path") or ""),
                    line=line if isinstance(line, int) and line >= 1 else None,
                )
            )
    return found


def checkpoint_evidence(root: Path, document: Mapping[str, Any]) -> list[Evidence]:
    """:func:`evidence_of` the repository's history (none when there is no history)."""
    state = StateDir.of(root)
    if not state.folder.is_dir():
        return []
    return evidence_of(document, History(state.folder).read().records)


def write_report(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, mode 0644; a clear error for a bad path."""
    if path.is_dir():
        raise CommandError(f"cannot write a report to {path}: it is a folder; name a file")
    try:
        write_bytes_atomic(path, data)
        os.chmod(path, REPORT_MODE)
    except OSError as exc:
        raise CommandError(f"cannot write the report {path}: {exc.strerror or exc}") from exc


def write_reports(
    root: Path,
    document: Mapping[str, Any],
    *,
    junit: Path | None = None,
    sarif: Path | None = None,
) -> list[Path]:
    """Write the JUnit XML and/or SARIF reports of ``document``; returns the paths written."""
    written = []
    if junit is not None:
        write_report(junit, junit_xml(document))
        written.append(junit)
    if sarif is not None:
        log = sarif_log(document, checkpoint_evidence(root, document))
        write_report(sarif, (dumps_json(log, indent=2) + "\n").encode("utf-8"))
        written.append(sarif)
    return written
