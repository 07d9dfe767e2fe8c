"""The step-down bracket: recorded scores in, a final two and a proposed winner out.

Pure (stdlib, no I/O, nothing else from the package) so that the way a contest narrowed its
field can be replayed from the ledger and argued about line by line.

Why it works this way:

* **Matrix failers leave first.** A candidate that failed the judged gate is not "ranked low",
  it is out; it never occupies a place that the cut would otherwise give to a passer.
* **Small cuts, recorded.** Each round removes a few (two by default, or half the field) and
  writes down the field in, the field out, the cut line and which key decided the cut, so a
  reviewer sees exactly where each candidate left and why.
* **Always a final two.** The cut never takes the field below ``final`` (two by default), so a
  human always sees the best candidate next to its closest rival. The top-ranked of the final
  two is only the *proposed* winner: nothing is merged until the human gate approves it.
* **Deterministic ties.** Equal scores go to fewer tokens, then shorter generation time
  (unknown sorts after known: a seat that did not report its cost earns no benefit of the
  doubt), then the candidate label. Never randomness: the same inputs give the same bracket.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BracketResult",
    "Cut",
    "Entrant",
    "Round",
    "next_round",
    "rank",
    "run_bracket",
]

Cut = int | Literal["halve"]
"""How many leave per round: a fixed number, or ``"halve"`` (half the field, rounded down)."""


@dataclass(frozen=True)
class Entrant:
    """One candidate as the bracket sees it.

    ``score`` is the matrix's overall score (``None`` if it has none, which ranks last);
    ``tokens`` and ``seconds`` are what producing it cost, used only to break ties.
    """

    label: str
    score: float | None
    passed_matrix: bool
    tokens: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if not self.label:
            raise ValueError("an entrant needs a label")
        if self.score is not None and not _finite(self.score):
            raise ValueError(f"{self.label}: score must be finite, got {self.score!r}")
        if self.tokens is not None and (
            isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 0
        ):
            raise ValueError(f"{self.label}: tokens must be a non-negative integer")
        if self.seconds is not None and (not _finite(self.seconds) or self.seconds < 0):
            raise ValueError(f"{self.label}: seconds must be finite and >= 0")


@dataclass(frozen=True)
class Round:
    """One step of the bracket, as the ledger records it.

    Round 0 is the screen (matrix failers leave; ``cut_line`` is ``None``); rounds 1.. are
    cuts. ``field_in`` and ``field_out`` are in rank order. ``cut_line`` is the score of the
    last entrant kept; ``decided_by`` names the key that separated the last kept from the first
    eliminated (``score``, ``tokens``, ``seconds`` or ``label``; ``matrix`` for a screen that
    removed someone), so a cut made by a tie-break is visible as one.
    """

    number: int
    field_in: tuple[str, ...]
    field_out: tuple[str, ...]
    eliminated: tuple[str, ...]
    cut_line: float | None
    decided_by: str | None
    reason: str


@dataclass(frozen=True)
class BracketResult:
    """The screen, the cut rounds, the finalists (rank order) and the proposed winner.

    ``proposed_winner`` is ``None`` only when nobody passed the matrix. It is a proposal: the
    human gate still has to approve it. ``decided_by`` says which key put it above the other
    finalist (``None`` for a lone survivor or no winner).
    """

    screen: Round
    rounds: tuple[Round, ...]
    finalists: tuple[str, ...]
    proposed_winner: str | None
    decided_by: str | None
    reason: str


def rank(entrants: Iterable[Entrant]) -> list[Entrant]:
    """Best first: higher score, then fewer tokens, then fewer seconds, then label; unknown
    values after known ones at every step. Independent of input order."""
    return sorted(entrants, key=_rank_key)


def next_round(entrants: Sequence[Entrant], *, number: int, cut: Cut = 2, final: int = 2) -> Round:
    """One cut: rank the field and remove ``cut`` entrants (or half, rounded down, for
    ``"halve"``), never leaving fewer than ``final``.

    Exposed on its own so that an orchestrator that re-scores between rounds can drive the
    bracket one round at a time; :func:`run_bracket` calls it with the scores fixed.
    """
    _check_params(cut, final)
    _check_unique(entrants)
    ranked = rank(entrants)
    size = len(ranked)
    wanted = size // 2 if cut == "halve" else cut
    leave = max(0, min(wanted, size - final))
    kept, gone = ranked[: size - leave], ranked[size - leave :]
    labels_in = tuple(e.label for e in ranked)
    if not gone:
        return Round(number, labels_in, labels_in, (), None, None, "field already at the final")
    last, first_out = kept[-1], gone[0]
    how = "half the field" if cut == "halve" else f"cut {cut}"
    if leave < wanted:
        how += f", capped to keep a final {final}"
    return Round(
        number=number,
        field_in=labels_in,
        field_out=tuple(e.label for e in kept),
        eliminated=tuple(e.label for e in gone),
        cut_line=last.score,
        decided_by=_decided_by(last, first_out),
        reason=f"{how}: {leave} of {size} leave",
    )


def run_bracket(entrants: Iterable[Entrant], *, cut: Cut = 2, final: int = 2) -> BracketResult:
    """Screen out matrix failers, cut until ``final`` remain, propose the top finalist.

    With the scores fixed every round ranks the same way, so the rounds change nothing about
    who reaches the final; they exist to record, step by step, where each candidate left.
    A lone survivor of the screen wins without rounds; with no survivor there is no winner.
    """
    _check_params(cut, final)
    field = list(entrants)
    _check_unique(field)
    screen, passers = _screen(field)
    if not passers:
        reason = "no candidate passed the validity matrix" if field else "no candidates entered"
        return BracketResult(screen, (), (), None, None, reason)
    if len(passers) == 1:
        only = passers[0].label
        return BracketResult(
            screen=screen,
            rounds=(),
            finalists=(only,),
            proposed_winner=only,
            decided_by=None,
            reason=f"{only} is the only candidate that passed the validity matrix; "
            "awaiting the human gate",
        )
    rounds, current = _rounds(passers, cut=cut, final=final)
    finalists = rank(current)
    winner = finalists[0]
    decided = _decided_by(winner, finalists[1]) if len(finalists) > 1 else None
    return BracketResult(
        screen=screen,
        rounds=tuple(rounds),
        finalists=tuple(e.label for e in finalists),
        proposed_winner=winner.label,
        decided_by=decided,
        reason=(
            f"{winner.label} ranks first of the final {len(finalists)} "
            f"(by {decided}); awaiting the human gate"
            if decided
            else f"{winner.label} is the only finalist; awaiting the human gate"
        ),
    )


def _screen(field: Sequence[Entrant]) -> tuple[Round, list[Entrant]]:
    """Round 0: the matrix failers leave; the passers, in rank order, go on."""
    ranked_all = rank(field)
    passers = [e for e in ranked_all if e.passed_matrix]
    failers = tuple(e.label for e in ranked_all if not e.passed_matrix)
    screen = Round(
        number=0,
        field_in=tuple(e.label for e in ranked_all),
        field_out=tuple(e.label for e in passers),
        eliminated=failers,
        cut_line=None,
        decided_by="matrix" if failers else None,
        reason=f"{len(failers)} failed the validity matrix" if failers else "all passed",
    )
    return screen, passers


def _rounds(passers: list[Entrant], *, cut: Cut, final: int) -> tuple[list[Round], list[Entrant]]:
    """Cut rounds until ``final`` remain: the rounds, and who is left."""
    rounds: list[Round] = []
    by_label = {e.label: e for e in passers}
    current = passers
    while len(current) > final:
        step = next_round(current, number=len(rounds) + 1, cut=cut, final=final)
        rounds.append(step)
        current = [by_label[label] for label in step.field_out]
    return rounds, current


# --------------------------------------------------------------------------------------------


def _rank_key(e: Entrant) -> tuple[tuple[bool, float], tuple[bool, float], tuple[bool, float], str]:
    return (
        (e.score is None, -(e.score or 0.0)),
        (e.tokens is None, float(e.tokens or 0)),
        (e.seconds is None, e.seconds or 0.0),
        e.label,
    )


def _decided_by(kept: Entrant, out: Entrant) -> str:
    a, b = _rank_key(kept), _rank_key(out)
    for name, x, y in zip(("score", "tokens", "seconds"), a[:3], b[:3], strict=True):
        if x != y:
            return name
    return "label"


def _finite(value: float) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _check_params(cut: Cut, final: int) -> None:
    if cut != "halve" and (isinstance(cut, bool) or not isinstance(cut, int) or cut < 1):
        raise ValueError(f"cut must be a positive integer or 'halve', got {cut!r}")
    if isinstance(final, bool) or not isinstance(final, int) or final < 1:
        raise ValueError(f"final must be a positive integer, got {final!r}")


def _check_unique(entrants: Iterable[Entrant]) -> None:
    seen: set[str] = set()
    for e in entrants:
        if e.label in seen:
            raise ValueError(f"two entrants are labelled {e.label!r}")
        seen.add(e.label)
