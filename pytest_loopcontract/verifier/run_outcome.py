"""What one finished test run says about itself, beyond its tests' outcomes.

An abnormal end (timeout, INTERNALERROR, no results, no tests) makes the verdict an ``error``;
processes that outlived the run, runtime patching and module shadowing are tamper findings.
Both are read off the run alone, compared with what the baseline run showed.
"""

from __future__ import annotations

from collections.abc import Iterable
from shlex import quote

from pytest_loopcontract.verdict import Finding, Reason
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.runner import PytestRun
from pytest_loopcontract.verifier.tamper.runtime import (
    leftover_findings,
    patch_findings,
    shadow_findings,
)

__all__ = ["run_errors", "run_findings"]


def run_errors(
    exit_code: int | None,
    timed_out: bool,
    results: RunResults | None,
    results_error: str,
    tail: str,
    timeout: float,
    coverage_python: str | None = None,
) -> list[Reason]:
    """The ``error`` reasons behind a run that did not end normally (none when it did).
    ``coverage_python``: the interpreter the run started under ``python -m coverage``."""
    if timed_out:
        return [Reason("timeout", f"the test run exceeded its {timeout:g}s timeout and was killed")]
    last = tail.strip().splitlines()[-3:]
    context = (" | " + " / ".join(line.strip() for line in last)) if last else ""
    if exit_code == 3:
        return [Reason("pytest_internal_error", f"pytest reported an INTERNALERROR{context}")]
    if exit_code == 2:
        return [Reason("pytest_interrupted", f"the test run was interrupted{context}")]
    if exit_code == 4:
        return [Reason("pytest_usage_error", f"pytest rejected its command line{context}")]
    if exit_code is not None and exit_code < 0:
        return [Reason("pytest_killed", f"pytest was killed by signal {-exit_code}{context}")]
    if results is None:
        fix = _coverage_fix(coverage_python, tail)
        return [Reason("no_results", f"{results_error} (exit {exit_code}){context}{fix}")]
    if exit_code == 5 or not results.tests:
        return [Reason("no_tests", "no tests ran" + _collection_errors(results))]
    if exit_code not in (0, 1):
        return [Reason("pytest_exit_code", f"pytest exited {exit_code}{context}")]
    return []


def run_findings(run: PytestRun, baseline: BaselineRecord, files: Iterable[str]) -> list[Finding]:
    """What the run itself shows: forged results, processes that outlived it, runtime
    patching, shadowing."""
    if run.forged:
        return [Finding("results_forged", f"{run.results_error}: the verdict cannot rest on it")]
    if run.results is None:
        return []
    extra = baseline.extra
    findings = leftover_findings(run.leftovers, leaked_at_baseline=bool(extra.get("leftovers")))
    known = {p.get("object", "") for p in extra.get("runtime_patches") or ()}
    findings += patch_findings(run.results.runtime_patches, known)
    origins = extra.get("module_origins") or {}
    findings += shadow_findings(run.results.module_origins, origins, files)
    return findings


def _coverage_fix(python: str | None, tail: str) -> str:
    """How to fix a run that never started because the contract's coverage gates need
    coverage.py and the test interpreter has none (installed away since the baseline)."""
    if python is None or "No module named coverage" not in tail:
        return ""
    return (
        f"; the coverage gates run the tests under coverage.py, which {python} cannot import:"
        f" install it there ({quote(python)} -m pip install coverage) and verify again"
    )


def _collection_errors(results: RunResults) -> str:
    """The collection errors behind an empty run, each in its own last words."""
    shown = []
    for error in results.collect_errors[:3]:
        lines = [ln.strip() for ln in error.get("message", "").splitlines() if ln.strip()]
        shown.append(f"{error.get('nodeid') or 'session'}: {lines[-1] if lines else '?'}")
    if not shown:
        return ""
    more = len(results.collect_errors) - len(shown)
    return "; collection failed in " + "; ".join(shown) + (f" (+{more} more)" if more else "")
