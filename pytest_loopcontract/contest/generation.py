"""The generation phase of a local contest: every seat writes its candidate in its own worktree.

Why the checks here: a seat is a program the contest does not trust. Each one gets a fresh git
worktree at the baseline commit and its prompt in a private folder; its run is a ledger row as
soon as it ends (so a crash still records what was spent); and the repository itself is
snapshotted before and after, so a seat that wrote outside its worktree stops the whole run
(nothing from that attempt is trusted).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_loopcontract.contest.panel import save_seat_log
from pytest_loopcontract.contest.prompting import contest_prompt
from pytest_loopcontract.contest.run_state import Candidate, RunState
from pytest_loopcontract.contest.seats import run_seat, seat_box
from pytest_loopcontract.contest.worktrees import (
    CandidateError,
    add_checkout,
    capture_candidate,
    remove_checkout,
)
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.plural import plural
from pytest_loopcontract.verifier.snapshot import snapshot_worktree
from pytest_loopcontract.workspace import WorkspaceError, changed_paths, scratch_folder

__all__ = ["generate"]


def generate(
    state: RunState,
    names: Sequence[str],
    attempt: int,
    lessons_text: str,
    rejection: str | None,
    retry: Mapping[str, list[str]],
) -> str | None:
    """Dispatch the named seats in parallel; returns a stop reason if the run must stop."""
    prompts = {
        name: contest_prompt(
            state.contract,
            attempt=attempt,
            lessons_block=lessons_text,
            rejection=rejection,
            retry=retry.get(name, ()),
        )
        for name in names
    }
    before = snapshot_worktree(state.root)
    # Outside the repository: a seat's checkout holds the base commit only, and the other
    # seats' checkouts, the repository and its state folder are out of its sandbox's sight.
    with (
        scratch_folder("loopcontract-seats-") as tmp,
        cf.ThreadPoolExecutor(max_workers=state.parallel) as pool,
    ):
        futures = [
            pool.submit(_generate_one, state, state.candidates[name], attempt, prompt, tmp)
            for name, prompt in prompts.items()
        ]
        for future in futures:
            future.result()
    after = snapshot_worktree(state.root)
    if after == before:
        return None
    changed = [p for _, p in changed_paths(state.root, before, after)]
    state.event("outside_write", paths=changed[:50])
    return (
        "a seat wrote outside its worktree, into the repository itself: "
        + ", ".join(changed[:10])
        + " - the run stops; nothing from this attempt is trusted"
    )


def _generate_one(
    state: RunState, cand: Candidate, attempt: int, prompt: str, parent: Path
) -> None:
    seat = cand.seat
    cand.attempt, cand.verdict, cand.commit, cand.tree, cand.reasons = attempt, None, None, None, []
    cand.stage = "generation"
    state.progress.seat(seat.name, "generating", f"attempt {attempt}")
    private = state.run_dir / "seats" / f"{seat.name}-a{attempt}"
    private.mkdir(parents=True, exist_ok=True)
    prompt_file = private / "prompt.md"
    write_text_atomic(prompt_file, prompt)
    try:
        cand.worktree = add_checkout(
            state.root,
            contract_id=state.contract.id,
            seat=seat.name,
            base_commit=state.baseline.commit,
            parent=parent,
        )
    except (WorkspaceError, ValueError, OSError) as exc:
        cand.run = None
        cand.reasons = [{"code": "worktree_failed", "message": str(exc)}]
        state.progress.seat(seat.name, "eliminated", f"worktree: {exc}")
        return
    run = run_seat(
        seat,
        "candidate",
        cwd=cand.worktree.path,
        values={"prompt_file": str(prompt_file), "workdir": str(cand.worktree.path)},
        report_file=private / "report.json",
        confinement=seat_box(
            seat, "candidate", required=state.contract.isolation == "sandbox", hidden=[state.root]
        ),
    )
    cand.run, cand.finished_at = run, time.monotonic()
    save_seat_log(private, run)
    state.dispatched("candidate", attempt, seat, run)
    if run.status != "ok":
        cand.reasons = [{"code": f"seat_{run.status}", "message": run.reason}]
        progress = "unavailable" if run.status == "unavailable" else "eliminated"
        state.progress.seat(seat.name, progress, run.reason)
        return
    _capture(state, cand, attempt)
    remove_checkout(cand.worktree)  # the candidate is a commit now; the files are not needed


def _capture(state: RunState, cand: Candidate, attempt: int) -> None:
    """Commit what the seat left in its worktree as its candidate (tree, changed paths)."""
    assert cand.worktree is not None
    name = cand.seat.name
    try:
        captured = capture_candidate(
            state.root,
            cand.worktree,
            message=f"loop-contract candidate of {name} (run {state.run_id}, attempt {attempt})",
        )
    except (CandidateError, WorkspaceError) as exc:
        cand.reasons = [{"code": "candidate_lost", "message": str(exc)}]
        state.progress.seat(name, "eliminated", str(exc))
        return
    cand.commit, cand.tree = captured.commit, captured.tree
    cand.changed = tuple(captured.changed_paths)
    state.progress.seat(name, "generated", f"{plural(len(cand.changed), 'file')} changed")
