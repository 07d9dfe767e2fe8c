"""``loop-contract github plan``: the contest's candidate pull requests, as a job matrix.

Runs in the unprivileged verify workflow (``pull_request``, or ``workflow_dispatch`` with the
pull request's number). The output is what the verify job fans out
over, one job per candidate. Only values that are safe to interpolate into a workflow go in it:
the pull-request number (an int), the head SHA (40 hex digits, checked) and the seat (the
contract id pattern, checked by the branch parser). Branch names and titles, which a fork
author chooses freely, never leave this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from github.Repository import Repository

from pytest_loopcontract.github.pulls import CandidatePR, list_candidates

__all__ = ["matrix_of", "plan"]

_SHA = re.compile(r"[0-9a-f]{40}")


def matrix_of(candidates: Sequence[CandidatePR]) -> list[dict[str, Any]]:
    """The ``strategy.matrix`` entries: ``{"pr", "head_sha", "base_sha", "seat"}``, sorted by
    number. The base is the API's, so a run that no pull request event started (a dispatched
    one) takes its baseline where a ``pull_request`` run would."""
    rows = []
    for cand in sorted(candidates, key=lambda c: c.number):
        if not (_SHA.fullmatch(cand.head_sha) and _SHA.fullmatch(cand.base_sha)):
            continue
        row = {"pr": int(cand.number), "head_sha": cand.head_sha, "base_sha": cand.base_sha}
        rows.append({**row, "seat": cand.seat})
    return rows


def plan(
    repo: Repository, contract_id: str, *, only_pr: int | None = None, base: str | None = None
) -> list[dict[str, Any]]:
    """The candidates of ``contract_id`` among the repository's open pull requests against
    ``base`` (the contract's ``github.base``, :func:`.pulls.contest_base`; None: the default
    branch).

    ``only_pr``: the pull request whose event started the run. A run is controlled by that
    pull request (GitHub takes the workflow from it), and publish takes from a run only the
    artifact of its own pull request, so a ``pull_request`` run verifies just that one, against
    its own base; the others are verified by their own runs.
    """
    candidates = list_candidates(repo, contract_id, base=base)
    if only_pr is not None:
        candidates = [c for c in candidates if c.number == only_pr]
    return matrix_of(candidates)
