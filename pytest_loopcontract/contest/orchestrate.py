"""``loop-contract contest run``: one task, every seat, the gates, the judges, the bracket.

The order is the trust model's: candidates are produced in their own git worktrees, then
verified by the isolated launcher (the same one ``loop-contract verify`` uses), then stopped at
the first gate rank they fail (hard, then measured); only the survivors go to the judges, who
see scrubbed diffs under shuffled labels and never their own family's work; the matrix and the
bracket are pure arithmetic; the proposed winner waits for a person. Every dispatch, outcome,
score and decision goes into the hash-chained ledger as it happens, so a crash leaves a record
of what was spent.

I/O lives here and in the modules it calls; the rules live in the pure modules (``standing``,
``matrix``, ``bracket``, ``lessons``). Rendering is elsewhere (``report``).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_loopcontract import __version__
from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.bracket import Entrant, run_bracket
from pytest_loopcontract.contest.judging import JudgeOutcome
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.lesson_store import LessonStore
from pytest_loopcontract.contest.lessons import Lesson, lesson_from_verdict
from pytest_loopcontract.contest.matrix import MatrixResult, score_matrix
from pytest_loopcontract.contest.packets import CandidateView
from pytest_loopcontract.contest.panel import (
    PanelSettings,
    bracket_document,
    convene,
    dispatch_payload,
    lesson_document,
    lesson_scope,
    matrix_document,
    save_seat_log,
    task_of,
)
from pytest_loopcontract.contest.progress import RunProgress
from pytest_loopcontract.contest.prompting import contest_prompt, retry_notes
from pytest_loopcontract.contest.routes import RouteTable
from pytest_loopcontract.contest.seats import Seat, SeatRun, run_seat, seats_from_contract
from pytest_loopcontract.contest.standing import gate_stage, gate_summary
from pytest_loopcontract.contest.verification import FieldVerdict, verify_field
from pytest_loopcontract.contest.worktrees import (
    CandidateError,
    Worktree,
    add_worktree,
    capture_candidate,
)
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import utc_now, write_json_atomic, write_text_atomic
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import EXIT_AWAIT_HUMAN, EXIT_NOT_MET
from pytest_loopcontract.verifier.baseline import (
    BaselineRecord,
    load_baseline,
    take_baseline,
)
from pytest_loopcontract.verifier.verify import pinned_contract
from pytest_loopcontract.verifier.workspace import (
    WorkspaceError,
    diff_text,
    git,
    snapshot_worktree,
)

__all__ = [
    "ContestError",
    "contest_exit_code",
    "latest_result",
    "load_result",
    "run_contest",
]

DEFAULT_ATTEMPTS = 3
DEFAULT_PARALLEL = 4
DEFAULT_LESSON_CHARS = 2000
RESULT_SCHEMA_VERSION = 1


class ContestError(LoopContractError):
    """A contest that cannot start or cannot go on; the message says why and what to do."""


@dataclass
class _Candidate:
    """One seat's latest attempt, as the run goes on (mutable: filled phase by phase)."""

    seat: Seat
    attempt: int = 0
    run: SeatRun | None = None
    worktree: Worktree | None = None
    commit: str | None = None
    tree: str | None = None
    changed: tuple[str, ...] = ()
    verdict: dict[str, Any] | None = None
    verdict_path: str | None = None
    stage: str = "generation"
    reasons: list[dict[str, str]] = field(default_factory=list)
    finished_at: float = 0.0
    same_tree_as: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        return self.run.status if self.run else "error"


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
        raise ContestError(f"{baseline.contract_path}: the contract lists no seats (seats: [...])")
    if not any(s.generate for s in seats):
        raise ContestError(f"{baseline.contract_path}: no seat has a generate command")

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
            return _Run(
                root, paths, baseline, contract, seats, run_id, run_dir, ledger, emit, parallel
            ).execute()
    finally:
        ledger.close()


def _ensure_baseline(root: Path, contract_path: str | None) -> BaselineRecord:
    if StateDir.of(root).baseline.exists():
        return load_baseline(root)
    if contract_path is None:
        raise ContestError("no baseline yet: run `loop-contract baseline` first")
    return take_baseline(root, contract_path)


class _Run:
    """The state of one contest run; ``execute`` walks the phases in order."""

    def __init__(
        self,
        root: Path,
        paths: StateDir,
        baseline: BaselineRecord,
        contract: Contract,
        seats: list[Seat],
        run_id: str,
        run_dir: Path,
        ledger: Ledger,
        emit: Callable[[str], None] | None,
        parallel: int | None,
    ) -> None:
        self.root, self.paths, self.baseline, self.contract = root, paths, baseline, contract
        self.seats, self.run_id, self.run_dir, self.ledger = seats, run_id, run_dir, ledger
        settings = contract.contest
        self.domain, self.tags = lesson_scope(contract)
        self.attempt_cap = int(settings.get("attempts") or DEFAULT_ATTEMPTS)
        self.parallel = max(1, parallel or int(settings.get("parallel") or DEFAULT_PARALLEL))
        self.lesson_chars = int(settings.get("lesson_chars", DEFAULT_LESSON_CHARS))
        self.settings = PanelSettings.of(contract)
        self.ledger_lock = threading.Lock()
        self.started = utc_now()
        self.progress = RunProgress(
            run_dir / "run_status.json",
            run_id=run_id,
            contract_id=contract.id,
            seats=[s.name for s in seats],
            emit=emit,
        )
        self.candidates = {s.name: _Candidate(s) for s in seats if s.generate}
        self.escalations: list[dict[str, str]] = []
        self.lessons: list[Lesson] = []
        self.base_branch = _current_branch(root)
        self.attempts = 0

    # -- ledger ----------------------------------------------------------------------------

    def _append(self, kind: str, payload: Mapping[str, Any], **columns: Any) -> None:
        with self.ledger_lock:
            self.ledger.append(
                kind, run_id=self.run_id, contract_id=self.contract.id, payload=payload, **columns
            )

    def _event(self, event: str, **details: Any) -> None:
        with self.ledger_lock:
            self.ledger.record_event(
                event, run_id=self.run_id, contract_id=self.contract.id, details=details
            )

    def _escalate(self, code: str, message: str) -> None:
        self.escalations.append({"code": code, "message": message})
        self._event("escalation", code=code, message=message)

    # -- phases ----------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        self._append(
            "run_started",
            {
                "contract": {"id": self.contract.id, "sha256": self.contract.sha256},
                "seats": [{"seat": s.name, "family": s.family} for s in self.seats],
                "mode": self.contract.mode,
                "base_commit": self.baseline.commit,
                "base_branch": self.base_branch,
                "tool": {"name": "pytest-loopcontract", "version": __version__},
            },
        )
        lessons_text = self._lessons_block()
        rejection = self._last_rejection()
        routes = RouteTable(self.paths.routes)
        order = routes.order(self.domain, list(self.candidates))
        retry: dict[str, list[str]] = {}
        to_run = list(order)
        stopped: str | None = None
        status = "stopped"
        for attempt in range(1, self.attempt_cap + 1):
            stopped = self._over_budget()
            if stopped:
                break
            self.progress.phase("generating", attempt=attempt)
            stopped = self._generate(to_run, attempt, lessons_text, rejection, retry)
            if stopped:
                break
            self.progress.phase("verifying", attempt=attempt)
            self._verify([self.candidates[name] for name in to_run])
            if any(c.stage != "hard" and c.stage != "generation" for c in self.candidates.values()):
                break
            to_run = [
                name
                for name in order
                if self.candidates[name].outcome not in ("unavailable", "refused")
            ]
            retry = {name: _retry_log(self.candidates[name]) for name in to_run}
            if not to_run:
                break
            if attempt == self.attempt_cap:
                self._event("retry_cap", attempts=attempt, cap=self.attempt_cap)
                self._escalate(
                    "retry_cap",
                    f"every candidate fell at the hard gate in {attempt} attempt(s); "
                    "a person must look at the task or the contract",
                )
        self.attempts = max(c.attempt for c in self.candidates.values())
        first_failing = self._write_lessons()
        degraded = False

        survivors = [c for c in self.candidates.values() if c.stage == "passed"]
        matrix_doc: dict[str, Any] | None = None
        bracket_doc: dict[str, Any] | None = None
        winner: str | None = None
        if stopped:
            status = "stopped"
            self.escalations.append({"code": "stopped", "message": stopped})
        elif len(survivors) == 1:
            winner = survivors[0].seat.name
            survivors[0].stage = "winner"
            bracket_doc = {
                "rounds": [],
                "finalists": [winner],
                "proposed_winner": winner,
                "decided_by": None,
                "reason": "the only candidate through the gates wins without a matrix",
            }
        elif survivors and (stopped := self._over_budget()):
            status = "stopped"
            self.escalations.append({"code": "stopped", "message": stopped})
        elif survivors:
            self.progress.phase("judging")
            matrix, judges, cells = self._judge(survivors)
            survivors = [c for c in survivors if c.stage == "passed"]
            matrix_doc = matrix_document(matrix, judges, cells, self.settings)
            winner, bracket_doc = self._bracket(survivors, matrix)
            degraded = any(score.degraded for score in matrix.candidates.values())
        if first_failing:
            # The panel's verdict is what makes a demotion fair; a degraded panel only holds it.
            routes.demote(self.domain, first_failing, run_id=self.run_id, held=degraded)
            self._event("route_demoted", seat=first_failing, domain=self.domain, held=degraded)
        if not stopped:
            status = "awaiting_human" if winner else "no_winner"
            if winner and self.escalations:
                status = "escalated"
        outcomes = {
            name: ("pass" if c.stage in ("winner",) else "fail")
            for name, c in self.candidates.items()
        }
        winner_family = self.candidates[winner].seat.family if winner else None
        self._append(
            "decision",
            {"winner": winner, "outcomes": outcomes, "by": "bracket", "status": status},
            seat=winner,
            family=winner_family,
        )
        self._append(
            "run_finished",
            {
                "status": "winner" if winner else ("stopped" if stopped else "no_winner"),
                "winner": winner,
            },
        )
        token = self._certify(winner) if winner else None
        result = self._result(status, matrix_doc, bracket_doc, winner, token)
        save_result(self.run_dir, result)
        self.progress.finish(status)
        return result

    def _over_budget(self) -> str | None:
        """Stop before the next dispatch once the reported spend reaches the contract's budget.

        Only reported figures count (nothing is estimated), so a seat that never reports can
        not trip the budget; the ledger says which dispatches did not report.
        """
        budget = self.contract.budget
        tokens = cost = 0.0
        for row in self.ledger.rows(run_id=self.run_id, kind="dispatch"):
            tokens += row.tokens or 0
            cost += row.cost_usd or 0.0
        for name, limit, spent in (("tokens", budget.tokens, tokens), ("usd", budget.usd, cost)):
            if limit is not None and spent >= limit:
                self._event("budget_exhausted", budget=name, limit=limit, spent=spent)
                return f"budget exhausted: {spent:g} {name} reported against a cap of {limit:g}"
        return None

    def _lessons_block(self) -> str:
        if not self.paths.lessons.exists() or self.lesson_chars <= 0:
            return ""
        with LessonStore(self.paths.lessons) as store:
            return store.prompt(self.domain, self.tags, cap_chars=self.lesson_chars).text

    def _last_rejection(self) -> str | None:
        """The reason a person gave when rejecting this contract's last winner, if they did."""
        last: str | None = None
        for row in self.ledger.rows(kind="event"):
            data = row.data
            if (
                row.contract_id == self.contract.id
                and data.get("event") == "human_gate"
                and data.get("decision") == "reject"
            ):
                last = str(data.get("reason") or "")
            elif row.contract_id == self.contract.id and data.get("event") == "human_gate":
                last = None
        return last or None

    def _generate(
        self,
        names: Sequence[str],
        attempt: int,
        lessons_text: str,
        rejection: str | None,
        retry: Mapping[str, list[str]],
    ) -> str | None:
        """Dispatch the named seats in parallel; returns a stop reason if the run must stop."""
        before = snapshot_worktree(self.root)
        parent = self.paths.worktrees(self.contract.id)
        parent.mkdir(parents=True, exist_ok=True)
        with cf.ThreadPoolExecutor(max_workers=self.parallel) as pool:
            futures = [
                pool.submit(
                    self._generate_one,
                    self.candidates[name],
                    attempt,
                    contest_prompt(
                        self.contract,
                        attempt=attempt,
                        lessons_block=lessons_text,
                        rejection=rejection,
                        retry=retry.get(name, ()),
                    ),
                    parent,
                )
                for name in names
            ]
            for future in futures:
                future.result()
        after = snapshot_worktree(self.root)
        if after != before:
            changed = [p for _, p in _changed(self.root, before, after)]
            self._event("outside_write", paths=changed[:50])
            return (
                "a seat wrote outside its worktree, into the repository itself: "
                + ", ".join(changed[:10])
                + " - the run stops; nothing from this attempt is trusted"
            )
        return None

    def _generate_one(self, cand: _Candidate, attempt: int, prompt: str, parent: Path) -> None:
        seat = cand.seat
        cand.attempt, cand.verdict, cand.commit, cand.tree, cand.reasons = (
            attempt,
            None,
            None,
            None,
            [],
        )
        cand.stage = "generation"
        self.progress.seat(seat.name, "generating", f"attempt {attempt}")
        private = self.run_dir / "seats" / f"{seat.name}-a{attempt}"
        private.mkdir(parents=True, exist_ok=True)
        prompt_file = private / "prompt.md"
        write_text_atomic(prompt_file, prompt)
        try:
            cand.worktree = add_worktree(
                self.root,
                contract_id=self.contract.id,
                seat=seat.name,
                base_commit=self.baseline.commit,
                parent=parent,
            )
        except (WorkspaceError, ValueError, OSError) as exc:
            cand.run = None
            cand.reasons = [{"code": "worktree_failed", "message": str(exc)}]
            self.progress.seat(seat.name, "eliminated", f"worktree: {exc}")
            return
        run = run_seat(
            seat,
            "candidate",
            cwd=cand.worktree.path,
            values={"prompt_file": str(prompt_file), "workdir": str(cand.worktree.path)},
            report_file=private / "report.json",
        )
        cand.run, cand.finished_at = run, time.monotonic()
        save_seat_log(private, run)
        self._append(
            "dispatch",
            dispatch_payload("candidate", attempt, run),
            seat=seat.name,
            family=seat.family,
            tokens=run.tokens,
            cost_usd=run.cost_usd,
        )
        if run.status != "ok":
            cand.reasons = [{"code": f"seat_{run.status}", "message": run.reason}]
            state = "unavailable" if run.status == "unavailable" else "eliminated"
            self.progress.seat(seat.name, state, run.reason)
            return
        try:
            captured = capture_candidate(
                self.root,
                cand.worktree,
                message=f"loop-contract candidate of {seat.name} (run {self.run_id}, "
                f"attempt {attempt})",
            )
        except (CandidateError, WorkspaceError) as exc:
            cand.reasons = [{"code": "candidate_lost", "message": str(exc)}]
            self.progress.seat(seat.name, "eliminated", str(exc))
            return
        cand.commit, cand.tree, cand.changed = (
            captured.commit,
            captured.tree,
            tuple(captured.changed_paths),
        )
        self.progress.seat(seat.name, "generated", f"{len(cand.changed)} file(s) changed")

    def _verify(self, batch: Sequence[_Candidate], *, tag: str = "") -> None:
        """Verify each distinct tree once, in parallel; identical trees share the verdict."""
        ready = [c for c in batch if c.commit and c.tree]
        for cand in ready:
            if self.contract.mode == "improve" and not cand.changed:
                cand.stage = "hard"
                cand.reasons = [{"code": "empty_diff", "message": "improve mode: no change"}]
                self.progress.seat(cand.seat.name, "eliminated", "empty diff")
        ready = [c for c in ready if c.stage == "generation" or tag]
        if not ready:
            return

        def started(group: tuple[str, ...]) -> None:
            for name in group:
                self.progress.seat(name, "verifying", "shared tree" if len(group) > 1 else "")

        verified = verify_field(
            self.root,
            {c.seat.name: (c.commit or "", c.tree or "") for c in ready},
            # verification is CPU-bound pytest: more runs than CPUs only slows each down
            parallel=min(self.parallel, os.cpu_count() or 1),
            verdict_dir=self.run_dir / "verdicts" / f"attempt-{ready[0].attempt}{tag}",
            on_start=started,
        )
        shared_groups = {tuple(sorted((name, *v.shared_with))) for name, v in verified.items()}
        for group in sorted(g for g in shared_groups if len(g) > 1):
            self._event("identical_trees", seats=list(group), tree=self.candidates[group[0]].tree)
        for cand in ready:
            self._settle(cand, verified[cand.seat.name])

    def _settle(self, cand: _Candidate, result: FieldVerdict) -> None:
        """Record one candidate's verification and where it stops."""
        cand.same_tree_as = result.shared_with
        if result.verdict is None:
            cand.stage = "hard"
            cand.reasons = [{"code": "verify_failed", "message": result.error or "no verdict"}]
            self.progress.seat(cand.seat.name, "eliminated", cand.reasons[0]["message"])
            return
        verdict = result.verdict
        cand.verdict = verdict
        if result.verdict_path is not None:
            cand.verdict_path = result.verdict_path.relative_to(self.root).as_posix()
        stage = gate_stage(verdict)
        cand.stage = stage or "passed"
        cand.reasons = [
            {"code": str(r["code"]), "message": str(r["message"])}
            for r in verdict.get("reasons") or []
        ]
        self._append(
            "outcome",
            {
                "verdict": verdict["verdict"],
                "exit_code": verdict["exit_code"],
                "attempt": cand.attempt,
                "stage": cand.stage,
                "reasons": [r["code"] for r in cand.reasons],
                "shared_with": list(cand.same_tree_as),
            },
            seat=cand.seat.name,
            family=cand.seat.family,
        )
        self.progress.seat(
            cand.seat.name,
            "survived" if stage is None else "eliminated",
            f"verdict {verdict['verdict']}" + (f", stopped at the {stage} gate" if stage else ""),
        )

    def _write_lessons(self) -> str | None:
        """A lesson per gate-failing candidate, from its verdict; returns the first such seat."""
        failing = sorted(
            (c for c in self.candidates.values() if c.verdict and c.stage in ("hard", "measured")),
            key=lambda c: (c.finished_at, c.seat.name),
        )
        now = datetime.now(timezone.utc)
        for cand in failing:
            assert cand.verdict is not None
            lesson = lesson_from_verdict(
                cand.verdict,
                domain=self.domain,
                tags=self.tags,
                contract_id=self.contract.id,
                run_id=self.run_id,
                seat=cand.seat.name,
                now=now,
            )
            if lesson is not None:
                self.lessons.append(lesson)
        if self.lessons:
            with LessonStore(self.paths.lessons) as store:
                store.add(self.lessons)
            for lesson in self.lessons:
                self._event("lesson_written", lesson=lesson.id, gate=lesson.gate, kind=lesson.kind)
        return failing[0].seat.name if failing else None

    def _judge(
        self, survivors: Sequence[_Candidate]
    ) -> tuple[MatrixResult, list[JudgeOutcome], list[Any]]:
        views = [
            CandidateView(
                seat=c.seat.name,
                family=c.seat.family,
                diff=diff_text(self.root, self.baseline.tree, c.tree or "", context=3),
                gates=gate_summary(c.verdict or {}),
                tests=dict((c.verdict or {}).get("summary") or {}),
            )
            for c in survivors
        ]
        judges = [s for s in self.seats if s.judge]
        for judge in judges:
            self.progress.seat(judge.name, "judging")
        outcomes = convene(
            run_id=self.run_id,
            task=task_of(self.contract),
            views=views,
            judges=judges,
            identities=self._identities(),
            rows=self.settings.rows,
            folder=self.run_dir / "judges",
            parallel=self.parallel,
            on_run=self._judge_dispatched,
        )
        for outcome in outcomes:
            self._judged(outcome)
        cells = [cell for o in outcomes for cell in o.cells]
        calibration = {
            family: self.ledger.family_agreement(family)
            for family in sorted({j.family for j in judges})
        }
        candidates = {c.seat.name: c.seat.family for c in survivors}
        matrix = score_matrix(
            cells,
            candidates,
            min_score=self.settings.min_score,
            spread_threshold=self.settings.spread_threshold,
            dissent_threshold=self.settings.dissent_threshold,
            calibration=calibration,
        )
        if matrix.rerun_gates:
            matrix = self._rerun_dissents(survivors, cells, calibration, matrix)
        for name, score in matrix.candidates.items():
            for esc in score.escalations:
                if esc.code.startswith("spread"):
                    self._event(
                        "spread_over_threshold",
                        target=name,
                        spread=score.spread,
                        threshold=self.settings.spread_threshold,
                    )
                self._escalate(esc.code, f"{name}: {esc.message}")
            cand = self.candidates[name]
            if cand.stage == "passed" and not score.passed:
                cand.stage = "matrix"
                cand.reasons = [{"code": f.code, "message": f.message} for f in score.failures]
        self._record_scores(outcomes, matrix)
        return matrix, outcomes, cells

    def _judge_dispatched(self, judge: Seat, run: SeatRun, attempt: int) -> None:
        self._append(
            "dispatch",
            dispatch_payload("judge", attempt, run),
            seat=judge.name,
            family=judge.family,
            tokens=run.tokens,
            cost_usd=run.cost_usd,
        )

    def _judged(self, outcome: JudgeOutcome) -> None:
        """Record a judge's outcome; a discarded reply or cell is an event, never silent."""
        if outcome.status in ("discarded",) or outcome.discarded_cells:
            self._event(
                "judge_reply_discarded",
                judge=outcome.seat,
                status=outcome.status,
                discarded_cells=len(outcome.discarded_cells),
                note=outcome.note[:500],
            )
        self.progress.seat(outcome.seat, "judged", f"{outcome.status}, {len(outcome.cells)} cells")

    def _rerun_dissents(
        self,
        survivors: Sequence[_Candidate],
        cells: list[Any],
        calibration: Mapping[str, Any],
        matrix: MatrixResult,
    ) -> MatrixResult:
        """A dissent that cites a test re-runs that candidate's gates once, then re-scores."""
        for name in matrix.rerun_gates:
            cand = self.candidates[name]
            self._event("dissent_rerun", target=name)
            self._verify([cand], tag="-rerun")
        still = [c for c in survivors if c.stage == "passed"]
        return score_matrix(
            [cell for cell in cells if cell.candidate in {c.seat.name for c in still}],
            {c.seat.name: c.seat.family for c in still},
            min_score=self.settings.min_score,
            spread_threshold=self.settings.spread_threshold,
            dissent_threshold=self.settings.dissent_threshold,
            calibration=calibration,
            rerun_done=set(matrix.rerun_gates),
        )

    def _record_scores(self, outcomes: Sequence[JudgeOutcome], matrix: MatrixResult) -> None:
        for outcome in outcomes:
            by_target: dict[str, list[Any]] = {}
            for cell in outcome.cells:
                by_target.setdefault(cell.candidate, []).append(cell)
            for target, cells in sorted(by_target.items()):
                mean = sum(c.score for c in cells) / len(cells)
                self._append(
                    "score",
                    {
                        "target": target,
                        "validity": round(mean, 4),
                        "call": "pass" if mean >= self.settings.min_score else "fail",
                        "rows": {c.row: c.score for c in cells},
                    },
                    seat=outcome.seat,
                    family=outcome.family,
                )

    def _bracket(
        self, survivors: Sequence[_Candidate], matrix: MatrixResult
    ) -> tuple[str | None, dict[str, Any]]:
        entrants = []
        for cand in survivors:
            score = matrix.candidates.get(cand.seat.name)
            entrants.append(
                Entrant(
                    label=cand.seat.name,
                    score=score.overall if score else None,
                    passed_matrix=bool(score and score.passed),
                    tokens=cand.run.tokens if cand.run else None,
                    seconds=cand.run.seconds if cand.run else None,
                )
            )
        # matrix failers are in the bracket's screen round, so the record shows them leave
        for name, cand in self.candidates.items():
            if cand.stage == "matrix":
                score = matrix.candidates.get(name)
                entrants.append(
                    Entrant(
                        label=name,
                        score=score.overall if score else None,
                        passed_matrix=False,
                        tokens=cand.run.tokens if cand.run else None,
                        seconds=cand.run.seconds if cand.run else None,
                    )
                )
        cut = self.contract.bracket.get("cut", 2)
        final = int(self.contract.bracket.get("final", 2))
        result = run_bracket(entrants, cut=cut, final=final)
        rounds = [result.screen, *result.rounds]
        for rnd in rounds:
            for name in rnd.eliminated:
                if self.candidates[name].stage == "passed":
                    self.candidates[name].stage = "bracket"
        for name in result.finalists:
            self.candidates[name].stage = "finalist"
        winner = result.proposed_winner
        if winner:
            self.candidates[winner].stage = "winner"
        doc = bracket_document(result)
        self._event("bracket", rounds=doc["rounds"], proposed_winner=winner)
        return winner, doc

    def _identities(self) -> list[str]:
        names: list[str] = [str(self.root), str(self.paths.folder), "loop-contract@localhost"]
        for seat in self.seats:
            names += [seat.name, seat.family]
        for cand in self.candidates.values():
            if cand.worktree:
                names += [str(cand.worktree.path), cand.worktree.branch]
            if cand.commit:
                names.append(cand.commit)
        return names

    def _certify(self, winner: str) -> str:
        cand = self.candidates[winner]
        verdict = cand.verdict or {}
        key = certificate.load_or_create_key(self.paths.cert_key)
        payload = certificate.build_payload(
            self.ledger,
            run_id=self.run_id,
            contract_id=self.contract.id,
            contract_sha256=self.contract.sha256,
            nonce=str(verdict.get("nonce", "")),
            verdict=str(verdict.get("verdict", "")),
            exit_code=int(verdict.get("exit_code", 0)),
            winner=winner,
        )
        token = certificate.issue(payload, key)
        write_text_atomic(self.run_dir / "certificate.txt", token + "\n")
        return token

    def _result(
        self,
        status: str,
        matrix_doc: dict[str, Any] | None,
        bracket_doc: dict[str, Any] | None,
        winner: str | None,
        token: str | None,
    ) -> dict[str, Any]:
        seq, head = self.ledger.head()
        return {
            "schema_version": RESULT_SCHEMA_VERSION,
            "run_id": self.run_id,
            "contract": {
                "id": self.contract.id,
                "path": self.baseline.contract_path,
                "sha256": self.contract.sha256,
                "goal": self.contract.goal,
                "mode": self.contract.mode,
                "dod": [{"id": i.id, "text": i.text} for i in self.contract.dod],
            },
            "started": self.started,
            "finished": utc_now(),
            "status": status,
            "attempts": self.attempts,
            "seats": [
                {"name": s.name, "family": s.family, "scripted": s.scripted} for s in self.seats
            ],
            "candidates": [self._candidate_doc(c) for c in self.candidates.values()],
            "matrix": matrix_doc,
            "bracket": bracket_doc,
            "winner": winner,
            "escalations": self.escalations,
            "lessons": [
                lesson_document(lesson)
                for lesson in {lesson.id: lesson for lesson in self.lessons}.values()
            ],
            "decision": None,
            "certificate": token,
            "ledger": {
                "path": str(self.paths.ledger.relative_to(self.root)),
                "head_seq": seq,
                "head": head,
            },
            "base": {"commit": self.baseline.commit, "branch": self.base_branch},
        }

    def _candidate_doc(self, cand: _Candidate) -> dict[str, Any]:
        run = cand.run
        verdict = cand.verdict
        return {
            "seat": cand.seat.name,
            "family": cand.seat.family,
            "attempt": cand.attempt,
            "outcome": cand.outcome,
            "branch": cand.worktree.branch if cand.worktree else None,
            "commit": cand.commit,
            "tree": cand.tree,
            "same_tree_as": list(cand.same_tree_as),
            "provenance": {
                "command": list(run.command) if run else list(cand.seat.generate or ()),
                "exit_code": run.exit_code if run else None,
                "tokens": run.tokens if run else None,
                "cost_usd": run.cost_usd if run else None,
                "seconds": round(run.seconds, 3) if run else None,
                "reason": run.reason if run else "",
            },
            "verdict": verdict.get("verdict") if verdict else None,
            "exit_code": verdict.get("exit_code") if verdict else None,
            "verdict_path": cand.verdict_path,
            "stage": cand.stage if cand.stage != "passed" else "matrix",
            "gates": gate_summary(verdict)
            if verdict
            else {"hard": [], "measured": [], "tamper": []},
            "reasons": cand.reasons,
        }


def _retry_log(cand: _Candidate) -> list[str]:
    """What the seat's next attempt is told: the verifier's notes, or how the seat run ended."""
    if cand.verdict:
        return retry_notes(cand.verdict)
    why = cand.reasons[0]["message"] if cand.reasons else ""
    return [f"your last run ended with outcome {cand.outcome}: {why}".rstrip(": ")]


def _changed(root: Path, before: str, after: str) -> list[tuple[str, str]]:
    from pytest_loopcontract.verifier.workspace import changed_paths

    return changed_paths(root, before, after)


def _current_branch(root: Path) -> str | None:
    try:
        return git(root, "symbolic-ref", "--quiet", "--short", "HEAD").decode().strip() or None
    except WorkspaceError:
        return None  # detached HEAD


# -- results on disk ----------------------------------------------------------------------------


def save_result(run_dir: Path, result: Mapping[str, Any]) -> None:
    write_json_atomic(run_dir / "result.json", result)


def load_result(run_dir: Path) -> dict[str, Any]:
    import json

    path = run_dir / "result.json"
    try:
        doc = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise ContestError(f"no result at {path}: the run did not finish") from None
    except ValueError as exc:
        raise ContestError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ContestError(f"{path}: not a result document")
    return doc


def latest_result(root: Path, run_id: str | None = None) -> tuple[Path, dict[str, Any]]:
    """The named run's result, or the newest finished one."""
    runs = StateDir.of(root).runs
    if run_id:
        return runs / run_id, load_result(runs / run_id)
    finished = sorted(p for p in runs.glob("*/result.json")) if runs.exists() else []
    if not finished:
        raise ContestError("no finished contest run yet: `loop-contract contest run` first")
    return finished[-1].parent, load_result(finished[-1].parent)


def contest_exit_code(result: Mapping[str, Any]) -> int:
    """24 when a proposed winner waits for a person, 20 when there is none, 0 once decided."""
    status = result.get("status")
    if status in ("awaiting_human", "escalated"):
        return EXIT_AWAIT_HUMAN
    if status == "decided":
        return 0
    return EXIT_NOT_MET
