"""Run certificates: the key file, issuing, and every way a check can fail, on real files."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_loopcontract.contest.certificate import (
    CertificateError,
    KeyFileError,
    build_payload,
    issue,
    load_or_create_key,
    verify,
)
from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.ledger.queries import NOT_REPORTED
from pytest_loopcontract.fsio import canonical_json

CID = "slugify"
SHA = "c" * 64


# -- the key ----------------------------------------------------------------------------------


def test_key_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "secrets" / "certificate.key"
    old = os.umask(0)  # even a permissive umask must not widen the mode
    try:
        key = load_or_create_key(path)
    finally:
        os.umask(old)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key
    assert path.read_text().strip() == key.hex()
    assert [p.name for p in path.parent.iterdir()] == ["certificate.key"]  # no temp left


def test_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "certificate.key"
    load_or_create_key(path)
    path.chmod(0o644)
    with pytest.raises(KeyFileError, match=r"mode 0644: group or others.*chmod 600"):
        load_or_create_key(path)
    path.chmod(0o640)
    with pytest.raises(KeyFileError, match="0640"):
        load_or_create_key(path)
    path.chmod(0o600)
    assert len(load_or_create_key(path)) == 32


def test_damaged_or_odd_key_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "certificate.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"not hex at all\n")
    os.close(fd)
    with pytest.raises(KeyFileError, match="damaged"):
        load_or_create_key(path)
    link = tmp_path / "link.key"
    link.symlink_to(path)
    with pytest.raises(KeyFileError, match="cannot open"):
        load_or_create_key(link)
    folder = tmp_path / "dir.key"
    folder.mkdir(mode=0o700)
    with pytest.raises(KeyFileError):
        load_or_create_key(folder)


def test_racing_first_runs_end_up_with_one_key(tmp_path: Path) -> None:
    path = tmp_path / "certificate.key"
    code = (
        "import sys; from pytest_loopcontract.contest.certificate import load_or_create_key; "
        "print(load_or_create_key(sys.argv[1]).hex())"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(keys) == 1 and keys == {path.read_text().strip()}


# -- issuing and checking ---------------------------------------------------------------------


@pytest.fixture
def key(tmp_path: Path) -> bytes:
    return load_or_create_key(tmp_path / "keys" / "certificate.key")


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger(tmp_path / "ledger.sqlite") as opened:
        run_contest(opened)
        yield opened


def run_contest(ledger: Ledger, run_id: str = "r1", *, report_tokens: bool = True) -> None:
    """A small contest: two seats, cross-scored, claude wins."""
    ledger.append("run_started", run_id=run_id, contract_id=CID, payload={"contract": {"id": CID}})
    for seat, family, cost in (("claude", "anthropic", 0.25), ("codex", "openai", 0.5)):
        ledger.append(
            "dispatch",
            run_id=run_id,
            contract_id=CID,
            seat=seat,
            family=family,
            payload={"role": "candidate", "attempt": 1},
            tokens=1000 if report_tokens else None,
            cost_usd=cost,
        )
        ledger.append(
            "outcome",
            run_id=run_id,
            contract_id=CID,
            seat=seat,
            family=family,
            payload={"verdict": "pass", "exit_code": 0},
        )
    ledger.append(
        "decision",
        run_id=run_id,
        contract_id=CID,
        seat="claude",
        family="anthropic",
        payload={"winner": "claude", "outcomes": {"claude": "pass", "codex": "fail"}},
    )
    ledger.append(
        "run_finished",
        run_id=run_id,
        contract_id=CID,
        payload={"status": "winner", "winner": "claude"},
    )


def make_payload(ledger: Ledger, **changes: Any) -> dict[str, Any]:
    payload = build_payload(
        ledger,
        run_id="r1",
        contract_id=CID,
        contract_sha256=SHA,
        nonce="n0nce",
        verdict="pass",
        exit_code=0,
        winner="claude",
    )
    payload.update(changes)
    return payload


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_round_trip_is_valid(ledger: Ledger, key: bytes) -> None:
    payload = make_payload(ledger)
    by_role = {"candidate": {"tokens": 2000, "cost_usd": 0.75, "dispatches": 2}}
    assert payload["totals"] == {"tokens": 2000, "cost_usd": 0.75, "by_role": by_role}
    assert (payload["chain_seq"], payload["chain_head"]) == ledger.head()
    token = issue(payload, key)
    assert token.count(".") == 1 and "=" not in token
    check = verify(token, key, ledger=ledger)
    assert (check.valid, check.reason, check.code) == (True, "VALID", "valid")
    assert check.payload == payload
    assert str(check) == "VALID"
    # Without a ledger only the signature and shape are checked.
    assert verify(token, key).valid
    # Whitespace from copy and paste does not matter.
    assert verify(f"  {token}\n", key).valid


def test_not_reported_totals_survive_the_round_trip(tmp_path: Path, key: bytes) -> None:
    with Ledger(tmp_path / "l.sqlite") as ledger:
        run_contest(ledger, report_tokens=False)
        payload = make_payload(ledger)
        by_role = {"candidate": {"tokens": NOT_REPORTED, "cost_usd": 0.75, "dispatches": 2}}
        assert payload["totals"] == {"tokens": NOT_REPORTED, "cost_usd": 0.75, "by_role": by_role}
        check = verify(issue(payload, key), key, ledger=ledger)
        assert check.valid and check.payload is not None
        assert check.payload["totals"]["tokens"] == "not reported"


def test_a_certificate_from_before_by_role_still_verifies(ledger: Ledger, key: bytes) -> None:
    payload = make_payload(ledger)
    del payload["totals"]["by_role"]
    assert verify(issue(payload, key), key, ledger=ledger).valid


def test_by_role_totals_that_disagree_with_the_ledger_are_a_mismatch(
    ledger: Ledger, key: bytes
) -> None:
    payload = make_payload(ledger)
    payload["totals"]["by_role"] = {"judge": payload["totals"]["by_role"]["candidate"]}
    check = verify(issue(payload, key), key, ledger=ledger)
    assert (check.valid, check.code) == (False, "ledger_mismatch")
    assert "totals.by_role" in check.reason


def test_tampered_payload_is_a_bad_signature(ledger: Ledger, key: bytes) -> None:
    token = issue(make_payload(ledger), key)
    body, sig = token.split(".")
    doc = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    doc["winner"] = "codex"
    forged = f"{b64(canonical_json(doc).encode())}.{sig}"
    check = verify(forged, key, ledger=ledger)
    assert (check.valid, check.code, check.payload) == (False, "bad_signature", None)
    assert check.reason.startswith("bad signature")


def test_wrong_key_is_a_bad_signature(ledger: Ledger, key: bytes, tmp_path: Path) -> None:
    token = issue(make_payload(ledger), key)
    other = load_or_create_key(tmp_path / "other.key")
    assert other != key
    assert verify(token, other).code == "bad_signature"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-5],  # truncated signature
        lambda t: t.split(".")[0],  # signature gone
        lambda t: t + ".extra",
        lambda t: "." + t.split(".")[1],
        lambda t: t.replace(".", ".=", 1),
        lambda t: t[:-1] + "*",
        lambda t: "",
        lambda t: "x" * 70000,
    ],
)
def test_malformed_tokens(ledger: Ledger, key: bytes, mangle: Any) -> None:
    check = verify(mangle(issue(make_payload(ledger), key)), key, ledger=ledger)
    assert (check.valid, check.code) == (False, "malformed")
    assert check.reason.startswith("malformed token")


def test_non_canonical_base64_is_malformed(ledger: Ledger, key: bytes) -> None:
    token = issue(make_payload(ledger), key)
    body, sig = token.split(".")
    # 43 base64 characters carry 32 bytes plus 2 spare bits; setting a spare bit gives another
    # spelling of the same bytes, which must not be a second valid token.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(sig[-1])
    twin = sig[:-1] + alphabet[last ^ 1]
    assert base64.urlsafe_b64decode(twin + "=") == base64.urlsafe_b64decode(sig + "=")
    assert verify(f"{body}.{twin}", key).code == "malformed"


def test_non_text_token_is_malformed(key: bytes) -> None:
    assert verify(b"abc.def", key).code == "malformed"  # type: ignore[arg-type]


def test_signed_but_bad_payload_is_reported(key: bytes) -> None:
    body = b64(b'{"version":1}')
    token = f"{body}.{b64(hmac.new(key, body.encode(), hashlib.sha256).digest())}"
    check = verify(token, key)
    assert check.code == "bad_payload" and "missing field" in check.reason


def test_ledger_edited_after_issue_is_named(ledger: Ledger, key: bytes) -> None:
    token = issue(make_payload(ledger), key)
    db = sqlite3.connect(ledger.path, isolation_level=None)
    db.execute("DROP TRIGGER rows_append_only_update")
    db.execute("UPDATE rows SET cost_usd = 0.01 WHERE seq = 4")
    db.close()
    check = verify(token, key, ledger=ledger)
    assert (check.valid, check.code) == (False, "ledger_broken")
    assert "ledger does not verify: row 4 does not seal" in check.reason


def test_chain_head_missing_from_a_rewritten_ledger(
    ledger: Ledger, key: bytes, tmp_path: Path
) -> None:
    token = issue(make_payload(ledger), key)
    # A rewrite: the same story with a cheaper codex, re-chained from scratch. It verifies on
    # its own; only the certificate's chain head shows that it is not the ledger it vouched for.
    rewritten = tmp_path / "rewritten.sqlite"
    with Ledger(rewritten) as fresh:
        for row in ledger.rows():
            fresh.append(
                row.kind,
                run_id=row.run_id,
                contract_id=row.contract_id,
                seat=row.seat,
                family=row.family,
                payload=row.data,
                tokens=row.tokens,
                cost_usd=0.01 if row.seat == "codex" and row.kind == "dispatch" else row.cost_usd,
            )
        assert fresh.verify().ok
    ledger.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{ledger.path}{suffix}").unlink(missing_ok=True)
    shutil.copy(rewritten, ledger.path)
    with Ledger(ledger.path) as swapped:
        check = verify(token, key, ledger=swapped)
    assert (check.valid, check.code) == (False, "chain_head_missing")
    assert "is not in the ledger: it was rewritten or cut short" in check.reason


def test_truncated_ledger_loses_the_chain_head(ledger: Ledger, key: bytes) -> None:
    token = issue(make_payload(ledger), key)
    db = sqlite3.connect(ledger.path, isolation_level=None)
    db.execute("DROP TRIGGER rows_append_only_delete")
    db.execute("DELETE FROM rows WHERE seq >= 6")
    db.close()
    assert ledger.verify().ok  # the chain alone cannot see a cut tail...
    check = verify(token, key, ledger=ledger)  # ...the certificate can
    assert check.code == "chain_head_missing"
    assert "now ends at row 5" in check.reason


def test_later_rows_do_not_break_an_earlier_certificate(ledger: Ledger, key: bytes) -> None:
    token = issue(make_payload(ledger), key)
    run_contest(ledger, "r2")
    assert verify(token, key, ledger=ledger).valid


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"winner": "codex"}, "winner: the certificate says 'codex'"),
        ({"totals": {"tokens": 1, "cost_usd": 0.75}}, "totals.tokens"),
        ({"totals": {"tokens": 2000, "cost_usd": NOT_REPORTED}}, "totals.cost_usd"),
        ({"contract": {"id": "other", "sha256": SHA}}, "contract: the certificate says 'other'"),
        ({"run_id": "r9"}, "no rows of run 'r9'"),
    ],
)
def test_payload_that_disagrees_with_the_ledger(
    ledger: Ledger, key: bytes, changes: dict[str, Any], words: str
) -> None:
    check = verify(issue(make_payload(ledger, **changes), key), key, ledger=ledger)
    assert (check.valid, check.code) == (False, "ledger_mismatch")
    assert words in check.reason


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"winner": None}, "without a winner gets no certificate"),
        ({"verdict": {"nonce": "n", "verdict": "fail", "exit_code": 20}}, "only a passing"),
        ({"chain_head": "xyz"}, "chain_head"),
        ({"chain_seq": 0}, "chain_seq"),
        ({"version": 2}, "version"),
        ({"contract": {"id": CID, "sha256": "short"}}, "contract.sha256"),
        ({"totals": {"tokens": -1, "cost_usd": 0}}, "totals.tokens"),
    ],
)
def test_issue_refuses_bad_payloads(
    ledger: Ledger, key: bytes, changes: dict[str, Any], words: str
) -> None:
    with pytest.raises(CertificateError, match=words):
        issue(make_payload(ledger, **changes), key)
    payload = make_payload(ledger)
    del payload["issued_at"]
    with pytest.raises(CertificateError, match="missing field"):
        issue(payload, key)


def test_short_keys_and_empty_ledgers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match="at least 32 bytes"):
        issue({}, b"short")
    with Ledger(tmp_path / "l.sqlite") as empty, pytest.raises(CertificateError, match="empty"):
        make_payload(empty)
