"""Tamper detection: evidence that a candidate changed the referee rather than the code.

Pure functions over tree listings, diff text and run results. Each finding names what happened
and where, so a person reading a failed verdict sees "conftest.py added" rather than "failed".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.workspace import Pin, TreeEntry, matches_any

__all__ = [
    "HARNESS_PATTERNS",
    "boundary_findings",
    "crosscheck_findings",
    "harness_findings",
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


@dataclass(frozen=True)
class HarnessPattern:
    code: str
    regex: re.Pattern[str]
    message: str
    python_only: bool = True


HARNESS_PATTERNS: tuple[HarnessPattern, ...] = (
    HarnessPattern(
        "pytest_internals",
        re.compile(
            r"^\s*(from\s+_pytest\b|import\s+_pytest\b)|"
            r"\b(importlib\.import_module|__import__)\(\s*['\"]_pytest"
        ),
        "imports pytest internals",
    ),
    HarnessPattern(
        "hard_exit",
        re.compile(r"\bos\s*\.\s*_exit\b|\bfrom\s+os\s+import\s+.*\b_exit\b"),
        "calls os._exit (ends the run before results are written)",
    ),
    HarnessPattern(
        "report_rewrite",
        re.compile(
            r"\.\s*(outcome|longrepr|wasxfail)\s*=[^=]|"
            r"\bTestReport\b|\bCollectReport\b"
        ),
        "rewrites or forges test reports",
    ),
    HarnessPattern(
        "pytest_hook",
        re.compile(r"^\s*def\s+pytest_[a-z_]+\s*\("),
        "defines a pytest hook outside the protected configuration",
    ),
    HarnessPattern(
        "plugin_injection",
        re.compile(
            r"^\s*pytest_plugins\s*=|"
            r"\bpluginmanager\s*\.\s*(register|unregister|set_blocked)\b"
        ),
        "registers or blocks pytest plugins",
    ),
    HarnessPattern(
        "pytest_exit",
        re.compile(
            r"\bpytest\s*\.\s*exit\s*\(|"
            r"\b(session|config)\s*\.\s*(shouldstop|shouldfail|exitstatus)\s*="
        ),
        "stops or redirects the pytest session",
    ),
    HarnessPattern(
        "skip_injection",
        re.compile(
            r"\braise\s+(unittest\.)?SkipTest\b|"
            r"\bpytest\s*\.\s*(skip|xfail)\s*\(|\bpytest\s*\.\s*mark\s*\.\s*(skip|xfail)\b"
        ),
        "skips or xfails tests from code",
    ),
    HarnessPattern(
        "harness_patch",
        re.compile(
            r"\b(pytest|_pytest|unittest)(\s*\.\s*\w+)+\s*=(?!=)|"
            r"\bsetattr\s*\(\s*(pytest|_pytest|unittest)\b"
        ),
        "patches pytest or unittest objects",
    ),
    HarnessPattern(
        "harness_detection",
        re.compile(
            r"[\"']_?pytest[\"']\s+(not\s+)?in\s+sys\s*\.\s*modules|"
            r"PYTEST_CURRENT_TEST|PYTEST_VERSION|\bsys\s*\.\s*_called_from_test\b"
        ),
        "behaves differently when it detects the test harness",
    ),
    HarnessPattern(
        "pytest_env",
        re.compile(
            r"PYTEST_ADDOPTS|PYTEST_PLUGINS|"
            r"PYTEST_DISABLE_PLUGIN_AUTOLOAD|-p\s*no:|--deselect\b"
        ),
        "changes how pytest is invoked",
        python_only=False,
    ),
)


def _added_lines(diff: str) -> Iterator[tuple[str, int, str]]:
    """(path, new line number, text) for each added line of a ``git diff -U0`` patch."""
    path = ""
    line_no = 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            target = raw[4:]
            path = "" if target == "/dev/null" else _strip_prefix(target)
        elif raw.startswith("@@"):
            match = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
            line_no = int(match.group(1)) if match else 0
        elif raw.startswith("+") and path:
            yield path, line_no, raw[1:]
            line_no += 1


def _strip_prefix(target: str) -> str:
    if target.startswith('"') and target.endswith('"'):
        target = target[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        target = target.encode("latin-1", "replace").decode("utf-8", "replace")
    return target[2:] if target.startswith("b/") else target


_HARNESS_MODULES = r"(?:unittest|pytest|_pytest)"
_IMPORT_AS = re.compile(rf"^\s*import\s+{_HARNESS_MODULES}(?:\.[\w.]+)?\s+as\s+(\w+)")
_FROM_IMPORT = re.compile(rf"^\s*from\s+{_HARNESS_MODULES}(?:\.[\w.]+)?\s+import\s+\(?([^#)]+)")


def _harness_aliases(lines: Iterable[str]) -> set[str]:
    """Names an added line binds to harness objects: ``import unittest as u``,
    ``from unittest import TestCase as T``; patches through them are patches all the same."""
    names: set[str] = set()
    for text in lines:
        if match := _IMPORT_AS.match(text):
            names.add(match.group(1))
        elif match := _FROM_IMPORT.match(text):
            for part in match.group(1).split(","):
                words = part.split()
                if words and words[0] != "*":
                    names.add(words[-1])
    return names


def _alias_patch_pattern(names: set[str]) -> HarnessPattern | None:
    if not names:
        return None
    group = "|".join(sorted(re.escape(n) for n in names))
    return HarnessPattern(
        "harness_patch_alias",
        re.compile(rf"\b({group})(\s*\.\s*\w+)+\s*=(?!=)|\bsetattr\s*\(\s*({group})\b"),
        "patches pytest or unittest objects through an imported name",
    )


def harness_findings(
    diff: str, allow: Sequence[str], test_globs: Sequence[str] = ()
) -> list[Finding]:
    """Added lines that reach into the test harness. One finding per pattern and file."""
    added = list(_added_lines(diff))
    by_file: dict[str, list[str]] = {}
    for path, _, text in added:
        by_file.setdefault(path, []).append(text)
    extra = {path: _alias_patch_pattern(_harness_aliases(lines)) for path, lines in by_file.items()}
    seen: set[tuple[str, str]] = set()
    findings = []
    for path, line_no, text in added:
        is_python = path.endswith((".py", ".pth", ".pyi"))
        alias_pattern = extra.get(path)
        patterns = (*HARNESS_PATTERNS, *((alias_pattern,) if alias_pattern else ()))
        for pattern in patterns:
            if pattern.python_only and not is_python:
                continue
            if pattern.code == "skip_injection" and matches_any(path, test_globs):
                continue
            if (path, pattern.code) in seen or not pattern.regex.search(text):
                continue
            seen.add((path, pattern.code))
            findings.append(
                Finding(
                    "harness_manipulation",
                    f"{pattern.message}: {text.strip()[:160]}",
                    path,
                    line_no,
                    allowed=_allowed(path, allow),
                )
            )
    return findings


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
) -> list[Finding]:
    """What the plugin reported against what the launcher knows independently."""
    findings = []
    if results.nonce != nonce:
        findings.append(
            Finding(
                "nonce_mismatch",
                "the results file does not carry this run's nonce (forged or stale)",
            )
        )
    findings.extend(_exit_code_findings(results, exit_code))
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
