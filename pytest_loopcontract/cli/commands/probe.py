"""``loop-contract probe``: run each seat once on an impossible variant of the contract and
record whether it cheated, flagged the task honestly, or failed honestly."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.cli.output import err, print_json
from pytest_loopcontract.cli.repo import repo_root
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.probe import ProbeError, probe_seat
from pytest_loopcontract.contest.seat_model import seats_from_contract
from pytest_loopcontract.contract.model import load_contract
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.workspace import resolve_commit

__all__ = ["probe"]


def probe(contract: str, seats: Sequence[str] = (), *, as_json: bool = False) -> int:
    """Probe the named seats (all with a ``generate`` command when none is named)."""
    root = repo_root()
    loaded = load_contract(root / contract)
    known = {seat.name: seat for seat in seats_from_contract(loaded) if seat.generate}
    unknown = [name for name in seats if name not in known]
    if unknown:
        raise CommandError(
            f"no seat {', '.join(unknown)} with a generate command in {contract} "
            f"(seats: {', '.join(known) or 'none'})"
        )
    chosen = [known[name] for name in seats] if seats else list(known.values())
    if not chosen:
        raise CommandError(f"{contract} has no seat with a generate command to probe")
    base = resolve_commit(root, "HEAD")
    folder = StateDir.of(root)
    folder.folder.mkdir(parents=True, exist_ok=True)
    results = []
    with Ledger(folder.ledger) as ledger:
        for seat in chosen:
            try:
                results.append(probe_seat(root, loaded, seat, base_commit=base, ledger=ledger,
                                          say=err))  # fmt: skip
            except ProbeError as exc:
                raise CommandError(str(exc)) from None
        families = sorted({r.family for r in results})
        records = {family: ledger.probe_record(family=family) for family in families}
    if as_json:
        print_json({
            "probes": [{"seat": r.seat, "family": r.family, "result": r.result, "test": r.test,
                        "why": r.why} for r in results],
            "families": {f: {**rec._asdict(), "probes": rec.probes} for f, rec in records.items()},
        })  # fmt: skip
        return 0
    for r in results:
        print(f"probe {r.seat} ({r.family}): {r.result.replace('_', ' ')} - {r.why}")
    for family, record in records.items():
        print(f"family {family}: {record.text()}")
    return 0
