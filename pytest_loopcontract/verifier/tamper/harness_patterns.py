"""Tamper detection in a candidate's patch: added lines that reach into the test harness
(pytest's internals, hard exits, hook functions, patched assertions).

Apart from the pin checks (:mod:`.pins`), which the in-process plugin runs on every
``pytest --loop-contract`` session: these patterns are only for the launcher's diff, and
compiling them cost that session about 4 ms of import it never used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.workspace import matches_any

__all__ = ["HARNESS_PATTERNS", "HarnessPattern", "harness_findings"]


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
                    allowed=matches_any(path, allow),
                )
            )
    return findings
