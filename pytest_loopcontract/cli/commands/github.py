"""``loop-contract github plan|verify|publish|gate``: the modes the GitHub Action calls.

Configuration comes from the Actions environment (``GITHUB_*`` and the action's inputs); the
verify mode needs none of it, so a pull request's untrusted run is given no token at all.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.cli.repo import contract_in_repo, repo_root
from pytest_loopcontract.contract.model import Contract, load_contract
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.fsio import dumps_json
from pytest_loopcontract.github.actions_env import ActionsEnv
from pytest_loopcontract.github.artifact_fetch import fetch_run_artifacts
from pytest_loopcontract.github.client import make_github
from pytest_loopcontract.github.contest_state import DATA_BRANCH
from pytest_loopcontract.github.decide import gate
from pytest_loopcontract.github.participants import contract_logins
from pytest_loopcontract.github.plan import plan
from pytest_loopcontract.github.publish import publish
from pytest_loopcontract.github.pulls import contest_base
from pytest_loopcontract.github.records import setup_warnings
from pytest_loopcontract.github.trust import VerifyRun
from pytest_loopcontract.github.verify_dispatch import PR_INPUT
from pytest_loopcontract.github.verify_pr import verify_pull_request
from pytest_loopcontract.verifier.reports.output import write_report
from pytest_loopcontract.verifier.reports.sarif import sarif_log
from pytest_loopcontract.workspace import scratch_folder

__all__ = ["github"]


def github(
    mode: str,
    *,
    contract: str,
    pr: int | None = None,
    base_sha: str | None = None,
    head_sha: str | None = None,
    out: str = "loop-contract-artifact",
    artifacts: str = "artifacts",
    sarif: str | None = None,
) -> int:
    """Run one mode of the action; the others read the repository through the API."""
    logging.basicConfig(level=logging.INFO, format="loop-contract: %(message)s", stream=sys.stderr)
    if mode == "verify":
        return _verify(contract, pr, base_sha, head_sha, out)
    env = ActionsEnv.from_environ()
    loaded = load_contract(contract)
    repo = make_github(env.token, base_url=env.api_url, lazy=True).get_repo(env.repository)
    if mode == "plan":
        return _plan(env, repo, loaded)
    if mode == "publish":
        return _publish(env, repo, loaded, Path(artifacts), sarif)
    return _gate(env, repo, loaded, pr)


def _verify(
    contract: str, pr: int | None, base_sha: str | None, head_sha: str | None, out: str
) -> int:
    """Baseline at the base commit, verify the head, write the artifact; exit 0 either way
    (the verdict travels in the artifact, and publish reads it)."""
    root = repo_root()
    folder = Path(out).resolve()
    if pr is None or base_sha is None or head_sha is None:
        raise CommandError("github verify needs --pr, --base-sha and --head-sha")
    verdict = verify_pull_request(
        root,
        contract_path=contract_in_repo(contract)[1],
        pr=pr,
        base_sha=base_sha,
        head_sha=head_sha,
        out=folder,
        scratch=folder.parent,
    )
    print(f"verdict for #{pr}: {verdict['verdict']} (exit {verdict['exit_code']})")
    return 0


def _plan(env: ActionsEnv, repo: Repository, contract: Contract) -> int:
    only = _event_pr(env)
    rows = plan(repo, contract.id, only_pr=only, base=contest_base(contract))
    env.set_output("candidates", json.dumps(rows))
    env.set_output("count", str(len(rows)))
    print(json.dumps(rows))
    return 0


def _event_pr(env: ActionsEnv) -> int | None:
    """The pull request the run is for: the ``pull_request`` event's, or the number a
    ``workflow_dispatch`` was given (:mod:`.verify_dispatch`); None for any other event."""
    event = env.event()
    if env.event_name == "workflow_dispatch":
        text = str((event.get("inputs") or {}).get(PR_INPUT) or "")
        if not (text.isascii() and text.isdigit() and 0 < int(text) < 10**9):
            raise CommandError(f"the workflow_dispatch input {PR_INPUT!r} must be a number")
        return int(text)
    number = (event.get("pull_request") or {}).get("number")
    return number if isinstance(number, int) else None


def _publish(
    env: ActionsEnv, repo: Repository, contract: Contract, artifacts: Path, sarif: str | None
) -> int:
    run = VerifyRun.from_event(env.event())
    if run is None:
        # Without the workflow_run event there is no run to check, and artifacts must
        # never be taken on trust: refuse instead of publishing them.
        raise CommandError("github publish needs the workflow_run event of a verify run")
    if not run.id.isdigit():
        raise CommandError("the workflow_run event names no run id: no artifacts to read")
    fetched = fetch_run_artifacts(repo, int(run.id), artifacts, token=env.token)
    print(f"artifacts of run {run.id}: took {sorted(fetched.taken)}; refused {fetched.refused}")
    with scratch_folder("loopcontract-publish-") as work:
        outcome = publish(
            repo,
            contract=contract,
            artifacts=artifacts,
            workdir=work,
            bot_login=env.bot_login,
            run_id=env.run_id,
            run=run,
        )
    _warn(env, [*outcome.warnings, *setup_warnings(repo, data_branch=DATA_BRANCH)])
    env.add_summary(outcome.summary)
    env.set_output("winner", str(outcome.result.get("winner") or ""))
    env.set_output("status", str(outcome.result["status"]))
    if sarif:
        _write_sarif(env, outcome.verdicts, run.head_sha, Path(sarif))
    for number, action in sorted(outcome.comments.items()):
        print(f"#{number}: comment {action}")
    for line in outcome.statuses:
        print(line)
    print(f"status: {outcome.result['status']}; winner: {outcome.result.get('winner')}")
    return 0


def _warn(env: ActionsEnv, lines: list[str]) -> None:
    """Each line as an annotation on the run and a warning at the top of the job summary."""
    for line in lines:
        print(f"::warning::loop-contract: {line}")
    if lines:
        env.add_summary("".join(f"> [!WARNING]\n> {line}\n\n" for line in lines))


def _write_sarif(
    env: ActionsEnv,
    verdicts: Mapping[int, tuple[str, Mapping[str, Any]]],
    head_sha: str,
    path: Path,
) -> None:
    """The SARIF of the candidate this run verified (its head is the run's), for the upload
    step: outputs ``sarif`` (the file, empty when no accepted verdict is this run's),
    ``sarif-ref`` and ``sarif-sha`` (where code scanning files the results)."""
    mine = [(n, v) for n, (head, v) in sorted(verdicts.items()) if head == head_sha]
    if len(mine) != 1:
        env.set_output("sarif", "")
        return
    number, verdict = mine[0]
    write_report(path, (dumps_json(sarif_log(verdict), indent=2) + "\n").encode("utf-8"))
    env.set_output("sarif", str(path))
    env.set_output("sarif-ref", f"refs/pull/{number}/head")
    env.set_output("sarif-sha", head_sha)
    print(f"#{number}: SARIF written to {path}")


def _gate(env: ActionsEnv, repo: Repository, contract: Contract, pr: int | None) -> int:
    number = (env.event().get("pull_request") or {}).get("number") if pr is None else pr
    result = gate(
        repo,
        contract_id=contract.id,
        bot_login=env.bot_login,
        seat_logins=contract_logins(contract),
        pr_number=int(number) if isinstance(number, int) else None,
    )
    _warn(env, setup_warnings(repo, data_branch=DATA_BRANCH))
    env.set_output("decision", result.decision)
    print(f"gate: {result.decision} ({result.reason})" + (f" by {result.by}" if result.by else ""))
    return 0
