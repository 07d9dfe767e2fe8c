"""The human gate: a named person approves, rejects or waives a contest's outcome, once.

Why a person and why once: the gates and the matrix only *propose*; merging code into the base
branch is the person's act, and it must be attributable (``--by NAME`` goes into the ledger)
and final (a second decision on the same run is refused, so nobody can quietly flip it).

* **approve** merges the proposed winner's branch into the base branch the run started from
  (a ``--no-ff`` merge, so the history shows the contest) and keeps the losers' branches for
  the record. The winner's branch must still point at the commit the verifier passed.
* **reject** records the reason; the next ``contest run`` of the contract carries it in every
  seat's prompt (a new attempt).
* **waive** is allowed only for a candidate whose *only* failure was a measured gate (never
  tampering, never a hard gate): the person takes the measured shortfall on their own name, and
  the candidate is merged as with approve.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.ledger.rows import Entry
from pytest_loopcontract.contest.result_file import load_result, save_result
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import utc_now, write_text_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.workspace import WorkspaceError, git, is_dirty

__all__ = ["DECISIONS", "GateError", "decide", "find_run"]

DECISIONS = ("approve", "reject", "waive")


class GateError(LoopContractError):
    """The decision cannot be taken; the message says why (nothing was changed)."""


def find_run(root: Path, contract: str, run_id: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The newest finished run of ``contract`` (an id, or the contract file's path)."""
    runs = StateDir.of(root).runs
    if run_id:
        run_dir = runs / run_id
        result = load_result(run_dir)
        if not _is_contract(result, contract):
            raise GateError(f"run {run_id} belongs to contract {result['contract']['id']!r}")
        return run_dir, result
    found = []
    for path in sorted(runs.glob("*/result.json")) if runs.exists() else []:
        result = load_result(path.parent)
        if _is_contract(result, contract):
            found.append((path.parent, result))
    if not found:
        raise GateError(f"no finished contest run of contract {contract!r}")
    return found[-1]


def _is_contract(result: Mapping[str, Any], contract: str) -> bool:
    info = result.get("contract") or {}
    return contract == info.get("id") or Path(contract) == Path(str(info.get("path", "")))


def decide(
    root: Path,
    contract: str,
    decision: str,
    *,
    by: str,
    reason: str | None = None,
    seat: str | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Take the decision, record it in the ledger, merge where it says so; returns the result."""
    if decision not in DECISIONS:
        raise GateError(f"decision must be one of {', '.join(DECISIONS)}")
    by = by.strip()
    if not by:
        raise GateError("--by NAME is required: a decision belongs to a person")
    if decision == "reject" and not (reason or "").strip():
        raise GateError("reject needs --reason: the next attempt's prompt carries it")
    run_dir, result = find_run(root, contract, run_id)
    paths = StateDir.of(root)
    contract_id = str(result["contract"]["id"])
    with Ledger(paths.ledger) as ledger, ledger.acquire_run(contract_id, result["run_id"]):
        earlier = _earlier_decision(ledger, result["run_id"])
        if result.get("decision") or earlier:
            who = (result.get("decision") or earlier or {}).get("by", "someone")
            raise GateError(
                f"run {result['run_id']} was already decided by {who}; a decision is made once"
            )
        chosen = _chosen(result, decision, seat)
        sha = None
        if chosen is not None:
            sha = _merge(root, result, chosen, by)
        _record(ledger, result, decision, chosen, by, reason, sha)
        # A certificate says the verifier passed the winner; a waived one did not, so the
        # ledger's human_gate row (with the waived gates) is its only record.
        token = (
            _certify(ledger, paths, result, run_dir, chosen)
            if chosen and decision == "approve"
            else None
        )
        seq, head = ledger.head()
    result["decision"] = {
        "decision": decision,
        "by": by,
        "reason": reason or "",
        "at": utc_now(),
        "seat": chosen["seat"] if chosen else None,
    }
    result["status"] = "decided" if chosen else "rejected"
    result["certificate"] = token
    result["ledger"] = {**result.get("ledger", {}), "head_seq": seq, "head": head}
    save_result(run_dir, result)
    return result


def _earlier_decision(ledger: Ledger, run_id: str) -> dict[str, Any] | None:
    for row in ledger.rows(run_id=run_id, kind="event"):
        data = row.data
        if data.get("event") == "human_gate":
            return data
    return None


def _chosen(result: Mapping[str, Any], decision: str, seat: str | None) -> dict[str, Any] | None:
    candidates = {c["seat"]: c for c in result.get("candidates") or []}
    if decision == "reject":
        return None
    if decision == "approve":
        winner = result.get("winner")
        if not winner:
            raise GateError(
                "nothing to approve: the run has no proposed winner "
                "(waive a measured failure, or reject with a reason)"
            )
        if seat and seat != winner:
            raise GateError(f"the proposed winner is {winner!r}, not {seat!r}")
        return dict(candidates[winner])
    # waive: only a candidate stopped by measured gates alone
    waivable = {name: c for name, c in candidates.items() if c.get("stage") == "measured"}
    if result.get("winner"):
        raise GateError(
            "the run has a proposed winner: approve or reject it; waive is for a measured failure"
        )
    if seat is None:
        if len(waivable) != 1:
            names = ", ".join(sorted(waivable)) or "none"
            raise GateError(
                f"waive needs --seat: candidates that failed only a measured gate: {names}"
            )
        seat = next(iter(waivable))
    if seat not in waivable:
        stage = candidates.get(seat, {}).get("stage", "not a candidate")
        raise GateError(
            f"{seat!r} cannot be waived: only a failure of measured gates alone can be "
            f"(its stage: {stage})"
        )
    return dict(waivable[seat])


def _merge(root: Path, result: Mapping[str, Any], chosen: Mapping[str, Any], by: str) -> str:
    base = (result.get("base") or {}).get("branch")
    branch, commit = chosen.get("branch"), chosen.get("commit")
    if not base:
        raise GateError("the run started on a detached HEAD: merge the winner's branch by hand")
    if not branch or not commit:
        raise GateError(f"{chosen['seat']!r} has no candidate commit to merge")
    try:
        current = git(root, "symbolic-ref", "--quiet", "--short", "HEAD").decode().strip()
    except WorkspaceError:
        current = ""
    if current != base:
        raise GateError(
            f"check out {base!r} first (the run's base branch; now on "
            f"{current or 'a detached HEAD'!r})"
        )
    if is_dirty(root):
        raise GateError("the working tree has uncommitted changes: commit or stash them first")
    head = git(root, "rev-parse", f"refs/heads/{branch}").decode().strip()
    if head != commit:
        raise GateError(
            f"branch {branch} moved since the run ({head[:12]} is not the verified "
            f"{commit[:12]}): refusing to merge unverified code"
        )
    message = (
        f"loop-contract: merge {chosen['seat']} ({result['contract']['id']}, run "
        f"{result['run_id']})\n\nDecided by {by} at the human gate."
    )
    try:
        git(root, "merge", "--no-ff", "--no-edit", "-m", message, commit)
    except WorkspaceError as exc:
        with contextlib.suppress(WorkspaceError):
            git(root, "merge", "--abort")
        raise GateError(f"merge failed, nothing merged: {exc}") from None
    return git(root, "rev-parse", "HEAD").decode().strip()


def _record(
    ledger: Ledger,
    result: Mapping[str, Any],
    decision: str,
    chosen: Mapping[str, Any] | None,
    by: str,
    reason: str | None,
    sha: str | None,
) -> None:
    """The human gate in the ledger: the event, the decision and, after a merge, the merge."""
    run_id, contract_id = result["run_id"], result["contract"]["id"]
    winner = chosen["seat"] if chosen else None
    waived = (
        [g["id"] for g in chosen["gates"]["measured"] if g.get("status") != "pass"]
        if chosen and decision == "waive"
        else []
    )

    def event(payload: dict[str, Any]) -> Entry:
        return Entry(kind="event", run_id=run_id, contract_id=contract_id, payload=payload)

    entries = [
        event(
            {
                "event": "human_gate",
                "by": by,
                "decision": decision,
                "sha": sha,
                "seat": winner,
                "reason": reason or "",
                "waived": waived,
            }
        ),
        _decision_entry(result, decision, chosen, by),
    ]
    if sha and chosen:
        entries.append(
            event(
                {
                    "event": "merge",
                    "seat": winner,
                    "branch": chosen["branch"],
                    "commit": chosen["commit"],
                    "into": sha,
                }
            )
        )
    ledger.append_many(entries)


def _decision_entry(
    result: Mapping[str, Any], decision: str, chosen: Mapping[str, Any] | None, by: str
) -> Entry:
    """Who won (none when rejected) and every candidate's outcome, by the person who decided."""
    winner = chosen["seat"] if chosen else None
    return Entry(
        kind="decision",
        run_id=result["run_id"],
        contract_id=result["contract"]["id"],
        payload={
            "winner": winner,
            "outcomes": {
                c["seat"]: ("pass" if c["seat"] == winner else "fail")
                for c in result.get("candidates") or []
            },
            "by": f"human:{by}",
            "decision": decision,
        },
        seat=winner,
        family=chosen["family"] if chosen else None,
    )


def _certify(
    ledger: Ledger,
    paths: StateDir,
    result: Mapping[str, Any],
    run_dir: Path,
    chosen: Mapping[str, Any],
) -> str:
    import json

    verdict: dict[str, Any] = {}
    verdict_path = chosen.get("verdict_path")
    if verdict_path:
        try:
            verdict = json.loads((paths.root / verdict_path).read_text("utf-8"))
        except (OSError, ValueError):
            verdict = {}
    payload = certificate.build_payload(
        ledger,
        run_id=result["run_id"],
        contract_id=result["contract"]["id"],
        contract_sha256=result["contract"]["sha256"],
        nonce=str(verdict.get("nonce") or "unknown"),
        verdict=str(verdict.get("verdict") or chosen.get("verdict") or "unknown"),
        exit_code=int(verdict.get("exit_code", chosen.get("exit_code") or 0)),
        winner=chosen["seat"],
    )
    token = certificate.issue(payload, certificate.load_or_create_key(paths.cert_key))
    write_text_atomic(run_dir / "certificate.txt", token + "\n")
    return token
