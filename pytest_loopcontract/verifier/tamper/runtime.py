"""Findings from what the confined run itself showed, beyond its test outcomes.

Each compares the candidate's run with the baseline's, so that what an honest suite already
does at baseline (a fixture that leaks a helper process, a conftest that patches a clock) never
counts against a candidate:

* ``process_outlived_run``: processes still alive when pytest ended (the reaper killed them).
* ``runtime_patched``: a clock, builtin or framework object replaced during the run and not
  restored by the end of the test that replaced it.
* ``module_shadowed``: one of the project's own modules imported from a different file than at
  baseline (a copy placed where the tests look first while the real module stays broken).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_loopcontract.verdict import Finding

__all__ = ["leftover_findings", "patch_findings", "shadow_findings"]


def leftover_findings(
    leftovers: Sequence[Mapping[str, Any]], *, leaked_at_baseline: bool
) -> list[Finding]:
    if not leftovers or leaked_at_baseline:
        return []
    shown = "; ".join(str(p.get("cmdline", "?"))[:160] for p in leftovers[:3])
    more = f" (+{len(leftovers) - 3} more)" if len(leftovers) > 3 else ""
    return [
        Finding(
            "process_outlived_run",
            f"{len(leftovers)} process(es) were still alive when the test run ended and were "
            f"killed: {shown}{more}; a process that outlives the run can rewrite its results",
        )
    ]


def patch_findings(patches: Iterable[Mapping[str, str]], known: Iterable[str]) -> list[Finding]:
    seen = set(known)
    return [
        Finding(
            "runtime_patched",
            f"{p.get('object', '?')} was replaced during {p.get('during', '?')} and not "
            "restored: what the run measures (clocks, assertions, reports) was changed from "
            "inside",
        )
        for p in patches
        if p.get("object", "") not in seen
    ]


def shadow_findings(
    observed: Mapping[str, str], recorded: Mapping[str, Any], files: Iterable[str]
) -> list[Finding]:
    """A module moved by the fix (its baseline file gone) is a refactoring, not a shadow: only
    a module whose baseline file is still in the tree but was not the one imported counts."""
    present = set(files)
    out = []
    for module, origin in sorted(observed.items()):
        before = recorded.get(module)
        if isinstance(before, str) and before != origin and before in present:
            out.append(
                Finding(
                    "module_shadowed",
                    f"module {module!r} was imported from {origin}, but from {before} at "
                    "baseline: a copy shadows the code under test",
                    path=origin,
                )
            )
    return out
