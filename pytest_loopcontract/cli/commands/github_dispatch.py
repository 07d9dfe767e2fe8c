"""``loop-contract github dispatch|seat|propose``: the three jobs of the dispatch workflow.

``dispatch`` (plan job, read-only token): who asked, may they, and the seat matrix.
``seat`` (one job per seat, no token): run the seat, hand over a bundle and a record.
``propose`` (one job per seat, write token, no seat code): push and open or update the pull
request. The values that cross between jobs travel as job outputs and artifacts, each checked
again where it is used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.github.actions_env import ActionsEnv
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.dispatch import (
    contract_path_problem,
    dispatch_context,
    may_dispatch,
    seat_matrix,
    trigger_of,
)
from pytest_loopcontract.github.dispatch_propose import propose
from pytest_loopcontract.github.dispatch_seat import run_dispatched_seat
from pytest_loopcontract.github.pulls import is_commit_sha

__all__ = ["CONTEXT_ENV", "DISPATCH_MODES", "github_dispatch"]

DISPATCH_MODES = ("dispatch", "seat", "propose")
CONTEXT_ENV = "LOOP_CONTRACT_DISPATCH"


def github_dispatch(
    mode: str, *, contract: str, seat: str | None, base_sha: str | None, folder: str
) -> int:
    """Run one dispatch mode (``folder``: seat's output, propose's downloaded artifact)."""
    if mode == "seat":
        return _seat(contract, seat, base_sha, Path(folder))
    env = ActionsEnv.from_environ()
    if mode == "dispatch":
        return _plan(env, contract)
    return _propose(env, contract, seat, base_sha, Path(folder))


def _plan(env: ActionsEnv, default_contract: str) -> int:
    none = {"seats": "[]", "contract": "", "base_sha": "", "context": "{}"}
    trigger = trigger_of(env.event_name, env.event(), default_contract)
    if trigger is None:
        print("dispatch: this event does not ask for a contest")
        return _outputs(env, none)
    repo = make_github(env.token, base_url=env.api_url, lazy=True).get_repo(env.repository)
    allowed, level = may_dispatch(repo, trigger.login)
    if not allowed:
        print(f"dispatch: {trigger.login} has {level} permission; a contest needs write")
        return _outputs(env, none)
    problem = contract_path_problem(trigger.contract)
    if problem is not None:
        raise CommandError(problem)
    root = repo_root()
    loaded = load_contract(str(root / trigger.contract))
    rows = seat_matrix(loaded)
    seats = [row["name"] for row in rows]
    context = dispatch_context(repo, loaded, seats, env.run_id, bot_login=env.bot_login)
    base = os.environ.get("GITHUB_SHA", "")
    if not is_commit_sha(base):
        raise CommandError(f"GITHUB_SHA {base!r} is not a commit id (set by Actions)")
    names = ", ".join(row["name"] for row in rows) or "none"
    print(f"dispatch: {trigger.login} ({level}) starts round {context['round']}: {names}")
    return _outputs(
        env,
        {
            "seats": json.dumps(rows),
            "contract": trigger.contract,
            "base_sha": base,
            "context": json.dumps(context, sort_keys=True),
        },
    )


def _outputs(env: ActionsEnv, values: dict[str, str]) -> int:
    for name, value in values.items():
        env.set_output(name, value)
    return 0


def _context() -> dict[str, Any]:
    try:
        context = json.loads(os.environ.get(CONTEXT_ENV) or "{}")
    except ValueError:
        raise CommandError(
            f"{CONTEXT_ENV} is not JSON: pass the plan job's context output"
        ) from None
    return context if isinstance(context, dict) else {}


def _checked(seat: str | None, base_sha: str | None) -> tuple[str, str]:
    if not seat or not base_sha or not is_commit_sha(base_sha):
        raise CommandError("github seat/propose need --seat NAME and --base-sha (40 hex digits)")
    return seat, base_sha


def _seat(contract: str, seat: str | None, base_sha: str | None, out: Path) -> int:
    name, base = _checked(seat, base_sha)
    root = repo_root()
    loaded = load_contract(str(root / contract))
    work = Path(os.environ.get("RUNNER_TEMP") or out.parent) / f"loop-contract-seat-{name}"
    record = run_dispatched_seat(
        root,
        contract=loaded,
        seat_name=name,
        base_sha=base,
        context=_context(),
        work=work,
        out=out.resolve(),
    )
    changed = len(record["changed"])
    print(f"seat {name}: {record['status']} ({changed} file(s) changed) {record['reason']}")
    return 0


def _propose(
    env: ActionsEnv, contract: str, seat: str | None, base: str | None, folder: Path
) -> int:
    name, base_sha = _checked(seat, base)
    root = repo_root()
    loaded = load_contract(str(root / contract))
    repo = make_github(env.token, base_url=env.api_url, lazy=True).get_repo(env.repository)
    done = propose(
        repo,
        root,
        contract=loaded,
        seat=name,
        folder=folder,
        base_sha=base_sha,
        token=env.token,
        server_url=os.environ.get("GITHUB_SERVER_URL") or "https://github.com",
        round_no=int(_context().get("round") or 1),
        run_id=env.run_id,
        run_attempt=os.environ.get("GITHUB_RUN_ATTEMPT") or "1",
    )
    where = f" #{done.number} at {done.head_sha}" if done.number is not None else ""
    print(f"seat {name}: pull request {done.action}{where} {done.why}".rstrip())
    if done.number is not None:
        started = "requested" if done.verification_requested else "NOT requested (see the log)"
        print(f"seat {name}: verification of #{done.number} {started}")
    env.set_output("pr", str(done.number or ""))
    return 0
