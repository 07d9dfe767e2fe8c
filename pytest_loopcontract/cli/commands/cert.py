"""``loop-contract cert verify``: is a run certificate genuine (and still backed by the ledger)?"""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.contest import certificate
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.verdict import EXIT_TAMPER

__all__ = ["verify"]


def verify(token: str, *, key: str, ledger: str | None = None, as_json: bool = False) -> int:
    """0 and VALID, or 25 and the first mismatch."""
    key_path = Path(key)
    if not key_path.exists():
        # never create a key here: a fresh key would make every real certificate look forged
        raise CommandError(f"no certificate key at {key_path}; pass --key PATH")
    secret = certificate.load_or_create_key(key_path)
    opened = Ledger(ledger, create=False) if ledger else None
    try:
        check = certificate.verify(token.strip(), secret, ledger=opened)
    finally:
        if opened is not None:
            opened.close()
    if as_json:
        print_json(
            {
                "valid": check.valid,
                "code": check.code,
                "reason": check.reason,
                "payload": check.payload,
            }
        )
    else:
        print(check.reason)
    return 0 if check.valid else EXIT_TAMPER
