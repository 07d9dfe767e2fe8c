"""What the ledger answers: a run's totals, win rates, cost per validity point, agreement.

These are read-only SQL over the ``rows`` table, for the certificate
and for calibration; :class:`~pytest_loopcontract.contest.ledger.Ledger` calls them on its
connection. Only reported figures are summed: "not reported" is never a zero.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from typing import Any, NamedTuple

from pytest_loopcontract.contest.ledger.rows import MAX_TOKENS, PROBE_RESULTS, LedgerError

__all__ = [
    "NOT_REPORTED",
    "Agreement",
    "LedgerQueries",
    "ProbeRecord",
    "Totals",
    "WinRate",
]

NOT_REPORTED = "not reported"


@dataclass(frozen=True, slots=True)
class Totals:
    """Tokens and cost of a run's dispatches; None means "not reported", never zero.

    A figure is None unless *every* dispatch of the run reported it, and also when the run had
    no dispatch at all (pull-request seats, say): a sum over partial reports would understate
    the cost while looking exact, and nothing here estimates.
    """

    tokens: int | None
    cost_usd: float | None
    dispatches: int

    def as_payload(self) -> dict[str, Any]:
        """The certificate's ``totals``: numbers, or the string "not reported"."""
        return {
            "tokens": NOT_REPORTED if self.tokens is None else self.tokens,
            "cost_usd": NOT_REPORTED if self.cost_usd is None else self.cost_usd,
        }

    def as_role_payload(self) -> dict[str, Any]:
        """One role's entry of ``totals.by_role``: the figures and how many dispatches."""
        return {**self.as_payload(), "dispatches": self.dispatches}


class WinRate(NamedTuple):
    """Decided runs won and decided runs taken part in; ``rate`` is None before any."""

    wins: int
    runs: int

    @property
    def rate(self) -> float | None:
        return self.wins / self.runs if self.runs else None


class Agreement(NamedTuple):
    """Judge cells whose pass/fail call matched the decided outcome, out of those decided."""

    agree: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.agree / self.total if self.total else None


class ProbeRecord(NamedTuple):
    """The probes of one seat or family, by what they showed."""

    cheated: int
    flagged: int
    failed_honestly: int
    no_result: int

    @property
    def probes(self) -> int:
        """The probes that showed a behaviour (a seat that did not finish showed none)."""
        return self.cheated + self.flagged + self.failed_honestly

    def text(self) -> str:
        if not self.probes:
            return "not probed"
        return (
            f"{self.cheated}/{self.probes} cheated, {self.flagged} flagged, "
            f"{self.failed_honestly} failed honestly"
        )


class LedgerQueries:
    """The ledger's read-only questions; :class:`~pytest_loopcontract.contest.ledger.Ledger`
    inherits them and supplies the connection."""

    _db: sqlite3.Connection

    def totals(self, run_id: str, *, upto_seq: int | None = None) -> Totals:
        """Tokens and cost over the run's dispatches (None = not reported; see :class:`Totals`).

        ``upto_seq`` limits the sum to rows at or before that place in the chain (a
        certificate's totals are checked against the chain head it was issued on).
        """
        sql = (
            "SELECT count(*), count(tokens), sum(tokens), count(cost_usd) FROM rows "
            "WHERE run_id = ? AND kind = 'dispatch' AND seq <= ?"
        )
        limit = MAX_TOKENS if upto_seq is None else upto_seq
        n, n_tokens, tokens, n_cost = self._db.execute(sql, (run_id, limit)).fetchone()
        cost: float | None = None
        if n and n_cost == n:
            # fsum: the total must not depend on the order the rows come back in.
            cost = math.fsum(
                float(r[0])
                for r in self._db.execute(
                    "SELECT cost_usd FROM rows WHERE run_id = ? AND kind = 'dispatch' AND seq <= ?",
                    (run_id, limit),
                )
            )
        return Totals(
            tokens=int(tokens) if n and n_tokens == n else None,
            cost_usd=cost,
            dispatches=int(n),
        )

    def totals_payload(self, run_id: str, *, upto_seq: int | None = None) -> dict[str, Any]:
        """The run's spend as the certificate and the result document state it: the run's
        reported tokens and cost ("not reported" unless every dispatch reported), and
        ``by_role``, the same per role with the dispatch count, so a role that reported
        nothing is named instead of hiding what the others reported."""
        return {
            **self.totals(run_id, upto_seq=upto_seq).as_payload(),
            "by_role": {
                role: figures.as_role_payload()
                for role, figures in self.role_totals(run_id, upto_seq=upto_seq).items()
            },
        }

    def role_totals(self, run_id: str, *, upto_seq: int | None = None) -> dict[str, Totals]:
        """:meth:`totals` per dispatch role (``candidate``, ``judge``), in role order.

        Why beside the run's totals: one judge that reports nothing makes the run's figure
        "not reported"; per role, the candidates' reported spend still shows, and which role
        did not report is named rather than hidden in one "not reported"."""
        limit = MAX_TOKENS if upto_seq is None else upto_seq
        by_role: dict[str, list[tuple[Any, Any]]] = {}
        for payload, tokens, cost in self._db.execute(
            "SELECT payload, tokens, cost_usd FROM rows "
            "WHERE run_id = ? AND kind = 'dispatch' AND seq <= ? ORDER BY seq",
            (run_id, limit),
        ):
            role = str(_payload(payload).get("role") or "unknown")
            by_role.setdefault(role, []).append((tokens, cost))
        out: dict[str, Totals] = {}
        for role in sorted(by_role):
            figures = by_role[role]
            tokens_ok = all(t is not None for t, _ in figures)
            cost_ok = all(c is not None for _, c in figures)
            out[role] = Totals(
                tokens=sum(int(t) for t, _ in figures) if tokens_ok else None,
                cost_usd=math.fsum(float(c) for _, c in figures) if cost_ok else None,
                dispatches=len(figures),
            )
        return out

    def _decisions(self) -> dict[str, tuple[str | None, str | None, dict[str, Any]]]:
        """Each run's latest decision: ``run_id -> (winner seat, winner family, payload)``."""
        latest: dict[str, tuple[str | None, str | None, dict[str, Any]]] = {}
        for run_id, seat, family, payload in self._db.execute(
            "SELECT run_id, seat, family, payload FROM rows WHERE kind = 'decision' ORDER BY seq"
        ):
            latest[run_id] = (seat, family, _payload(payload))
        return latest

    def win_rate(self, *, seat: str | None = None, family: str | None = None) -> WinRate:
        """Decided runs a seat (or any seat of a family) won, out of decided runs it was in.

        "In" means it has an outcome row in the run; a run counts once it has a decision.
        """
        if (seat is None) == (family is None):
            raise LedgerError("win_rate needs exactly one of seat= or family=")
        column, value = ("seat", seat) if seat is not None else ("family", family)
        joined = {
            str(r[0])
            for r in self._db.execute(
                f"SELECT DISTINCT run_id FROM rows WHERE kind = 'outcome' AND {column} = ?",
                (value,),
            )
        }
        decisions = self._decisions()
        decided = joined & decisions.keys()
        index = 0 if seat is not None else 1
        wins = sum(1 for run in decided if decisions[run][index] == value)
        return WinRate(wins=wins, runs=len(decided))

    def probe_record(self, *, seat: str | None = None, family: str | None = None) -> ProbeRecord:
        """How the probes of a seat (or of every seat of a family) came out."""
        if (seat is None) == (family is None):
            raise LedgerError("probe_record needs exactly one of seat= or family=")
        column, value = ("seat", seat) if seat is not None else ("family", family)
        counts = dict.fromkeys(PROBE_RESULTS, 0)
        for (payload,) in self._db.execute(
            f"SELECT payload FROM rows WHERE kind = 'probe' AND {column} = ?", (value,)
        ):
            result = _payload(payload).get("result")
            if result in counts:
                counts[result] += 1
        return ProbeRecord(**counts)

    def family_agreement(self, family: str) -> Agreement:
        """How often judges of ``family`` called pass/fail the way the run was decided.

        For calibration: every ``score`` row by a judge of the family whose run has a decision
        that names the cell's target in ``outcomes`` counts; it agrees when ``call`` equals
        that outcome. Cells of undecided runs, or targets the decision does not name, are left
        out rather than guessed.
        """
        decisions = self._decisions()
        agree = total = 0
        for run_id, payload in self._db.execute(
            "SELECT run_id, payload FROM rows WHERE kind = 'score' AND family = ?", (family,)
        ):
            decision = decisions.get(str(run_id))
            if decision is None:
                continue
            outcomes = decision[2].get("outcomes")
            data = _payload(payload)
            if not isinstance(outcomes, dict) or data.get("target") not in outcomes:
                continue
            total += 1
            agree += outcomes[data["target"]] == data.get("call")
        return Agreement(agree=agree, total=total)


def _payload(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
