"""Tamper detection: evidence that a candidate changed the referee rather than the code.

Pure functions over tree listings, diff text and run results. Each finding names what happened
and where, so a person reading a failed verdict sees "conftest.py added" rather than "failed".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.workspace import Pin, TreeEntry, matches_any

__all__ = [
    "boundary_findings",
    "crosscheck_findings",
    "pin_findings",
    "protected_paths",
]


def protected_paths(
    files: Iterable[str], globs: Sequence[str], explicit: Iterable[str]
) -> set[str]:
    """The files of a tree that are pinned: glob matches plus explicitly named files."""
    chosen = {f for f in files if matches_any(f, globs)}
    chosen.update(explicit)
    return chosen


def _allowed(path: str, allow: Sequence[str]) -> bool:
    return matches_any(path, allow)


def pin_findings(
    pins: Mapping[str, Pin],
    candidate: Mapping[str, TreeEntry],
    globs: Sequence[str],
    allow: Sequence[str],
    contract_path: str,
    *,
    restored: bool = True,
) -> list[Finding]:
    """Compare the candidate tree with the pins: modified, deleted, and new protected files."""
    changes: list[tuple[str, str, str, str]] = []  # (path, code, what, what the run did)
    for path, pin in sorted(pins.items()):
        entry = candidate.get(path)
        code = "contract_modified" if path == contract_path else None
        if entry is None:
            changes.append(
                (
                    path,
                    code or "protected_path_deleted",
                    "protected file deleted by the candidate",
                    "restored for the run",
                )
            )
        elif entry.blob != pin.blob or entry.mode != pin.mode:
            changes.append(
                (
                    path,
                    code or "protected_path_modified",
                    "protected file changed by the candidate",
                    "pinned content used for the run",
                )
            )
    for path in sorted(candidate):
        if path not in pins and matches_any(path, globs):
            changes.append(
                (
                    path,
                    "protected_path_added",
                    "new file under a protected pattern",
                    "removed for the run",
                )
            )
    return [
        Finding(
            code, what + (f" ({done})" if restored else ""), path, allowed=_allowed(path, allow)
        )
        for path, code, what, done in changes
    ]


def boundary_findings(
    changed: Iterable[tuple[str, str]], allow: Sequence[str], deny: Sequence[str]
) -> list[Finding]:
    findings = []
    for status, path in changed:
        if deny and matches_any(path, deny):
            findings.append(Finding("boundary_crossed", f"changed a denied path ({status})", path))
        elif allow and not matches_any(path, allow):
            findings.append(
                Finding(
                    "boundary_crossed",
                    f"changed a path outside the allowed boundaries ({status})",
                    path,
                )
            )
    return findings


def crosscheck_findings(
    results: RunResults,
    *,
    nonce: str,
    exit_code: int,
    expected: Iterable[str],
    allowed_plugins: Iterable[str],
    reported: RunResults | None = None,
) -> list[Finding]:
    """What the plugin reported against what the launcher knows independently; ``reported``
    is the run as the process told it (the referee's twins, which fail, still in it), which
    the exit code must agree with."""
    findings = []
    if results.nonce != nonce:
        findings.append(
            Finding(
                "nonce_mismatch",
                "the results file does not carry this run's nonce (forged or stale)",
            )
        )
    findings.extend(_exit_code_findings(reported or results, exit_code))
    missing, hidden = _unaccounted(results, expected)
    if hidden:
        findings.append(_listing("tests_deselected", "expected tests were deselected", hidden))
    if missing:
        findings.append(_listing("tests_missing", "expected tests did not run", missing))
    allowed = set(allowed_plugins)
    findings.extend(
        Finding("unexpected_plugin", f"plugin {name!r} loaded but is not on the allow-list")
        for name in results.plugins
        if name not in allowed
    )
    return findings


def _exit_code_findings(results: RunResults, exit_code: int) -> list[Finding]:
    """The process's exit code against the outcomes and the session status recorded."""
    findings = []
    bad = {"failed", "error"}
    reported_bad = any(t.outcome in bad for t in results.tests) or bool(results.collect_errors)
    if exit_code == 0 and reported_bad:
        findings.append(
            Finding("exit_code_mismatch", "pytest exited 0 although failures were recorded")
        )
    if exit_code == 1 and not reported_bad:
        findings.append(
            Finding(
                "exit_code_mismatch",
                "pytest exited 1 (tests failed) but every recorded outcome is a pass: "
                "reports were rewritten",
            )
        )
    status = results.pytest_exitstatus
    if status is not None and exit_code in (0, 1) and (status not in (0, 1) or status != exit_code):
        findings.append(
            Finding(
                "exit_code_mismatch",
                f"the session ended with status {status} but the process exited {exit_code}",
            )
        )
    return findings


def _unaccounted(results: RunResults, expected: Iterable[str]) -> tuple[list[str], list[str]]:
    """Expected tests with no outcome: missing (no collection error explains them) and
    deselected."""
    outcomes = results.outcomes()
    errored = [e.get("nodeid", "") for e in results.collect_errors]
    deselected = set(results.deselected)
    missing, hidden = [], []
    for nodeid in expected:
        if nodeid in outcomes:
            continue
        if nodeid in deselected:
            hidden.append(nodeid)
        elif not any(e and _under(nodeid, e) for e in errored):
            missing.append(nodeid)
    return missing, hidden


def _under(nodeid: str, errored: str) -> bool:
    """``nodeid`` is the errored node, or a test inside it (a module or a folder)."""
    base = errored.rstrip("/")
    return nodeid == errored or nodeid.startswith(base + "::") or nodeid.startswith(base + "/")


def _listing(code: str, what: str, nodeids: Sequence[str]) -> Finding:
    """``N <what>: a, b, c, d, e ...``: the count and the first five."""
    more = " ..." if len(nodeids) > 5 else ""
    return Finding(code, f"{len(nodeids)} {what}: " + ", ".join(nodeids[:5]) + more)


def doctest_findings(
    pinned: Mapping[str, str], observed: Mapping[str, str], allow: Sequence[str]
) -> list[Finding]:
    """Doctests whose examples (source or expected output) differ from the baseline's: the
    module is the candidate's to change, its doctests are not."""
    return [
        Finding(
            "doctest_modified",
            "the doctest's examples differ from the baseline (its expected output or source "
            "was edited)",
            nodeid.split("::", 1)[0],
            allowed=_allowed(nodeid.split("::", 1)[0], allow),
        )
        for nodeid, digest in sorted(pinned.items())
        if nodeid in observed and observed[nodeid] != digest
    ]
