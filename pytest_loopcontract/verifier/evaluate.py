"""Turn one run's results into a verdict; shared by the in-process plugin and the launcher.

Both entry points must reach the same verdict from the same evidence, so the sequence (DoD,
hard gates, measured gates, decision) lives here once. Only the trust level and the evidence
gathered around the run (pins, diff, cross-checks) differ between them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_loopcontract
from pytest_loopcontract import hooks
from pytest_loopcontract.contract.model import Contract, HardGate
from pytest_loopcontract.idsets import pack_ids
from pytest_loopcontract.processes import kill_group, read_tail, spawn
from pytest_loopcontract.verdict import (
    DodResult,
    Finding,
    GateResult,
    Reason,
    build_verdict,
    environment_info,
)
from pytest_loopcontract.verifier import gates
from pytest_loopcontract.verifier.hidden import withhold_messages
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.verdict_frame import contract_summary, run_timing
from pytest_loopcontract.workspace import scratch_folder

__all__ = [
    "Evidence",
    "evaluate",
    "outcomes_with_collect_errors",
    "outside_import_errors",
    "run_command_gate",
]

OUTPUT_TAIL_BYTES = 4096


@dataclass
class Evidence:
    """Everything gathered around a run that the verdict needs besides the results."""

    trust: str
    nonce: str
    workdir: Path
    contract_relpath: str
    started: str
    started_monotonic: float
    fail_to_pass: Sequence[str] | None = None
    pass_to_pass: Sequence[str] | None = None
    base_commit: str | None = None
    findings: list[Finding] = field(default_factory=list)
    errors: list[Reason] = field(default_factory=list)
    coverage_data: Path | None = None
    changed_lines: Mapping[str, frozenset[int]] | None = None
    empty_diff: bool | None = None
    commit: str | None = None
    dirty: bool | None = None
    command_env: Mapping[str, str] | None = None
    checkpoints: list[Reason] = field(default_factory=list)
    # Isolated runs: commands of the contract run confined like the tests (argv -> argv).
    confine: Callable[[list[str]], list[str]] | None = None
    confinement: Mapping[str, Any] | None = None
    test_env: Mapping[str, Any] | None = None
    unstable: Sequence[Mapping[str, str]] = ()
    reruns: Sequence[Mapping[str, Any]] = ()
    # Whether each reward check ran: {id, status: ran | skipped | timed_out | not_run, message}
    checks: list[dict[str, Any]] = field(default_factory=list)


def run_command_gate(
    gate: HardGate,
    workdir: Path,
    env: Mapping[str, str] | None,
    confine: Callable[[list[str]], list[str]] | None = None,
) -> GateResult:
    """Run a ``command`` hard gate without a shell; output goes to a file, never a pipe.

    The command runs over the candidate's tree, so in an isolated run it is confined too."""
    argv = confine(list(gate.run)) if confine is not None else list(gate.run)
    with scratch_folder("loopcontract-cmd-") as tmp:
        out = tmp / "output"
        with out.open("wb") as fh:
            try:
                proc = spawn(argv, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT)
            except OSError as exc:
                return gates.evaluate_command(
                    gate.id,
                    gate.run,
                    gate.expect_exit,
                    None,
                    "",
                    f"cannot start {gate.run[0]!r}: {exc.strerror}",
                )
            try:
                code: int | None = proc.wait(timeout=gate.timeout)
                error = ""
            except subprocess.TimeoutExpired:
                kill_group(proc)
                code, error = None, f"timed out after {gate.timeout:g}s"
            except BaseException:  # stopped (Ctrl-C, SIGTERM): the command ends with the run
                kill_group(proc)
                raise
        return gates.evaluate_command(
            gate.id, gate.run, gate.expect_exit, code, read_tail(out, OUTPUT_TAIL_BYTES), error
        )


def outcomes_with_collect_errors(results: RunResults) -> dict[str, str]:
    """Every collected id's outcome, a file that failed to collect counted as an error."""
    outcomes = results.outcomes()
    for error in results.collect_errors:
        outcomes.setdefault(error.get("nodeid", ""), "error")
    return outcomes


def _blame_collection_errors(dod: list[DodResult], errored: Iterable[str]) -> list[DodResult]:
    """A selector that matched nothing because its file failed to import is an error, not
    a missing test: the agent broke the import, it did not hide the test."""
    prefixes = [e for e in errored if e]
    fixed = []
    for item in dod:
        tests = tuple(
            (
                n,
                "error"
                if o == "missing"
                and any(gates.selector_matches(p, n) or n.startswith(p) for p in prefixes)
                else o,
            )
            for n, o in item.tests
        )
        fixed.append(DodResult(item.id, item.text, item.status, tests))
    return fixed


def evaluate(contract: Contract, results: RunResults, evidence: Evidence) -> dict[str, Any]:
    """Compute the verdict document for one run."""
    outcomes = outcomes_with_collect_errors(results)
    dod = gates.evaluate_dod(contract.scored_dod(), outcomes, results.dod_marks)
    dod = _blame_collection_errors(dod, (e.get("nodeid", "") for e in results.collect_errors))

    hard = _hard_gates(contract, dod, outcomes, evidence)
    measured = _measure(contract, results, evidence) if contract.measured_gates else []

    tests = withhold_messages(_test_rows(results), (h.to for h in contract.hidden_tests()))
    timing = run_timing(evidence.started, evidence.started_monotonic)
    document = build_verdict(
        contract=contract_summary(contract, evidence.contract_relpath),
        trust=evidence.trust,
        nonce=evidence.nonce,
        dod=dod,
        hard=hard,
        measured=measured,
        findings=evidence.findings,
        errors=evidence.errors,
        checkpoints=evidence.checkpoints,
        checks=evidence.checks,
        tests=tests,
        baseline=_baseline_summary(evidence),
        environment=_environment(evidence),
        timing=timing,
        tool_version=pytest_loopcontract.__version__,
        egress=_egress_summary(contract, results),
        confinement=evidence.confinement,
        reruns=evidence.reruns,
        durations=any(g.metric.startswith("duration.") for g in contract.measured_gates),
    )
    hooks.plugin_manager().hook.loopcontract_verdict(verdict=document)
    return document


def _hard_gates(
    contract: Contract,
    dod: Sequence[DodResult],
    outcomes: Mapping[str, str],
    evidence: Evidence,
) -> list[GateResult]:
    """The contract's hard gates in their order; ``improve`` mode adds the empty-diff gate."""
    acceptance_ids = [n for item in dod for n, _ in item.tests]
    hard: list[GateResult] = []
    for gate in contract.hard_gates:
        if gate.kind == "acceptance":
            hard.append(gates.evaluate_acceptance(gate.id, dod))
        elif gate.kind == "pass_to_pass":
            hard.append(
                gates.evaluate_pass_to_pass(
                    gate.id, outcomes, evidence.pass_to_pass, acceptance_ids
                )
            )
        elif gate.kind == "tests":
            hard.append(gates.evaluate_selected(gate.id, gate.tests, outcomes))
        elif gate.kind == "command":
            hard.append(
                run_command_gate(gate, evidence.workdir, evidence.command_env, evidence.confine)
            )
    if contract.mode == "improve" and evidence.empty_diff:
        hard.append(
            GateResult(
                "empty-diff",
                "empty_diff",
                "fail",
                "improve mode: the candidate changed nothing against the baseline",
            )
        )

    return hard


def _test_rows(results: RunResults) -> Iterator[dict[str, Any]]:
    """The verdict's ``tests``: every test that ran, then collection errors, then deselected.

    Made one at a time for :func:`~.verdict.build_verdict`'s one pass, never all at once."""
    for t in results.tests:
        row = {
            "nodeid": t.nodeid,
            "outcome": t.outcome,
            "duration": round(max(t.duration, 0.0), 6),
            "when": t.when,
        }
        if t.message:
            row["message"] = t.message
        yield row
    for e in results.collect_errors:
        yield {
            "nodeid": e.get("nodeid", ""),
            "outcome": "error",
            "duration": 0.0,
            "when": "collect",
            "message": e.get("message", ""),
        }
    ran = {t.nodeid for t in results.tests}
    for n in dict.fromkeys(results.deselected):
        if n not in ran:
            yield {"nodeid": n, "outcome": "deselected", "duration": 0.0, "when": "collect"}


def _baseline_summary(evidence: Evidence) -> dict[str, Any]:
    """The verdict's ``baseline`` section: the sets this run was measured against."""
    return {
        "recorded": evidence.pass_to_pass is not None,
        "commit": evidence.base_commit,
        "fail_to_pass": list(evidence.fail_to_pass or ()),
        "pass_to_pass": pack_ids(evidence.pass_to_pass or ()),
        **({"unstable": list(evidence.unstable)} if evidence.unstable else {}),
    }


def _environment(evidence: Evidence) -> dict[str, Any]:
    """The launcher's facts, with the interpreter the tests really ran under when known."""
    info = environment_info(evidence.commit, evidence.dirty)
    if evidence.test_env:
        info["test_env"] = dict(evidence.test_env)
        info["python"] = str(evidence.test_env.get("version", info["python"]))
    return info


def outside_import_errors(results: RunResults) -> list[Reason]:
    """Tests that imported an installed copy measured the wrong code: the run proves nothing."""
    return [
        Reason(
            "code_outside_checkout",
            f"module {e['module']!r} was imported from {e['imported']}, not from the "
            f"checkout's {e['local']}; install it in editable mode from the checkout or set "
            "pythonpath in the test configuration",
        )
        for e in results.outside_imports
    ]


def _measure(contract: Contract, results: RunResults, evidence: Evidence) -> list[GateResult]:
    """Measured gates; the sensors (and coverage.py) load only when a contract has some."""
    from pytest_loopcontract.verifier.sensors.protocol import SensorContext
    from pytest_loopcontract.verifier.sensors.registry import metric_sources, observe

    context = SensorContext(
        workdir=evidence.workdir,
        tests=results.tests,
        recorded=results.metrics,
        coverage_data=evidence.coverage_data,
        changed_lines=evidence.changed_lines,
        env=evidence.command_env,
        confine=evidence.confine,
    )
    sources = metric_sources()
    return [
        gates.evaluate_measured(gate, observe(gate, context, sources))
        for gate in contract.measured_gates
    ]


def _egress_summary(contract: Contract, results: RunResults) -> dict[str, Any] | None:
    if contract.egress_allow is None and not results.egress:
        return None
    return {
        "allow": list(contract.egress_allow or ()),
        "attempts": results.egress,
        "blocked": sum(1 for a in results.egress if not a.get("allowed")),
    }
