"""Reruns for flaky pass-to-pass tests (``pytest: {reruns: N}``, off by default).

A timing-sensitive test that passed at baseline can fail once under load; with reruns on, each
pass-to-pass failure is run again (in the same sandbox, with only the failing ids selected) up
to N times, and a pass on a rerun counts for the no-regressions gate. Every rerun and its
outcome is recorded in the verdict. Acceptance tests are never rerun: a test that must go green
does so on the first run, or the candidate has not met the contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_loopcontract.verifier.results import RunResults

__all__ = ["flaky_failures", "rerun_pass_to_pass"]

FAILING = ("failed", "error")


def flaky_failures(
    results: RunResults, pass_to_pass: Iterable[str], acceptance: Iterable[str]
) -> list[str]:
    """Pass-to-pass tests that failed in this run (acceptance tests excluded)."""
    expected = set(pass_to_pass) - set(acceptance)
    return [t.nodeid for t in results.tests if t.outcome in FAILING and t.nodeid in expected]


def rerun_pass_to_pass(
    results: RunResults,
    failing: Sequence[str],
    rounds: int,
    run: Callable[[Sequence[str]], Mapping[str, str] | None],
) -> tuple[RunResults, list[dict[str, Any]]]:
    """Run ``failing`` again up to ``rounds`` times; ``run(ids)`` returns their outcomes (None
    when the rerun itself broke). Returns the results with rerun passes folded in, and the
    record of every rerun."""
    history: dict[str, list[str]] = {nodeid: [] for nodeid in failing}
    pending = list(failing)
    for _ in range(rounds):
        if not pending:
            break
        outcomes = run(pending) or {}
        for nodeid in pending:
            history[nodeid].append(outcomes.get(nodeid, "missing"))
        pending = [n for n in pending if history[n][-1] != "passed"]
    recovered = {n for n, seen in history.items() if seen and seen[-1] == "passed"}
    tests = [
        t._replace(outcome="passed", message="") if t.nodeid in recovered else t
        for t in results.tests
    ]
    record = [
        {"nodeid": n, "outcomes": seen, "final": "passed" if n in recovered else "failed"}
        for n, seen in history.items()
    ]
    return replace(results, tests=tests), record
