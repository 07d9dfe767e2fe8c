"""Reading coverage: a ``coverage json`` report, or a data file coverage.py turns into one.

A data file is analysed by coverage.py itself, in a child interpreter started with ``-I`` in
``workdir``. Settings that coverage resolves against the current directory (``omit =
tests/*``, ``relative_files``, the search for ``.coveragerc``/``setup.cfg``/``tox.ini``/
``pyproject.toml``) then mean what they mean for ``coverage report`` run there; the child
cannot import candidate code from the working directory; ``COVERAGE_*`` variables are dropped
so the environment cannot swap the configuration; and coverage's process-global state in the
verifier is left alone. The child writes a ``coverage json`` report, the same format a
contract may name directly, so both routes share one parser.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.contract.model import MeasuredGate
from pytest_loopcontract.verifier.sensors.capped_run import last_line, run_capped
from pytest_loopcontract.verifier.sensors.common import (
    finite_number,
    json_document,
    read_capped,
    shown_path,
    source_str,
)
from pytest_loopcontract.verifier.sensors.protocol import SensorContext, Unavailable
from pytest_loopcontract.workspace import scratch_folder

__all__ = ["CoverageReport", "FileLines", "load_coverage_report"]

_COVERAGE_TIMEOUT = 300.0
_SQLITE_MAGIC = b"SQLite format 3\x00"

# The verifier's own plugin, copied beside the run (``runner.INNER_NAME``): a project whose
# coverage settings name no ``source`` has it measured too, and its copy is gone by the time
# the report is made, so it is left out of the report on top of the project's own ``omit``.
INNER_OMIT = "*/_loopcontract_inner/*"

# Run by ``python -I -c`` in the work directory: argv[1] is the data file, argv[2] the JSON
# report to write. Exit code _NO_DATA_EXIT means coverage.py found nothing to report.
_NO_DATA_EXIT = 3
_COVERAGE_PROBE = f"""\
import sys
import coverage
from coverage.exceptions import NoDataError
try:
    cov = coverage.Coverage(data_file=sys.argv[1], config_file=True)
    omit = cov.get_option("report:omit") or []
    cov.set_option("report:omit", [*omit, {INNER_OMIT!r}])
    cov.load()
    cov.json_report(outfile=sys.argv[2])
except NoDataError:
    sys.exit({_NO_DATA_EXIT})
"""


@dataclass(frozen=True)
class FileLines:
    statements: frozenset[int]
    missing: frozenset[int]


@dataclass(frozen=True)
class CoverageReport:
    """The parts of a ``coverage json`` report the gates need, keyed by repo-relative path."""

    origin: str
    percent: float
    statements: int
    branch: bool
    precision: int | None
    files: Mapping[str, FileLines]


def _coverage_file(gate: MeasuredGate, ctx: SensorContext) -> Path:
    """The report or data file to read: the gate's, else the run's, else the usual names."""
    if "file" in gate.source:
        candidates = [ctx.workdir / source_str(gate, "file")]
    elif ctx.coverage_data is not None:
        candidates = [ctx.workdir / ctx.coverage_data]
    else:
        candidates = [ctx.workdir / "coverage.json", ctx.workdir / ".coverage"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " or ".join(shown_path(c, ctx.workdir) for c in candidates)
    raise Unavailable("missing", f"no coverage data: {looked} not found")


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC


def _coverage_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The child's environment without ``COVERAGE_*``, which could replace the pinned rc."""
    base = os.environ if env is None else env
    return {key: value for key, value in base.items() if not key.startswith("COVERAGE_")}


def _json_report_from_data(data_file: Path, origin: str, ctx: SensorContext) -> bytes:
    """Have coverage.py turn a data file into a JSON report, as if run in ``workdir``.

    coverage.py reads a copy: opening a database without its schema would add the schema.
    """
    with scratch_folder("loopcontract-coverage-") as scratch:
        data_copy = scratch / "coverage.data"
        shutil.copyfile(data_file, data_copy)
        report = scratch / "coverage.json"
        done = run_capped(
            [sys.executable, "-I", "-c", _COVERAGE_PROBE, str(data_copy), str(report)],
            cwd=ctx.workdir,
            env=_coverage_env(ctx.env),
            timeout=_COVERAGE_TIMEOUT,
            label="coverage.py",
        )
        if done.returncode == _NO_DATA_EXIT:
            raise Unavailable("not_measurable", f"{origin} has no measured files to report")
        if done.returncode != 0:
            detail = last_line(done.stderr_tail)
            raise Unavailable("error", f"coverage.py could not report {origin}: {detail}")
        return read_capped(report, f"coverage.py's JSON report of {origin}")


def _repo_relative(name: str, roots: Sequence[Path]) -> str:
    """Map a report's file name (relative, or absolute inside the scratch dir) to a repo path."""
    path = Path(name)
    if path.is_absolute():
        for root in roots:
            if path.is_relative_to(root):
                return path.relative_to(root).as_posix()
    return path.as_posix()


def _line_numbers(value: Any, what: str) -> frozenset[int]:
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in value
    ):
        raise Unavailable("error", f"{what} is not a list of line numbers")
    return frozenset(value)


def _file_lines(entry: Any, what: str) -> FileLines:
    if not isinstance(entry, dict):
        raise Unavailable("error", f"{what} is not an object")
    executed = _line_numbers(entry.get("executed_lines"), f"{what}.executed_lines")
    missing = _line_numbers(entry.get("missing_lines"), f"{what}.missing_lines")
    return FileLines(statements=executed | missing, missing=missing)


def _display_precision(display: Any) -> int | None:
    """The precision coverage's configuration used, read off ``percent_covered_display``."""
    if not isinstance(display, str):
        return None
    _, dot, decimals = display.partition(".")
    return len(decimals) if dot else 0


def _parse_coverage_json(raw: bytes, origin: str, ctx: SensorContext) -> CoverageReport:
    document = json_document(raw, origin)
    totals = document.get("totals") if isinstance(document, dict) else None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(totals, dict) or not isinstance(files, dict):
        raise Unavailable("error", f"{origin} is not a coverage.py JSON report")
    statements = totals.get("num_statements")
    if isinstance(statements, bool) or not isinstance(statements, int):
        raise Unavailable("error", f"{origin}: totals.num_statements is not an integer")
    meta = document.get("meta")
    roots = (ctx.workdir, ctx.workdir.resolve())
    return CoverageReport(
        origin=origin,
        percent=finite_number(totals.get("percent_covered"), f"{origin}: totals.percent_covered"),
        statements=statements,
        branch=isinstance(meta, dict) and meta.get("branch_coverage") is True,
        precision=_display_precision(totals.get("percent_covered_display")),
        files={
            _repo_relative(str(name), roots): _file_lines(entry, f"{origin}: files[{name!r}]")
            for name, entry in files.items()
        },
    )


def load_coverage_report(gate: MeasuredGate, ctx: SensorContext) -> CoverageReport:
    path = _coverage_file(gate, ctx)
    shown = shown_path(path, ctx.workdir)
    if _is_sqlite(path):
        origin = f"coverage data {shown}"
        return _parse_coverage_json(_json_report_from_data(path, origin, ctx), origin, ctx)
    origin = f"coverage report {shown}"
    return _parse_coverage_json(read_capped(path, shown), origin, ctx)
