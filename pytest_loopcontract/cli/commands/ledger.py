"""``loop-contract ledger verify``: does every row of the contest ledger still seal?"""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.contest.ledger import verify_file
from pytest_loopcontract.contest.ledger.integrity import VerifyResult
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.plural import plural
from pytest_loopcontract.verdict import EXIT_TAMPER

__all__ = ["verify"]


def verify(ledger: str, *, as_json: bool = False) -> int:
    """0 when the hash chain holds; 25 naming the first row that does not seal."""
    path = Path(ledger)
    if not path.exists():
        raise CommandError(f"no ledger at {path} (a contest run creates it)")
    result = verify_file(path)
    if as_json:
        print_json(
            {
                "ok": result.ok,
                "rows_checked": result.rows_checked,
                "first_bad_seq": result.first_bad_seq,
                "reason": result.reason,
                "head": result.head,
                "warnings": list(result.warnings),
            }
        )
    else:
        _print_text(path, result)
    return 0 if result.ok else EXIT_TAMPER


def _print_text(path: Path, result: VerifyResult) -> None:
    if result.ok:
        rows = result.rows_checked
        seal = "seals" if rows == 1 else "seal"
        print(f"{path}: {plural(rows, 'row')} {seal}; head {result.head}")
    else:
        where = f"row {result.first_bad_seq}" if result.first_bad_seq is not None else "file"
        print(f"{path}: BROKEN at {where}: {result.reason}")
    for warning in result.warnings:
        print(f"  warning: {warning}")
