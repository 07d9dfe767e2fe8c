"""``loop-contract report``: a contest run's report in the terminal, as markdown or as HTML."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.contest.report.html import REPORT_MODE, write_html
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.contest.result_file import latest_result
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.workspace import WorkspaceError, diff_text

__all__ = ["report"]


def report(
    *,
    run_id: str | None = None,
    html: str | None = None,
    markdown: str | None = None,
    as_json: bool = False,
) -> int:
    """Render the newest finished run (or ``run_id``); files when asked, else the terminal."""
    root = repo_root()
    _, result = latest_result(root, run_id)
    if html:
        write_html(Path(html), result, candidate_diffs(root, result))
    if markdown:
        write_text_atomic(Path(markdown), render_markdown(result), mode=REPORT_MODE)
    if as_json:
        print_json(result)
    elif not (html or markdown):
        print(render_terminal(result))
    else:
        for kind, target in (("html", html), ("markdown", markdown)):
            if target:
                print(f"{kind} report written to {target}")
    return 0


def candidate_diffs(root: Path, result: Mapping[str, Any]) -> dict[str, str | None]:
    """Each candidate's diff against the run's base commit, by tree, read from git (None when
    the objects are gone: a pruned branch, a report rendered in another clone)."""
    base = str((result.get("base") or {}).get("commit") or "")
    diffs: dict[str, str | None] = {}
    for cand in result.get("candidates") or []:
        tree = str(cand.get("tree") or "")
        if not tree or tree in diffs:
            continue
        try:
            diffs[tree] = diff_text(root, base, tree, context=3) if base else None
        except WorkspaceError:
            diffs[tree] = None
    return diffs
