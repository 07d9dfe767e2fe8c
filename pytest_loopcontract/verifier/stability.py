"""Stability at baseline (``pytest: {stability_runs: N}``, 1 by default: off).

A pass-to-pass test is a promise: it passed at baseline, so a candidate that makes it fail has
broken something. A flaky test breaks that promise on its own, and the honest candidate fails
the no-regressions gate for it. With ``stability_runs`` of 2 or more the baseline runs the
suite again, the same command in the same scratch copy (so state a run leaves behind, and the
order, are what ``verify`` will meet too); a test that passed the first time and ended any
other way in a later run is *unstable*: recorded with the reason ``outcome_changed`` and every
outcome seen, left out of PASS_TO_PASS, so it never fails a gate or counts as missing.

The whole selection runs again rather than only the passed ids: 60,000 node ids do not fit on
a command line, and the same command is the better prediction of the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["OUTCOME_CHANGED", "outcome_changes", "repeat_runs"]

OUTCOME_CHANGED = "outcome_changed"

Run = TypeVar("Run")


def repeat_runs(run: Callable[[], Run], runs: int) -> list[Run]:
    """The runs after the first one (``runs - 1`` of them; none when the option is off)."""
    return [run() for _ in range(max(runs, 1) - 1)]


def outcome_changes(
    first: Mapping[str, str], later: Sequence[Mapping[str, str]], candidates: Iterable[str]
) -> list[dict[str, Any]]:
    """The ``candidates`` (ids that passed in ``first``) whose outcome differs in a later run;
    an id a later run did not report counts as ``missing`` there."""
    changed = []
    for nodeid in candidates:
        seen = [first.get(nodeid, "missing"), *(run.get(nodeid, "missing") for run in later)]
        if len(set(seen)) > 1:
            changed.append({"nodeid": nodeid, "reason": OUTCOME_CHANGED, "outcomes": seen})
    return changed
