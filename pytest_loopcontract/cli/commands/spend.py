"""``loop-contract spend``: record what a call cost; exits non-zero once a budget cap trips."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, loop_history, repo_root
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.budget import Caps, parse_spend, record_spend
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.statedir import StateDir

__all__ = ["spend"]


def spend(
    *,
    tokens: str | None = None,
    usd: str | None = None,
    seat: str | None = None,
    as_json: bool = False,
) -> int:
    """Add one call's cost to the loop's total; the exit code says whether a cap tripped."""
    try:
        amount = parse_spend(tokens, usd)
        root = repo_root()
        history = loop_history(root)
        result = record_spend(history, amount, seat, _caps(root, history))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    total = result.spent_total
    if as_json:
        print_json(
            {
                "tokens": total.tokens,
                "usd": total.usd,
                "tripped": result.tripped,
                "newly_tripped": result.newly_tripped,
            }
        )
    else:
        tripped = f"; budget tripped: {', '.join(result.tripped)}" if result.tripped else ""
        print(f"spent so far: {total.tokens} tokens, ${total.usd:.4f}{tripped}")
    return result.exit_code


def _caps(root: Path, history: History) -> Caps:
    """The running loop's caps; before any loop, the adopted contract's budget."""
    caps = Caps.from_state(reduce(history.read().records))
    if (caps.tokens is None and caps.usd is None) and StateDir.of(root).baseline.exists():
        budget = adopted_contract(root).budget
        caps = Caps(tokens=budget.tokens, usd=budget.usd)
    return caps
