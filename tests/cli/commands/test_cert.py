"""`loop-contract cert verify` on a real ledger, key and token: valid, forged, key missing."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.contest import certificate
from testing.ledgers import make_ledger
from testing.repos import run_cli


def test_cert_verify_valid_and_tampered(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    ledger = make_ledger(path)
    ledger.append(
        "decision",
        run_id="r1",
        contract_id="c",
        family="vendor-a",
        payload={"winner": "seat-a", "outcomes": {"seat-a": "pass"}},
    )
    key_path = tmp_path / "cert.key"
    key = certificate.load_or_create_key(key_path)
    payload = certificate.build_payload(
        ledger,
        run_id="r1",
        contract_id="c",
        contract_sha256="0" * 64,
        nonce="n",
        verdict="pass",
        exit_code=0,
        winner="seat-a",
    )
    token = certificate.issue(payload, key)
    ledger.close()
    valid = run_cli(
        tmp_path, "cert", "verify", token, "--key", str(key_path), "--ledger", str(path)
    )
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout.strip() == "VALID"
    body, signature = token.split(".")
    forged = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + signature
    bad = run_cli(tmp_path, "cert", "verify", forged, "--key", str(key_path), "--json")
    assert bad.returncode == 25
    assert bad.json()["valid"] is False
    missing = run_cli(tmp_path, "cert", "verify", token, "--key", str(tmp_path / "nokey"))
    assert missing.returncode == 2
    assert not (tmp_path / "nokey").exists()  # verifying never creates a key
