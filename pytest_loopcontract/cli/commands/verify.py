"""``loop-contract verify``: the candidate's tests in an isolated scratch copy; the verdict."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.display import showing_progress
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.verdict import render_checklist
from pytest_loopcontract.verifier.verify import verify as run_verification

__all__ = ["verify"]


def verify(
    *,
    candidate: str | None = None,
    verdict: str | None = None,
    keep_scratch: bool = False,
    python: str | None = None,
    as_json: bool = False,
    junit_xml: str | None = None,
    sarif: str | None = None,
    quiet: bool = False,
) -> int:
    """Write the verdict and exit with its exit code (0 only when the contract is met).

    ``junit_xml`` / ``sarif``: also write those reports, built here in the launcher from the
    verdict it composed (never from files the candidate's run wrote)."""
    junit_path, sarif_path = _report_path(junit_xml), _report_path(sarif)
    root = repo_root()
    with showing_progress("verify", quiet=quiet):
        outcome = run_verification(
            root,
            candidate_ref=candidate,
            verdict_path=Path(verdict).resolve() if verdict else None,
            keep_scratch=keep_scratch,
            python=python,
        )
    if as_json:
        print_json(outcome.verdict)
    else:
        for line in render_checklist(outcome.verdict):
            print(line)
        for withdrawn in outcome.withdrawn:
            print(f"  checkpoint {withdrawn['id']} withdrawn: {withdrawn['why']}")
        print(f"  verdict written to {outcome.verdict_path}")
    if junit_path is not None or sarif_path is not None:
        # only when asked: the report builders (XML, SARIF, the history) cost a verify 15 ms
        from pytest_loopcontract.verifier.reports.output import write_reports

        for path in write_reports(root, outcome.verdict, junit=junit_path, sarif=sarif_path):
            if not as_json:
                print(f"  report written to {path}")
    return int(outcome.verdict["exit_code"])


def _report_path(value: str | None) -> Path | None:
    """The report's absolute path, refused before the run if it names a folder."""
    if not value:
        return None
    path = Path(value).resolve()
    if path.is_dir():
        raise CommandError(f"cannot write a report to {value}: it is a folder; name a file")
    return path
