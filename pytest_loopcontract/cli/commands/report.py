"""``loop-contract report``: a contest run's report in the terminal, as markdown or as HTML."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.contest.report.html import write_html
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.contest.results import latest_result
from pytest_loopcontract.fsio import write_text_atomic

__all__ = ["report"]


def report(
    *,
    run_id: str | None = None,
    html: str | None = None,
    markdown: str | None = None,
    as_json: bool = False,
) -> int:
    """Render the newest finished run (or ``run_id``); files when asked, else the terminal."""
    _, result = latest_result(repo_root(), run_id)
    if html:
        write_html(Path(html), result)
    if markdown:
        write_text_atomic(Path(markdown), render_markdown(result))
    if as_json:
        print_json(result)
    elif not (html or markdown):
        print(render_terminal(result))
    else:
        for kind, target in (("html", html), ("markdown", markdown)):
            if target:
                print(f"{kind} report written to {target}")
    return 0
