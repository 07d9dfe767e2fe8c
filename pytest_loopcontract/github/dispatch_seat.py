"""``loop-contract github seat``: one seat writes its candidate, in a job of its own.

Runs in a seat job of the dispatch workflow, which has no GitHub token at all: only the seat's
own secret, handed to this process as ``LOOP_CONTRACT_SEAT_SECRET`` and to the seat under the
variable the contract names (``seats[].secret``). The seat is a program the contest does not
trust, so it runs through exactly the code of the local ``contest run``: the same prompt
(:func:`~pytest_loopcontract.contest.prompting.contest_prompt`), a fresh worktree at the base
commit, :func:`~pytest_loopcontract.contest.seats.run_seat` (timeout, bounded output, the
seat's outcome kinds) and :func:`~pytest_loopcontract.contest.worktrees.capture_candidate`
(one commit of what the seat left), inside a sandbox (:func:`_box`): no view of the runner's
processes, home or temporary folder, so neither the job's environment in ``/proc`` nor the
runner's files reach the seat, and it cannot write another seat's upload. What leaves the job
is data for the propose job: a git bundle of that one commit and ``seat.json`` (the run's
facts, the secret's value blanked out). The seat's logs stay in the job: they could hold its
own secret.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.prompting import contest_prompt
from pytest_loopcontract.contest.seat_model import Seat, SeatRun, seats_from_contract
from pytest_loopcontract.contest.seats import run_seat, runner_folders, seat_box
from pytest_loopcontract.contest.worktrees import (
    CandidateError,
    Worktree,
    add_checkout,
    capture_candidate,
)
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.fsio import write_text_atomic
from pytest_loopcontract.github.dispatch import DispatchError
from pytest_loopcontract.verifier.sandbox import Confinement, SandboxUnavailable
from pytest_loopcontract.workspace import WorkspaceError, git

__all__ = ["BUNDLE", "RECORD", "SECRET_ENV", "find_seat", "redact", "run_dispatched_seat"]

SECRET_ENV = "LOOP_CONTRACT_SEAT_SECRET"
BUNDLE = "candidate.bundle"
RECORD = "seat.json"


def find_seat(contract: Contract, name: str) -> tuple[Seat, str]:
    """The seat called ``name`` and the variable its secret goes in ("" for none)."""
    for seat, raw in zip(seats_from_contract(contract), contract.seats, strict=True):
        if seat.name == name:
            if not seat.generate:
                raise DispatchError(f"seat {name!r} has no generate command to dispatch")
            return seat, str(raw.get("secret") or "")
    known = ", ".join(s.name for s in seats_from_contract(contract)) or "none"
    raise DispatchError(f"the contract has no seat {name!r} (its seats: {known})")


def redact(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret`` replaced (a seat may echo its key)."""
    return text.replace(secret, "***") if len(secret) >= 4 else text


def run_dispatched_seat(
    root: Path,
    *,
    contract: Contract,
    seat_name: str,
    base_sha: str,
    context: Mapping[str, Any],
    work: Path,
    out: Path,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the seat once at ``base_sha`` and write ``out/seat.json`` (and the bundle when the
    seat left a change); returns the record. ``environ`` (default ``os.environ``) loses the
    secret carrier before the seat starts."""
    env = os.environ if environ is None else environ
    secret = env.pop(SECRET_ENV, "")
    seat, variable = find_seat(contract, seat_name)
    round_no = int(context.get("round") or 1)
    run_id = str(context.get("run") or "local")
    private = work / "private"
    prompt_file = _write_prompt(contract, seat.name, context, round_no, private)
    out.mkdir(parents=True, exist_ok=True)
    # A checkout of its own holding the base commit only: the runner's clone (its other
    # branches, its history, the workspace) stays out of the seat's sight.
    worktree = add_checkout(
        root,
        contract_id=contract.id,
        seat=seat.name,
        base_commit=base_sha,
        parent=work / "worktrees",
    )
    run = run_seat(
        seat,
        "candidate",
        cwd=worktree.path,
        values={"prompt_file": str(prompt_file), "workdir": str(worktree.path)},
        report_file=private / "report.json",
        env_extra={variable: secret} if variable and secret else None,
        confinement=_box(contract, seat, root, env),
    )
    record = _record(seat, run, round_no, run_id, base_sha, secret)
    if variable and not secret:
        record["notes"].append(f"no value for {variable}: {SECRET_ENV} was empty")
    if run.status == "ok":
        message = f"loop-contract candidate of {seat.name} (run {run_id}, round {round_no})"
        record.update(_capture(root, worktree, message, base_sha, out, secret))
    write_text_atomic(out / RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def _box(contract: Contract, seat: Seat, root: Path, env: Mapping[str, str]) -> Confinement:
    """The seat's sandbox on the runner (:func:`.seats.seat_box`): the runner's home (its
    credentials, the workspace, the other steps' files) and ``RUNNER_TEMP`` (this job's venv,
    the upload folder) are out of sight, the runner's clone with them (the seat works in a
    checkout of its own, :func:`.worktrees.add_checkout`); the seat's program is shown again.
    Required unless the contract says ``github: {require_sandbox: false}``."""
    required = contract.github.require_sandbox
    try:
        return seat_box(seat, "candidate", required=required, hidden=[*runner_folders(env), root])
    except SandboxUnavailable as exc:
        raise DispatchError(
            f"seat {seat.name}: {exc} (the contract can allow an unconfined seat with "
            "github: {require_sandbox: false})"
        ) from None


def _write_prompt(
    contract: Contract, seat: str, context: Mapping[str, Any], round_no: int, private: Path
) -> Path:
    """The seat's prompt file, written as the local contest writes it: goal, DoD, gates, the
    lessons, a rejection's reason and this seat's own failed gates from the plan's context."""
    retry = (context.get("retry") or {}).get(seat) or []
    prompt = contest_prompt(
        contract,
        attempt=round_no,
        lessons_block=str(context.get("lessons") or ""),
        rejection=context.get("rejection") or None,
        retry=[str(note) for note in retry],
    )
    private.mkdir(parents=True, exist_ok=True)
    prompt_file = private / "prompt.md"
    write_text_atomic(prompt_file, prompt)
    return prompt_file


def _capture(
    root: Path, worktree: Worktree, message: str, base_sha: str, out: Path, secret: str
) -> dict[str, Any]:
    """What the seat left, as one commit in a bundle: the record's fields it settles."""
    try:
        captured = capture_candidate(root, worktree, message=message)
    except (CandidateError, WorkspaceError) as exc:
        return {"status": "candidate_lost", "reason": redact(str(exc), secret)}
    fields: dict[str, Any] = {"commit": captured.commit, "changed": list(captured.changed_paths)}
    if captured.changed_paths:
        git(root, "bundle", "create", str(out / BUNDLE), f"{base_sha}..{worktree.branch}")
    else:
        fields.update(status="no_change", reason="the seat changed no file")
    return fields


def _record(
    seat: Seat, run: SeatRun, round_no: int, run_id: str, base_sha: str, secret: str
) -> dict[str, Any]:
    return {
        "seat": seat.name,
        "round": round_no,
        "run": run_id,
        "base": base_sha,
        "status": run.status,
        "exit_code": run.exit_code,
        "seconds": round(run.seconds, 3),
        "tokens": run.tokens,
        "cost_usd": run.cost_usd,
        "reason": redact(run.reason, secret),
        "notes": [redact(note, secret) for note in run.notes],
        "commit": None,
        "changed": [],
    }
