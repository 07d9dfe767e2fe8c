"""The vacuous-pass check: passed acceptance tests run again against mutated expectations.

Each acceptance test that passed runs once more in a fresh scratch tree with its file's
expectations mutated (:mod:`mutation`); one that still passes, and fails when its mutated
assertions are replaced by ``raise AssertionError`` (so they were reached), is a
``vacuous_pass`` finding naming the test and the line.

The first mutation run does not depend on the main run's outcome except for *which* tests it
must cover, and the acceptance tests are known before the main run starts (the baseline's
FAIL_TO_PASS, the collected ids a DoD selector names, the hidden files). So where the machine
has a second core, :func:`start_early` runs it beside the main run and
:func:`vacuous_pass_check` takes its outcomes when they cover every test that passed; when they
do not (a ``dod`` marker chose a test, the early run failed), it runs the missing ones after
the main run exactly as before. The confirming second run, needed only for a survivor, always
follows. Speculation changes the wall time, never the evidence.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier import gates
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.runner import PytestRun
from pytest_loopcontract.verifier.tamper.checks import RewardChecks, check_record
from pytest_loopcontract.verifier.tamper.mutation import (
    MutatedSource,
    function_of,
    mutate_expectations,
)
from pytest_loopcontract.verifier.workspace import (
    WorkspaceError,
    make_scratch,
    remove_tree_later,
)

__all__ = ["EarlyMutants", "VacuousRunner", "start_early", "vacuous_pass_check"]

MUTANT_PREFIX = "loopcontract-mutant-"
_Outcomes = dict[str, str] | str  # outcomes by node id, or a "status: reason" text


@dataclass(frozen=True)
class VacuousRunner:
    """How the launcher builds a fresh scratch tree and runs node ids in it."""

    prepare: Callable[[Path], None]
    run: Callable[[Path, Sequence[str], float], PytestRun]
    pinned_source: Callable[[str], bytes | None]
    tree_bytes: int | None = None  # lets the scratch tree go to a memory-backed tmpfs


class EarlyMutants:
    """The first mutation run, started before the main run's outcome is known."""

    def __init__(self, pool: ThreadPoolExecutor, run: Future[_Outcomes], deadline: float):
        self._pool, self._run, self.deadline = pool, run, deadline

    def covering(self, targets: Sequence[str]) -> _Outcomes | None:
        """The early outcomes when they answer for every target, else None (run them after)."""
        try:
            outcomes = self._run.result()
        except Exception:  # the early run broke: the check runs the ordinary way
            return None
        if isinstance(outcomes, str):
            return outcomes if outcomes.startswith("timed_out") else None
        return outcomes if all(n in outcomes for n in targets) else None

    def close(self) -> None:
        """Wait for the early run: nothing it started outlives verify."""
        self._pool.shutdown(wait=True)


def spare_core() -> bool:
    """Whether a second CPU is ours: on one core the early run would only slow the main one."""
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) >= 2


def start_early(
    contract: Contract, runner: VacuousRunner, candidates: Sequence[str]
) -> EarlyMutants | None:
    """Start the first mutation run for every acceptance test that may pass (``candidates``:
    node ids, or hidden files' paths), or None when there is nothing to gain."""
    if not contract.tamper.vacuous_enabled or not spare_core():
        return None
    mutated, targets, _ = _mutants(candidates, runner.pinned_source)
    targets += [c for c in candidates if "::" not in c and c in mutated]  # whole hidden files
    if not targets:
        return None
    deadline = time.monotonic() + contract.tamper.vacuous_timeout
    files = {p: m.source for p, m in mutated.items()}
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopcontract-mutants")
    future = pool.submit(_yielding, _run_mutants, runner, files, targets, deadline)
    return EarlyMutants(pool, future, deadline)


BACKGROUND_NICENESS = 10
_T = TypeVar("_T")


def _yielding(run: Callable[..., _T], *args: Any) -> _T:
    """Run on this thread at a lower priority, with every process it starts (git's export,
    the sandboxed pytest): on a machine with two cores the mutation run then takes what the
    main run leaves idle instead of slowing it. Linux keeps the nice value per thread, so the
    launcher's other threads keep theirs."""
    with contextlib.suppress(OSError):
        os.nice(BACKGROUND_NICENESS)
    return run(*args)


def vacuous_pass_check(
    contract: Contract,
    results: RunResults,
    runner: VacuousRunner,
    *,
    skip_reason: str = "",
    early: EarlyMutants | None = None,
) -> RewardChecks:
    """Re-run the passed acceptance tests with mutated expectations (see the module notes)."""
    out = RewardChecks()
    skipped = skip_reason or _skip_reason(contract, results)
    if skipped:
        out.checks.append(check_record("vacuous_pass", "skipped", skipped))
        return out
    mutated, targets, notes = _mutants(_passed_acceptance(contract, results), runner.pinned_source)
    if not targets:
        message = "; ".join(notes) or "nothing to mutate"
        status = "not_run" if any("cannot" in n for n in notes) else "skipped"
        out.checks.append(check_record("vacuous_pass", status, message))
        return out
    first = early.covering(targets) if early is not None else None
    deadline = early.deadline if early is not None else None
    if first is not None:
        notes.append("first run beside the main run")
    else:
        deadline = time.monotonic() + contract.tamper.vacuous_timeout
        first = _run_mutants(runner, {p: m.source for p, m in mutated.items()}, targets, deadline)
    assert deadline is not None  # set with ``first``
    if isinstance(first, str):
        out.checks.append(check_record("vacuous_pass", first.split(":")[0], first, tests=targets))
        return out
    survivors = [n for n in targets if first.get(n) == "passed"]
    second = _confirm(runner, survivors, deadline) if survivors else {}
    if isinstance(second, str):
        out.checks.append(check_record("vacuous_pass", second.split(":")[0], second, tests=targets))
        return out
    confirmed = [n for n in survivors if second.get(n) in ("failed", "error")]
    inconclusive = [n for n in survivors if n not in confirmed]
    out.findings += _findings(contract, mutated, confirmed)
    message = f"{len(targets)} acceptance test(s) re-run with mutated expectations"
    message += f", {len(confirmed)} still passed"
    if inconclusive:
        message += f"; inconclusive (mutated assertion not reached): {', '.join(inconclusive)}"
    out.checks.append(
        check_record("vacuous_pass", "ran", "; ".join([message, *notes]), tests=targets)
    )
    return out


def _skip_reason(contract: Contract, results: RunResults) -> str:
    if not contract.tamper.vacuous_enabled:
        return "disabled by the contract"
    if not _passed_acceptance(contract, results):
        return "no acceptance test passed"
    return ""


def _passed_acceptance(contract: Contract, results: RunResults) -> list[str]:
    dod = gates.evaluate_dod(contract.scored_dod(), results.outcomes(), results.dod_marks)
    return list(dict.fromkeys(n for item in dod for n, o in item.tests if o == "passed"))


def _confirm(runner: VacuousRunner, survivors: Sequence[str], deadline: float) -> _Outcomes:
    """The survivors again, their mutated assertions replaced by ``raise AssertionError``: a
    survivor that now fails reached them (a vacuous pass); one that still passes did not."""
    reach = {
        p: mutate_expectations(
            _text(runner.pinned_source(p)),
            reach=True,
            only=[function_of(n) for n in survivors if n.split("::", 1)[0] == p],
        ).source
        for p in {n.split("::", 1)[0] for n in survivors}
    }
    return _run_mutants(runner, reach, survivors, deadline)


def _findings(
    contract: Contract, mutated: Mapping[str, MutatedSource], confirmed: Sequence[str]
) -> list[Finding]:
    findings = []
    for nodeid in confirmed:
        path = nodeid.split("::", 1)[0]
        if contract.tamper.allows("vacuous_pass", path):
            continue
        lines = [m.line for m in mutated[path].mutations if m.function == function_of(nodeid)]
        findings.append(
            Finding(
                "vacuous_pass",
                f"{nodeid} still passes with the expected side of its assertion(s) at line(s) "
                f"{', '.join(map(str, lines))} made wrong: the result it checks equals anything",
                path,
                lines[0],
            )
        )
    return findings


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8")


def _mutants(
    passed: Sequence[str], source_of: Callable[[str], bytes | None]
) -> tuple[dict[str, MutatedSource], list[str], list[str]]:
    mutated: dict[str, MutatedSource] = {}
    targets: list[str] = []
    notes: list[str] = []
    for path in dict.fromkeys(n.split("::", 1)[0] for n in passed):
        data = source_of(path)
        if data is None:
            notes.append(f"{path} is not pinned, so its tests were not mutated")
            continue
        try:
            mutated[path] = mutate_expectations(data.decode("utf-8"))
        except Exception as exc:  # the rewrite cannot handle it: named, never a crash
            notes.append(f"the rewrite cannot handle {path} ({type(exc).__name__}: {exc})")
            continue
        functions = mutated[path].functions()
        for nodeid in (n for n in passed if n.split("::", 1)[0] == path and "::" in n):
            if function_of(nodeid) in functions:
                targets.append(nodeid)
            else:
                notes.append(f"{nodeid}: no assertion the rewrite can mutate")
    return mutated, targets, notes


def _run_mutants(
    runner: VacuousRunner, files: Mapping[str, str], nodeids: Sequence[str], deadline: float
) -> _Outcomes:
    """Outcomes by node id, or a ``status: reason`` text when the run gave none."""
    left = deadline - time.monotonic()
    if left <= 0:
        return "timed_out: no time left for the mutation run"
    scratch = make_scratch(prefix=MUTANT_PREFIX, tree_bytes=runner.tree_bytes)
    try:
        runner.prepare(scratch)
        for path, text in files.items():
            target = scratch / path
            if target.is_symlink():
                target.unlink()
            target.write_text(text, "utf-8")
        run = runner.run(scratch, list(nodeids), left)
    except (OSError, WorkspaceError) as exc:
        return f"not_run: the mutation run could not start ({exc})"
    finally:
        remove_tree_later(scratch)
    if run.timed_out:
        return f"timed_out: the mutation run exceeded {left:.0f}s (tamper.vacuous_pass.timeout)"
    if run.results is None:
        return f"not_run: the mutation run gave no results ({run.results_error})"
    return run.results.outcomes()
