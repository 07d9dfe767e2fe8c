"""The gate phase of a local contest: every candidate verified, then stopped at the first gate
rank it fails.

The verdict comes from the isolated launcher (the one ``loop-contract
verify`` uses), never from the seat; each distinct tree is verified once and identical trees
share the verdict (and the ledger says which seats handed in the same tree); and where a
candidate stops is :func:`~.standing.gate_stage`'s single reading of the verdict, so the
judges only ever see candidates that passed every gate.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pytest_loopcontract.contest.field_verification import FieldVerdict, verify_field
from pytest_loopcontract.contest.run_state import Candidate, RunState
from pytest_loopcontract.contest.standing import gate_stage

__all__ = ["screen"]


def screen(state: RunState, batch: Sequence[Candidate], *, tag: str = "") -> None:
    """Verify each distinct tree once, in parallel; identical trees share the verdict.

    ``tag`` marks a re-run (a dissent that cites a test): its candidates are verified again
    whatever their stage, into a folder of their own.
    """
    ready = [c for c in batch if c.commit and c.tree]
    for cand in ready:
        if state.contract.mode == "improve" and not cand.changed:
            cand.stage = "hard"
            cand.reasons = [{"code": "empty_diff", "message": "improve mode: no change"}]
            state.progress.seat(cand.seat.name, "eliminated", "empty diff")
    ready = [c for c in ready if c.stage == "generation" or tag]
    if not ready:
        return

    def started(group: tuple[str, ...]) -> None:
        for name in group:
            state.progress.seat(name, "verifying", "shared tree" if len(group) > 1 else "")

    verified = verify_field(
        state.root,
        {c.seat.name: (c.commit or "", c.tree or "") for c in ready},
        # verification is CPU-bound pytest: more runs than CPUs only slows each down
        parallel=min(state.parallel, os.cpu_count() or 1),
        verdict_dir=state.run_dir / "verdicts" / f"attempt-{ready[0].attempt}{tag}",
        on_start=started,
    )
    shared_groups = {tuple(sorted((name, *v.shared_with))) for name, v in verified.items()}
    for group in sorted(g for g in shared_groups if len(g) > 1):
        state.event("identical_trees", seats=list(group), tree=state.candidates[group[0]].tree)
    for cand in ready:
        _settle(state, cand, verified[cand.seat.name])


def _settle(state: RunState, cand: Candidate, result: FieldVerdict) -> None:
    """Record one candidate's verification and where it stops."""
    cand.same_tree_as = result.shared_with
    if result.verdict is None:
        cand.stage = "hard"
        cand.reasons = [{"code": "verify_failed", "message": result.error or "no verdict"}]
        state.progress.seat(cand.seat.name, "eliminated", cand.reasons[0]["message"])
        return
    verdict = result.verdict
    cand.verdict = verdict
    if result.verdict_path is not None:
        cand.verdict_path = result.verdict_path.relative_to(state.root).as_posix()
    stage = gate_stage(verdict)
    cand.stage = stage or "passed"
    cand.reasons = [
        {"code": str(r["code"]), "message": str(r["message"])} for r in verdict.get("reasons") or []
    ]
    state.append(
        "outcome",
        {
            "verdict": verdict["verdict"],
            "exit_code": verdict["exit_code"],
            "attempt": cand.attempt,
            "stage": cand.stage,
            "reasons": [r["code"] for r in cand.reasons],
            "shared_with": list(cand.same_tree_as),
        },
        seat=cand.seat.name,
        family=cand.seat.family,
    )
    state.progress.seat(
        cand.seat.name,
        "survived" if stage is None else "eliminated",
        f"verdict {verdict['verdict']}" + (f", stopped at the {stage} gate" if stage else ""),
    )
