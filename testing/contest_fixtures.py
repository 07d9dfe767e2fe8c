"""Realistic contest run result documents (``result.json``) for tests.

The matrix and the bracket parts are computed by the real :mod:`matrix` and :mod:`bracket`
modules from realistic judge cells, so a fixture is consistent the way an engine-written
document is (medians, spreads, cut lines, stages) rather than hand-typed numbers that drift.

* :func:`sample_result`: three scripted seats of three families, every candidate through its
  gates (beta on its second attempt, which left one lesson), a full matrix (each judge scores
  the two other-family candidates on four rows), a screen and one cut round, a proposed
  winner awaiting the human gate.
* :func:`no_winner_result`: every candidate fails a measured gate; no matrix, no bracket, a
  lesson written.
* :func:`decided_result`: the sample after a person approved the winner, with a certificate.
* :func:`crowd_result`: ``n`` seats of four families; some fail the matrix, several rounds.
* :func:`hostile_result`: the sample with seat-controlled text (seat and branch names,
  failure messages, test names, rationales, notes, lessons) full of markup, mentions,
  references, comment markers, escape sequences and 100 KB rationales.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from typing import Any

from pytest_loopcontract.contest.bracket import Entrant, run_bracket
from pytest_loopcontract.contest.judging import JudgeOutcome
from pytest_loopcontract.contest.matrix import score_matrix
from pytest_loopcontract.contest.matrix_model import ROWS, Cell
from pytest_loopcontract.contest.panel import PanelSettings, matrix_document
from pytest_loopcontract.contest.scoring import bracket_document

__all__ = [
    "HOSTILE",
    "HOSTILE_SEAT",
    "crowd_result",
    "decided_result",
    "hostile_result",
    "no_winner_result",
    "sample_result",
]

MIN_SCORE = 6.0

HOSTILE = (
    "<!-- loop-contract:marker --> <script>alert(1)</script> <img src=x onerror=alert(2)> "
    "@octocat please look at #1 and GH-2 | col | ``` `tick` ``` [link](https://evil.example/x) "
    "**bold** $x^2$ \x1b[31mred\x1b[0m \u202eevil\u202c\n# not a heading\n- not a list"
)
"""Seat-controlled text that would do something in every medium if it were not escaped."""

HOSTILE_SEAT = "mallory<!--x-->@octocat#1|`"
"""A seat name with markup in it (the result schema only forbids control characters)."""

_GOAL = "Make rolling_mean() agree with the reference within 1e-9 and run in O(n)."
_DOD = [
    {"id": "correct", "text": "rolling_mean matches the reference on random input"},
    {"id": "fast", "text": "a million points in under 50 ms"},
]
_FAMILY_SCORE = {"alpha": 8.2, "beta": 6.8, "gamma": 7.4}


def _sha(*parts: object, size: int = 40) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:size]


def _hard(status: str = "pass") -> list[dict[str, Any]]:
    return [
        {"id": "acceptance", "status": status},
        {"id": "no-regressions", "status": "pass"},
    ]


def _measured(coverage: float = 94.0, ms: float = 31.0) -> list[dict[str, Any]]:
    return [
        {
            "id": "coverage",
            "status": "pass" if coverage >= 90 else "fail",
            "metric": "coverage.percent",
            "observed": coverage,
            "op": ">=",
            "threshold": 90,
            "unit": "%",
        },
        {
            "id": "speed",
            "status": "pass" if ms <= 50 else "fail",
            "metric": "duration.tests/test_speed.py::test_million",
            "observed": ms,
            "op": "<=",
            "threshold": 50,
            "unit": "ms",
        },
    ]


def _candidate(
    seat: str,
    family: str,
    *,
    attempt: int = 1,
    verdict: str | None = "pass",
    stage: str = "matrix",
    coverage: float = 94.0,
    reasons: Sequence[dict[str, str]] = (),
    tokens: int | None = None,
    seconds: float = 3.2,
) -> dict[str, Any]:
    return {
        "seat": seat,
        "family": family,
        "attempt": attempt,
        "outcome": "ok",
        "branch": f"loop-contract/rolling/{seat}" + (f"-{attempt}" if attempt > 1 else ""),
        "commit": _sha(seat, attempt, "commit"),
        "tree": _sha(seat, attempt, "tree"),
        "same_tree_as": [],
        "provenance": {
            "command": ["python", f"seats/{seat}.py", "/tmp/prompt.txt", f"/tmp/wt/{seat}"],
            "exit_code": 0,
            "tokens": tokens,
            "cost_usd": None if tokens is None else round(tokens * 2e-6, 6),
            "seconds": seconds,
            "reason": "",
        },
        "verdict": verdict,
        "exit_code": 0 if verdict == "pass" else 20,
        "stage": stage,
        "gates": {"hard": _hard(), "measured": _measured(coverage), "tamper": []},
        "reasons": list(reasons),
    }


def _cells(seats: Sequence[tuple[str, str]], base: dict[str, float]) -> list[Cell]:
    cells: list[Cell] = []
    for j, (judge, jfam) in enumerate(seats):
        for c, (cand, cfam) in enumerate(seats):
            if jfam == cfam:
                continue
            for r, row in enumerate(ROWS):
                wobble = ((j * 7 + c * 3 + r * 5) % 5 - 2) * 0.25
                score = max(0.0, min(10.0, round(base[cand] + wobble, 2)))
                cells.append(
                    Cell(
                        seat=judge,
                        family=jfam,
                        candidate=cand,
                        row=row,
                        score=score,
                        confidence=0.7 + 0.05 * ((j + r) % 4),
                        evidence=f"tests/test_rolling.py::test_{row}",
                        rationale=f"{row.replace('_', ' ')}: {cand} looks "
                        f"{'solid' if score >= MIN_SCORE else 'weak'} to {judge}",
                    )
                )
    return cells


def _build(
    seats: Sequence[tuple[str, str]],
    base: dict[str, float],
    *,
    tokens: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A contest where every seat's last attempt passed its gates and went to the judges."""
    families = dict(seats)
    cells = _cells(seats, base)
    scored = score_matrix(
        cells,
        families,
        min_score=MIN_SCORE,
        spread_threshold=3.0,
        dissent_threshold=3.0,
    )
    entrants = [
        Entrant(
            label,
            s.overall,
            s.passed,
            tokens=(tokens or {}).get(label),
            seconds=3.0 + i * 0.5,
        )
        for i, (label, s) in enumerate(scored.candidates.items())
    ]
    br = run_bracket(entrants, cut=2, final=2)

    stage: dict[str, str] = {}
    for label, s in scored.candidates.items():
        stage[label] = "bracket" if s.passed else "matrix"
    for label in br.finalists:
        stage[label] = "finalist"
    if br.proposed_winner:
        stage[br.proposed_winner] = "winner"

    candidates = [
        _candidate(
            name,
            fam,
            stage=stage[name],
            tokens=(tokens or {}).get(name),
            seconds=3.0 + i * 0.5,
        )
        for i, (name, fam) in enumerate(seats)
    ]
    judges = [
        JudgeOutcome(
            seat=name,
            family=fam,
            status="ok",
            cells=tuple(c for c in cells if c.seat == name),
            discarded_cells=(),
            labels={},
            attempts=(),
        )
        for name, fam in seats
    ]
    # the engine's own document builders, so the fixtures cannot drift from real results
    matrix = matrix_document(scored, judges, cells, PanelSettings(min_score=MIN_SCORE))
    bracket = bracket_document(br)
    return {
        "schema_version": 1,
        "run_id": "20261129T213000Z-ab12cd",
        "contract": {
            "id": "rolling",
            "path": "loopcontract.yml",
            "sha256": _sha("contract", size=64),
            "goal": _GOAL,
            "mode": "fix",
            "dod": copy.deepcopy(_DOD),
        },
        "started": "2026-11-29T21:30:00Z",
        "finished": "2026-11-29T21:31:10Z",
        "status": "awaiting_human" if br.proposed_winner else "no_winner",
        "attempts": 1,
        "seats": [{"name": name, "family": fam, "scripted": True} for name, fam in seats],
        "candidates": candidates,
        "matrix": matrix,
        "bracket": bracket,
        "winner": br.proposed_winner,
        "escalations": [],
        "lessons": [],
        "decision": None,
        "certificate": None,
        "ledger": {
            "path": ".loop-contract/ledger.sqlite",
            "head_seq": 42,
            "head": _sha("ledger", 42, size=64),
        },
    }


def _lesson(gate: str, what: str, evidence: str, cause: str, rule: str) -> dict[str, str]:
    return {
        "id": f"lesson-{_sha(gate, what, size=12)}",
        "domain": "python.numeric.rolling",
        "gate": gate,
        "kind": "measured",
        "what": what,
        "evidence": evidence,
        "cause": cause,
        "rule": rule,
    }


def _override(doc: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if key not in doc:
            raise KeyError(f"result documents have no top-level key {key!r}")
        doc[key] = value
    return doc


def sample_result(**overrides: Any) -> dict[str, Any]:
    """The realistic happy path; ``overrides`` replace top-level keys (a typo raises)."""
    seats = (("alpha", "acme"), ("beta", "globex"), ("gamma", "initech"))
    doc = _build(seats, dict(_FAMILY_SCORE), tokens={"alpha": 1200, "beta": 2300})
    # beta's first attempt missed the coverage line; its second passed. The miss left a lesson.
    first = _candidate(
        "beta",
        "globex",
        attempt=1,
        verdict="fail",
        stage="measured",
        coverage=71.5,
        reasons=[{"code": "measured_gate_failed", "message": "coverage 71.5 % < 90 %"}],
        tokens=900,
    )
    doc["candidates"].insert(1, first)
    for cand in doc["candidates"]:
        if cand["seat"] == "beta" and cand["attempt"] == 1 and cand is not first:
            cand["attempt"] = 2
            cand["branch"] = "loop-contract/rolling/beta-2"
    doc["attempts"] = 2
    doc["lessons"] = [
        _lesson(
            "coverage",
            "coverage was 71.5 %, the gate needs >= 90 %",
            "coverage.percent observed 71.5 (threshold 90)",
            "the window-edge branches of rolling_mean had no test",
            "test both window edges (size 1 and size == len) before verifying",
        )
    ]
    return _override(doc, overrides)


def decided_result(**overrides: Any) -> dict[str, Any]:
    """The sample after a person approved the proposed winner; a certificate was issued."""
    doc = sample_result()
    doc["status"] = "decided"
    doc["decision"] = {
        "decision": "approve",
        "by": "ada",
        "reason": "clean diff, fastest run",
        "at": "2026-11-29T22:02:00Z",
        "seat": doc["winner"],
    }
    doc["certificate"] = "eyJ2ZXJzaW9uIjoxfQ.c2lnbmF0dXJlLWJ5dGVz"
    return _override(doc, overrides)


def no_winner_result(**overrides: Any) -> dict[str, Any]:
    """Every candidate misses the coverage gate: nobody reaches the judges, a lesson is kept."""
    doc = sample_result()
    seats = [(s["name"], s["family"]) for s in doc["seats"]]
    doc["candidates"] = [
        _candidate(
            name,
            fam,
            verdict="fail",
            stage="measured",
            coverage=60.0 + 5 * i,
            reasons=[
                {
                    "code": "measured_gate_failed",
                    "message": f"coverage {60.0 + 5 * i:.1f} % < 90 %",
                }
            ],
        )
        for i, (name, fam) in enumerate(seats)
    ]
    doc.update(
        status="no_winner",
        attempts=1,
        matrix=None,
        bracket=None,
        winner=None,
        lessons=[
            _lesson(
                "coverage",
                "every candidate stayed under 90 % coverage (best 70.0 %)",
                "coverage.percent observed 60.0, 65.0, 70.0 (threshold 90)",
                "the new code paths for NaN input were never exercised",
                "add a test with NaN inside the window before claiming coverage",
            )
        ],
    )
    return _override(doc, overrides)


def crowd_result(n: int = 12, **overrides: Any) -> dict[str, Any]:
    """``n`` seats of four families, scores spread so that some fail the matrix and the
    bracket needs several rounds."""
    seats = [(f"seat{i:02d}", f"family{i % 4}") for i in range(1, n + 1)]
    base = {name: 3.0 + 6.5 * (i % 7) / 6 for i, (name, _) in enumerate(seats)}
    doc = _build(seats, base)
    doc["seats"] = [
        {"name": name, "family": fam, "scripted": i % 2 == 0} for i, (name, fam) in enumerate(seats)
    ]
    return _override(doc, overrides)


def _hostile_text(doc: Any, long: str) -> Any:
    """Every seat-controlled free-text field of ``doc``, replaced (in place)."""
    for cand in doc["candidates"]:
        cand["branch"] = f"loop-contract/rolling/{cand['seat']}<!--x-->@octocat#1"
        cand["provenance"]["reason"] = HOSTILE
        cand["provenance"]["command"].append(HOSTILE)
        cand["gates"]["hard"].append(
            {"id": "tests/test_x.py::test_<script>@octocat", "status": "fail"}
        )
        cand["gates"]["tamper"].append(HOSTILE)
        cand["reasons"].append({"code": "hard_gate_failed", "message": HOSTILE + long})
    for judge in doc["matrix"]["judges"]:
        judge["note"] = HOSTILE
    for cell in doc["matrix"]["cells"]:
        cell["evidence"] = "tests/test_x.py::test_<!--y-->|@octocat #1"
        cell["rationale"] = HOSTILE + long
    for score in doc["matrix"]["candidates"].values():
        score["escalations"].append({"code": "low_confidence", "message": HOSTILE})
    winner = doc["winner"]
    judge = next(c["judge"] for c in doc["matrix"]["cells"] if c["candidate"] == winner)
    doc["matrix"]["candidates"][winner]["dissents"].append(
        {
            "judge": judge,
            "row": "evidence",
            "score": 1.0,
            "row_median": 8.0,
            "rationale": HOSTILE + long,
            "cites_test": True,
        }
    )
    doc["bracket"]["reason"] = HOSTILE
    doc["escalations"] = [{"code": "retry_cap", "message": HOSTILE + long}]
    for lesson in doc["lessons"]:
        for key in ("what", "evidence", "cause", "rule"):
            lesson[key] = HOSTILE + long
    doc["contract"]["goal"] = HOSTILE
    doc["contract"]["dod"][0]["text"] = HOSTILE
    return doc


def hostile_result(*, seat_names: bool = True, **overrides: Any) -> dict[str, Any]:
    """The sample with every seat-controlled string hostile and rationales of 100 KB.

    ``seat_names``: also give one seat the name :data:`HOSTILE_SEAT` and a family with HTML
    in it (still schema-valid: names only exclude control characters)."""
    if seat_names:
        seats = (("alpha", "acme"), (HOSTILE_SEAT, "<b>evil</b> corp"), ("gamma", "initech"))
        doc = _build(seats, {"alpha": 8.2, HOSTILE_SEAT: 6.8, "gamma": 7.4})
        doc["lessons"] = sample_result()["lessons"]
    else:
        doc = sample_result()
    _hostile_text(doc, "A" * 100_000)
    return _override(doc, overrides)
