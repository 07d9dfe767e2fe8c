"""``loop-contract contest run``: one task, every seat, the gates, the judges, the bracket.

The order is the trust model's: candidates are produced in their own git worktrees, then
verified by the isolated launcher (the same one ``loop-contract verify`` uses), then stopped at
the first gate rank they fail (hard, then measured); only the survivors go to the judges, who
see scrubbed diffs under shuffled labels and never their own family's work; the matrix and the
bracket are pure arithmetic; the proposed winner waits for a person. Every dispatch, outcome,
score and decision goes into the hash-chained ledger as it happens, so a crash leaves a record
of what was spent.

This module walks the phases in order; each phase is a module of its own over one shared
:class:`~.run_state.RunState`: :mod:`.generation` (seats write candidates), :mod:`.screening`
(the gates), :mod:`.adjudication` (judges, matrix, bracket), :mod:`.run_document` (the result).
The rules live in the pure modules (``standing``, ``scoring``, ``matrix``, ``bracket``,
``lessons``); rendering is elsewhere (``report``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_loopcontract import __version__
from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.adjudication import adjudicate
from pytest_loopcontract.contest.engine import Decision
from pytest_loopcontract.contest.errors import ContestError
from pytest_loopcontract.contest.generation import generate
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.lesson_store import LessonStore
from pytest_loopcontract.contest.lessons.learn import lesson_from_verdict
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.panel import PanelSettings, lesson_scope
from pytest_loopcontract.contest.probe import ProbeError, probe_seat
from pytest_loopcontract.contest.result_file import save_result
from pytest_loopcontract.contest.routes import RouteTable
from pytest_loopcontract.contest.run_document import result_document
from pytest_loopcontract.contest.run_state import Candidate, RunState, retry_log
from pytest_loopcontract.contest.run_status import RunProgress
from pytest_loopcontract.contest.scoring import run_status
from pytest_loopcontract.contest.screening import screen
from pytest_loopcontract.contest.seat_model import Seat, seats_from_contract
from pytest_loopcontract.contract.model import Contract, working_copy
from pytest_loopcontract.fsio import utc_now, write_text_atomic
from pytest_loopcontract.plural import plural
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier.baseline.record import BaselineRecord, load_baseline
from pytest_loopcontract.verifier.baseline.take import take_baseline
from pytest_loopcontract.verifier.verify import pinned_contract
from pytest_loopcontract.workspace import WorkspaceError, git

__all__ = ["run_contest"]

# Outcomes a retry with the verifier's log cannot change: the seat never worked on the task.
_NO_RETRY = frozenset({"unavailable", "refused", "flagged", "auth_failed", "rate_limited"})


def run_contest(
    root: Path,
    *,
    contract_path: str | None = None,
    emit: Callable[[str], None] | None = None,
    parallel: int | None = None,
) -> dict[str, Any]:
    """Run one contest on the repository at ``root`` and return its result document.

    ``contract_path`` (relative to ``root``) is needed only when no baseline exists yet: the
    contest then takes one at HEAD, as ``loop-contract baseline`` would.
    """
    paths = StateDir.of(root)
    baseline = _ensure_baseline(root, contract_path)
    contract = pinned_contract(root, baseline)
    seats = seats_from_contract(contract)
    if not seats:
        raise ContestError(_seatless(root, baseline, contract, "lists no seats (seats: [...])"))
    if not any(s.generate for s in seats):
        raise ContestError(
            _seatless(root, baseline, contract, "has no seat with a generate command")
        )

    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)
    run_dir = paths.run_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(paths.ledger)
    try:
        with ledger.acquire_run(contract.id, run_id) as lock:
            if lock.recovered is not None:
                ledger.record_event(
                    "run_lock_recovered",
                    run_id=run_id,
                    contract_id=contract.id,
                    details={"holder": lock.recovered.describe()},
                )
            state = _state(paths, baseline, contract, seats, run_id, ledger, emit, parallel)
            return _Run(state).execute()
    finally:
        ledger.close()


def _seatless(root: Path, baseline: BaselineRecord, contract: Contract, what: str) -> str:
    """Why the contest has no seat to run, naming the pinned contract the contest reads.

    A contest reads the contract pinned at baseline, not the file: seats added to the file
    after ``baseline`` are not there yet, and "the contract lists no seats" beside a file that
    lists them misleads."""
    path = baseline.contract_path
    pinned = f"{path}: the contract pinned at baseline (commit {baseline.commit[:12]}) {what}"
    current = working_copy(root, contract)
    usable = [s for s in seats_from_contract(current) if s.generate] if current else []
    if usable:
        return (
            f"{pinned}, while the file now lists {plural(len(usable), 'seat')} with a generate "
            "command: commit the contract and run 'loop-contract baseline' to adopt it"
        )
    return f"{pinned}: add seats to the contract, commit it and run 'loop-contract baseline'"


def _ensure_baseline(root: Path, contract_path: str | None) -> BaselineRecord:
    if StateDir.of(root).baseline.exists():
        return load_baseline(root)
    if contract_path is None:
        raise ContestError("no baseline yet: run `loop-contract baseline` first")
    return take_baseline(root, contract_path)


def _state(
    paths: StateDir,
    baseline: BaselineRecord,
    contract: Contract,
    seats: list[Seat],
    run_id: str,
    ledger: Ledger,
    emit: Callable[[str], None] | None,
    parallel: int | None,
) -> RunState:
    """The shared state of a new run: the contract's contest settings with their defaults."""
    run_dir = paths.run_dir(run_id)
    settings = contract.contest
    return RunState(
        root=paths.root,
        paths=paths,
        baseline=baseline,
        contract=contract,
        seats=seats,
        run_id=run_id,
        run_dir=run_dir,
        ledger=ledger,
        progress=RunProgress(
            run_dir / "run_status.json",
            run_id=run_id,
            contract_id=contract.id,
            seats=[s.name for s in seats],
            emit=emit,
        ),
        parallel=max(1, parallel or settings.parallel),
        settings=PanelSettings.of(contract),
        candidates={s.name: Candidate(s) for s in seats if s.generate},
    )


class _Run:
    """One contest run; ``execute`` walks the phases in order."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        contract = state.contract
        self.domain, self.tags = lesson_scope(contract)
        self.attempt_cap = contract.contest.attempts
        self.lesson_chars = contract.contest.lesson_chars
        self.started = utc_now()
        self.lessons: list[Lesson] = []
        self.base_branch = _current_branch(state.root)
        self.routes = RouteTable(state.paths.routes)

    def execute(self) -> dict[str, Any]:
        state = self.state
        state.append("run_started", self._start_payload())
        self._probe()
        order = self.routes.order(self.domain, list(state.candidates))
        stopped = self._attempts(order)
        attempts = max(c.attempt for c in state.candidates.values())
        first_failing = self._write_lessons()
        decision, status = self._decide(stopped)
        if first_failing:
            # The panel's verdict is what makes a demotion fair; a degraded panel only holds it.
            held = decision.degraded
            self.routes.demote(self.domain, first_failing, run_id=state.run_id, held=held)
            state.event("route_demoted", seat=first_failing, domain=self.domain, held=held)
        self._record_decision(decision.winner, status)
        # The certificate signs the ledger's head, so it comes after the decision's rows.
        token = self._certify(decision.winner) if decision.winner else None
        result = result_document(
            state,
            decision,
            started=self.started,
            attempts=attempts,
            lessons=self.lessons,
            base_branch=self.base_branch,
            stopped=status == "stopped",
            certificate=token,
        )
        save_result(state.run_dir, result)
        state.progress.finish(result["status"])
        return result

    def _probe(self) -> None:
        """``contest: {probe: N}``: a seat with fewer than N probes in the ledger runs on an
        impossible variant of this contract first (see :mod:`.probe`), one at a time."""
        state = self.state
        wanted = state.contract.contest.probe
        for seat in state.seats:
            missing = wanted - state.ledger.probe_record(seat=seat.name).probes
            if not seat.generate or missing <= 0:
                continue
            for _ in range(missing):
                state.progress.seat(seat.name, "probing", "an impossible variant of the task")
                try:
                    base = state.baseline.commit
                    found = probe_seat(
                        state.root, state.contract, seat, base_commit=base, ledger=state.ledger
                    )
                except ProbeError as exc:
                    state.event("probe_failed", seat=seat.name, error=str(exc))
                    state.progress.seat(seat.name, "probed", f"no probe: {exc}")
                    return  # the same contract cannot be probed for any seat
                state.progress.seat(seat.name, "probed", f"{found.result}: {found.why}")

    def _start_payload(self) -> dict[str, Any]:
        state = self.state
        return {
            "contract": {"id": state.contract.id, "sha256": state.contract.sha256},
            "seats": [{"seat": s.name, "family": s.family} for s in state.seats],
            "mode": state.contract.mode,
            "base_commit": state.baseline.commit,
            "base_branch": self.base_branch,
            "tool": {"name": "pytest-loopcontract", "version": __version__},
        }

    def _attempts(self, order: list[str]) -> str | None:
        """Generate and screen, retrying the seats that fell at the hard gate, until one gets
        past it or the attempts run out; returns a stop reason if the run must stop."""
        state = self.state
        lessons_text = self._lessons_block()
        rejection = self._last_rejection()
        retry: dict[str, list[str]] = {}
        to_run = list(order)
        for attempt in range(1, self.attempt_cap + 1):
            stopped = self._over_budget()
            if stopped:
                return stopped
            state.progress.phase("generating", attempt=attempt)
            stopped = generate(state, to_run, attempt, lessons_text, rejection, retry)
            if stopped:
                return stopped
            state.progress.phase("verifying", attempt=attempt)
            screen(state, [state.candidates[name] for name in to_run])
            if any(c.stage not in ("hard", "generation") for c in state.candidates.values()):
                return None
            to_run = [name for name in order if state.candidates[name].outcome not in _NO_RETRY]
            retry = {name: retry_log(state.candidates[name]) for name in to_run}
            if not to_run:
                return None
            if attempt == self.attempt_cap:
                state.event("retry_cap", attempts=attempt, cap=self.attempt_cap)
                state.escalate(
                    "retry_cap",
                    f"every candidate fell at the hard gate in {plural(attempt, 'attempt')}; "
                    "a person must look at the task or the contract",
                )
        return None

    def _decide(self, stopped: str | None) -> tuple[Decision, str]:
        """Who wins, if anyone (:func:`.adjudication.adjudicate`), and the run's status."""
        state = self.state
        survivors = [c for c in state.candidates.values() if c.stage == "passed"]
        if not stopped and len(survivors) > 1:
            stopped = self._over_budget()
        if stopped:
            state.escalations.append({"code": "stopped", "message": stopped})
            return Decision(None), "stopped"
        decision = adjudicate(state, survivors)
        return decision, run_status(decision.winner, state.escalations)

    def _record_decision(self, winner: str | None, status: str) -> None:
        """The decision and the end of the run, as ledger rows."""
        state = self.state
        outcomes = {
            name: ("pass" if c.stage in ("winner",) else "fail")
            for name, c in state.candidates.items()
        }
        state.append(
            "decision",
            {"winner": winner, "outcomes": outcomes, "by": "bracket", "status": status},
            seat=winner,
            family=state.candidates[winner].seat.family if winner else None,
        )
        finished = "winner" if winner else ("stopped" if status == "stopped" else "no_winner")
        state.append("run_finished", {"status": finished, "winner": winner})

    def _over_budget(self) -> str | None:
        """Stop before the next dispatch once the reported spend reaches the contract's budget.

        Only reported figures count (nothing is estimated), so a seat that never reports can
        not trip the budget; the ledger says which dispatches did not report.
        """
        budget = self.state.contract.budget
        tokens = cost = 0.0
        for row in self.state.ledger.rows(run_id=self.state.run_id, kind="dispatch"):
            tokens += row.tokens or 0
            cost += row.cost_usd or 0.0
        for name, limit, spent in (("tokens", budget.tokens, tokens), ("usd", budget.usd, cost)):
            if limit is not None and spent >= limit:
                self.state.event("budget_exhausted", budget=name, limit=limit, spent=spent)
                return f"budget exhausted: {spent:g} {name} reported against a cap of {limit:g}"
        return None

    def _lessons_block(self) -> str:
        if not self.state.paths.lessons.exists() or self.lesson_chars <= 0:
            return ""
        with LessonStore(self.state.paths.lessons) as store:
            return store.prompt(self.domain, self.tags, cap_chars=self.lesson_chars).text

    def _last_rejection(self) -> str | None:
        """The reason a person gave when rejecting this contract's last winner, if they did."""
        last: str | None = None
        for row in self.state.ledger.rows(kind="event"):
            data = row.data
            if (
                row.contract_id == self.state.contract.id
                and data.get("event") == "human_gate"
                and data.get("decision") == "reject"
            ):
                last = str(data.get("reason") or "")
            elif row.contract_id == self.state.contract.id and data.get("event") == "human_gate":
                last = None
        return last or None

    def _write_lessons(self) -> str | None:
        """A lesson per gate-failing candidate, from its verdict; returns the first such seat."""
        failing = sorted(
            (
                c
                for c in self.state.candidates.values()
                if c.verdict and c.stage in ("hard", "measured")
            ),
            key=lambda c: (c.finished_at, c.seat.name),
        )
        now = datetime.now(timezone.utc)
        for cand in failing:
            assert cand.verdict is not None
            lesson = lesson_from_verdict(
                cand.verdict,
                domain=self.domain,
                tags=self.tags,
                contract_id=self.state.contract.id,
                run_id=self.state.run_id,
                seat=cand.seat.name,
                now=now,
            )
            if lesson is not None:
                self.lessons.append(lesson)
        if self.lessons:
            with LessonStore(self.state.paths.lessons) as store:
                store.add(self.lessons)
            for lesson in self.lessons:
                self.state.event(
                    "lesson_written", lesson=lesson.id, gate=lesson.gate, kind=lesson.kind
                )
        return failing[0].seat.name if failing else None

    def _certify(self, winner: str) -> str:
        cand = self.state.candidates[winner]
        verdict = cand.verdict or {}
        key = certificate.load_or_create_key(self.state.paths.cert_key)
        payload = certificate.build_payload(
            self.state.ledger,
            run_id=self.state.run_id,
            contract_id=self.state.contract.id,
            contract_sha256=self.state.contract.sha256,
            nonce=str(verdict.get("nonce", "")),
            verdict=str(verdict.get("verdict", "")),
            exit_code=int(verdict.get("exit_code", 0)),
            winner=winner,
        )
        token = certificate.issue(payload, key)
        write_text_atomic(self.state.run_dir / "certificate.txt", token + "\n")
        return token


def _current_branch(root: Path) -> str | None:
    try:
        return git(root, "symbolic-ref", "--quiet", "--short", "HEAD").decode().strip() or None
    except WorkspaceError:
        return None  # detached HEAD
