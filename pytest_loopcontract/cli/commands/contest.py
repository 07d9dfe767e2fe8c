"""``loop-contract contest run``: every seat, the gates, blind peer judging, the bracket."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import err, print_json
from pytest_loopcontract.cli.repo import contract_in_repo, repo_root
from pytest_loopcontract.contest.orchestrate import run_contest
from pytest_loopcontract.contest.report.markdown import render_markdown
from pytest_loopcontract.contest.report.terminal import render_terminal
from pytest_loopcontract.contest.result_file import contest_exit_code
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.statedir import StateDir

__all__ = ["run"]


def run(
    contract: str, *, parallel: int | None = None, quiet: bool = False, as_json: bool = False
) -> int:
    """Run one contest to the human gate; writes the run's report.md; live progress on stderr."""
    root = repo_root()
    rel = contract_in_repo(contract)[1] if Path(contract).exists() else None
    result = run_contest(root, contract_path=rel, emit=None if quiet else err, parallel=parallel)
    run_dir = StateDir.of(root).run_dir(result["run_id"])
    write_text_atomic(run_dir / "report.md", render_markdown(result))
    if as_json:
        print_json(result)
    else:
        print(render_terminal(result))
        print(f"run folder: {run_dir}")
    return contest_exit_code(result)
