"""Verify a whole field of candidates: each distinct tree once, several at a time.

Why a phase of its own: verification is most of a contest's wall time (every candidate runs the
full suite in an isolated scratch copy). The trees are independent, so they run in parallel up
to a bound; and candidates whose trees are identical (two seats that wrote the same fix) are
verified once and share the verdict, which is the only correct thing to do anyway: the verifier
is a function of the tree.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.worktrees import group_by_tree
from pytest_loopcontract.verifier.verify import verify
from pytest_loopcontract.workspace import WorkspaceError

__all__ = ["FieldVerdict", "verify_field"]


@dataclass(frozen=True)
class FieldVerdict:
    """One candidate's verification: the verdict (None on a launcher error), where it was
    written, the other candidates that shared the tree, and the launcher's error if any."""

    verdict: dict[str, Any] | None
    verdict_path: Path | None
    shared_with: tuple[str, ...]
    error: str | None = None


def verify_field(
    root: Path,
    commits: Mapping[str, tuple[str, str]],
    *,
    parallel: int,
    verdict_dir: Path,
    on_start: Callable[[tuple[str, ...]], None] | None = None,
) -> dict[str, FieldVerdict]:
    """Verify ``commits`` (name -> (commit, tree)); returns name -> :class:`FieldVerdict`.

    ``on_start`` is called with each group (names sharing one tree) as its run begins, for
    live progress. Verdicts are written to ``verdict_dir/<first name of the group>.json``.
    """
    groups = group_by_tree({name: tree for name, (_, tree) in commits.items()})
    results: dict[str, FieldVerdict] = {}

    def run(group: tuple[str, ...]) -> None:
        if on_start is not None:
            on_start(group)
        target = verdict_dir / f"{group[0]}.json"
        verdict: dict[str, Any] | None = None
        error: str | None = None
        try:
            outcome = verify(root, candidate_ref=commits[group[0]][0], verdict_path=target)
            verdict = outcome.verdict
        except WorkspaceError as exc:
            error = str(exc)
        for name in group:
            results[name] = FieldVerdict(
                verdict=verdict,
                verdict_path=target if verdict is not None else None,
                shared_with=tuple(n for n in group if n != name),
                error=error,
            )

    with cf.ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for future in [pool.submit(run, group) for group in groups]:
            future.result()
    return results
