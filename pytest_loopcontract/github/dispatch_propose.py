"""``loop-contract github propose``: push a seat's candidate and open or update its pull request.

Runs in the propose job of the dispatch workflow, after the seat's job, with
``contents: write`` and ``pull-requests: write``. It never runs anything the seat wrote: the
seat's job handed over a git bundle and a JSON record as an artifact, and both are read here as
untrusted data in a fresh checkout of the base commit. A different job, not a later step,
because a seat process could have left a git hook, a ``.git/config`` redirect or an edited
interpreter behind in its own job's filesystem, and the token would then run through it.

* **One commit on the base, or nothing.** The bundle is fetched with object checks on, and
  must hold exactly one commit whose only parent is the dispatch's base commit.
* **The token reaches git only for the push**, in the environment of that one ``git push``
  (``GIT_CONFIG_*``: never on a command line, never in ``.git/config``), with hooks off.
* **Verification is started here**: GitHub starts no ``pull_request`` run for a push or a pull
  request made with ``GITHUB_TOKEN``, so the job dispatches the verify workflow for the pull
  request (``actions: write``).
* **One pull request per seat and contest.** The branch ``loop-contract/<contract>/<seat>``
  is force-pushed each round; an open pull request of that branch gets the new body, else one
  is opened. A second round therefore updates the same pull request.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.contest.worktrees import branch_name
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.github.dispatch import DispatchError, round_marker
from pytest_loopcontract.github.dispatch_seat import BUNDLE, RECORD
from pytest_loopcontract.github.pulls import contest_base, is_commit_sha
from pytest_loopcontract.github.verify_dispatch import request_verification
from pytest_loopcontract.workspace import git

__all__ = ["MAX_BUNDLE_BYTES", "Proposal", "propose", "pull_body", "read_record"]

log = logging.getLogger("loopcontract.github")

MAX_BUNDLE_BYTES = 200 * 1024 * 1024
MAX_RECORD_BYTES = 64 * 1024
INCOMING = "refs/loop-contract/incoming"
# The GITHUB_TOKEN may not create or change workflow files; say so before the push does.
_WORKFLOWS = ".github/workflows/"


@dataclass(frozen=True)
class Proposal:
    """What the propose step did: ``opened``, ``updated`` or ``skipped`` (with why)."""

    action: str
    seat: str
    number: int | None = None
    head_sha: str | None = None
    why: str = ""
    verification_requested: bool = False


def read_record(folder: Path, seat: str) -> dict[str, Any]:
    """The seat job's ``seat.json``, checked for shape and seat."""
    path = folder / RECORD
    if not path.is_file() or path.stat().st_size > MAX_RECORD_BYTES:
        raise DispatchError(f"{path}: missing or larger than {MAX_RECORD_BYTES} bytes")
    try:
        record = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise DispatchError(f"{path} is not JSON: {exc}") from None
    if not isinstance(record, dict) or record.get("seat") != seat:
        raise DispatchError(f"{path} is not the record of seat {seat!r}")
    return record


def pull_body(record: Mapping[str, Any], contract_id: str, run_url: str, run_attempt: str) -> str:
    """The pull request's body: which seat, round and run produced the candidate."""
    seat, round_no = str(record["seat"]), int(record.get("round") or 1)
    run = str(record.get("run") or "")
    spent = []
    if isinstance(record.get("tokens"), int):
        spent.append(f"{record['tokens']} tokens")
    if isinstance(record.get("cost_usd"), (int, float)):
        spent.append(f"${record['cost_usd']:.4f}")
    changed = [str(p) for p in record.get("changed") or []]
    lines = [
        round_marker(seat, round_no, run),
        f"Candidate of seat `{seat}` for contest `{contract_id}`, round {round_no}.",
        "",
        f"Produced by dispatch run [{run}]({run_url}) (attempt {run_attempt}); the seat ran "
        f"{float(record.get('seconds') or 0):.1f}s" + (f", {', '.join(spent)}" if spent else "")
        + ".",
        f"Changed: {', '.join(f'`{p}`' for p in changed[:20]) or 'nothing'}"
        + (f" and {len(changed) - 20} more" if len(changed) > 20 else "") + ".",
        "",
        "The loop-contract verify and publish workflows check it; a person with write access "
        "approves the proposed winner.",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _incoming(root: Path, folder: Path, base_sha: str) -> tuple[str, list[str]]:
    """Fetch the bundle's one commit; its SHA and changed paths. DispatchError otherwise."""
    bundle = folder / BUNDLE
    if bundle.stat().st_size > MAX_BUNDLE_BYTES:
        raise DispatchError(f"the candidate bundle is larger than {MAX_BUNDLE_BYTES} bytes")
    checks = ("-c", "fetch.fsckObjects=true", "-c", "core.hooksPath=/dev/null")
    heads = git(root, "bundle", "list-heads", str(bundle)).decode("utf-8", "replace").split()
    if len(heads) != 2 or not heads[1].startswith("refs/heads/"):
        raise DispatchError("the candidate bundle must hold exactly one branch")
    git(root, *checks, "fetch", "-q", "--no-tags", str(bundle), f"+{heads[1]}:{INCOMING}")
    sha = git(root, "rev-parse", f"{INCOMING}^{{commit}}").decode().strip()
    parents = git(root, "rev-list", "--parents", "-n", "1", sha).decode().split()[1:]
    if parents != [base_sha]:
        raise DispatchError(f"the candidate {sha[:12]} is not one commit on the base commit")
    names = git(root, "diff", "--name-only", "-z", base_sha, sha).decode("utf-8", "replace")
    return sha, [n for n in names.split("\0") if n]


def _push(root: Path, sha: str, branch: str, token: str, server_url: str) -> None:
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    env = {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": f"http.{server_url.rstrip('/')}/.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
        "GIT_CONFIG_KEY_1": "core.hooksPath",
        "GIT_CONFIG_VALUE_1": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
    }
    git(root, "push", "-q", "--force", "origin", f"{sha}:refs/heads/{branch}", env=env)


def propose(
    repo: Repository,
    root: Path,
    *,
    contract: Contract,
    seat: str,
    folder: Path,
    base_sha: str,
    token: str,
    server_url: str,
    round_no: int,
    run_id: str,
    run_attempt: str = "1",
) -> Proposal:
    """Push the seat's candidate from ``folder`` (the downloaded artifact), open or update
    its pull request against the contest's base (:func:`.pulls.contest_base`), and start its
    verification (:mod:`.verify_dispatch`: no ``pull_request`` run follows what this token
    did). The round and the run come from the plan job and this run, never from the seat's
    record."""
    contract_id = contract.id
    if not is_commit_sha(base_sha):
        raise DispatchError(f"base commit {base_sha!r} is not a commit id")
    record = read_record(folder, seat)
    if record.get("status") != "ok" or not (folder / BUNDLE).is_file():
        why = f"seat {seat}: {record.get('status')} {record.get('reason') or ''}".strip()
        return Proposal("skipped", seat, why=why)
    sha, changed = _incoming(root, folder, base_sha)
    if any(path.startswith(_WORKFLOWS) for path in changed):
        return Proposal("skipped", seat, why=f"seat {seat} changed a workflow file: not pushed")
    branch = branch_name(contract_id, seat)
    _push(root, sha, branch, token, server_url)
    run_url = f"{server_url.rstrip('/')}/{repo.full_name}/actions/runs/{run_id}"
    facts = {**record, "changed": changed, "round": round_no, "run": run_id}
    body = pull_body(facts, contract_id, run_url, run_attempt)
    title = f"loop-contract: {contract_id} candidate of seat {seat}"
    owner = repo.full_name.split("/")[0]
    action = "updated"
    pull = next(iter(repo.get_pulls(state="open", head=f"{owner}:{branch}")), None)
    if pull is not None:
        pull.edit(title=title, body=body)
    else:
        action = "opened"
        base = contest_base(contract) or repo.default_branch
        pull = repo.create_pull(base=base, head=branch, title=title, body=body)
    log.info("seat %s: %s pull request #%d at %s", seat, action, pull.number, sha[:12])
    started = request_verification(repo, contract, pull.number)
    return Proposal(action, seat, pull.number, sha, verification_requested=started)
