"""Run certificates: a signed statement that a run picked this winner on this contract.

Why: the ledger says what happened, but a ledger is a file anyone with write access can
rewrite wholesale (a fresh, self-consistent chain). A certificate pins one run's result to the
ledger's chain head at the moment it was issued, under a key only the issuer has. Later,
``loop-contract cert verify TOKEN`` answers VALID, or names the first thing that does not match.

Token: ``base64url(canonical JSON payload) + "." + base64url(HMAC-SHA256(key, first part))``,
without ``=`` padding. The MAC covers the encoded first part exactly as sent, so checking it
never depends on re-serializing JSON; only canonical base64 is accepted, so one certificate has
one spelling.

Payload (version 1)::

    {
      "version": 1,
      "run_id": "r-2026-11-29-01",
      "contract": {"id": "slugify", "sha256": "<64 hex>"},
      "verdict": {"nonce": "<the winner's verification nonce>", "verdict": "pass",
                  "exit_code": 0},
      "winner": "claude",
      "totals": {"tokens": 123456 | "not reported", "cost_usd": 1.25 | "not reported",
                 "by_role": {"candidate": {"tokens": ..., "cost_usd": ..., "dispatches": 3},
                             "judge": {...}}},
      "chain_head": "<64 hex: the ledger's last row_hash when issued>",
      "chain_seq": 42,
      "issued_at": "2026-11-29T12:00:00.000000Z"
    }

``chain_seq`` is the row the head belongs to, so a check finds it by primary key.

Why HMAC and not a public-key signature: the standard library has no signatures, the issuer
and the checker are the same installation (or a CI job holding the same secret), and an HMAC
key is 32 random bytes in a file. That file is created once, mode 0600, and refused when group
or others can read it: a key others can read certifies nothing.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopcontract.contest.ledger import Ledger
from pytest_loopcontract.contest.ledger.queries import NOT_REPORTED
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import canonical_json, utc_stamp

__all__ = [
    "CERT_VERSION",
    "KEY_BYTES",
    "KEY_FILE",
    "CertCheck",
    "CertificateError",
    "KeyFileError",
    "build_payload",
    "issue",
    "load_or_create_key",
    "verify",
]

CERT_VERSION = 1
KEY_BYTES = 32
KEY_FILE = "certificate.key"
MAX_TOKEN_CHARS = 64 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_FIELDS = (
    "version",
    "run_id",
    "contract",
    "verdict",
    "winner",
    "totals",
    "chain_head",
    "chain_seq",
    "issued_at",
)


class CertificateError(LoopContractError):
    """A certificate cannot be issued, or a key cannot be used; the message says why."""


class KeyFileError(CertificateError):
    """The key file is unsafe or unreadable."""


@dataclass(frozen=True, slots=True)
class CertCheck:
    """The answer to "is this certificate good?".

    ``reason`` is ``"VALID"`` or the first mismatch in words; ``code`` is stable for machines:
    ``valid``, ``malformed``, ``bad_signature``, ``bad_payload``, ``ledger_broken``,
    ``chain_head_missing``, ``ledger_mismatch``. ``payload`` is set only once the signature
    is good: an unsigned payload is not evidence of anything.
    """

    valid: bool
    reason: str
    payload: dict[str, Any] | None
    code: str = "valid"

    def __str__(self) -> str:
        return self.reason


# -- the key ---------------------------------------------------------------------------------


def load_or_create_key(path: str | os.PathLike[str]) -> bytes:
    """Read the signing key at ``path``, creating it (32 random bytes, mode 0600) if absent.

    Creation is race-free: the key is written to a private temporary file (``O_CREAT |
    O_EXCL``, mode 0600), synced, then hard-linked into place, which fails if another process
    got there first; the loser then reads the winner's key. So the key file is either absent
    or complete, and two first runs never end up with two keys.
    """
    target = Path(path)
    try:
        return _read_key(target)
    except FileNotFoundError:
        pass
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    temp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # exact, whatever the umask
            os.write(fd, key.hex().encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        # FileExistsError: another process created it first, so use theirs.
        with contextlib.suppress(FileExistsError):
            os.link(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return _read_key(target)


def _read_key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise KeyFileError(f"cannot open certificate key {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"certificate key {path} is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise KeyFileError(
                f"certificate key {path} has mode {mode:04o}: group or others can access it, "
                f"so it cannot vouch for anything. Run `chmod 600 {path}` if only you ever had "
                "access; otherwise delete it so a new key is made (old certificates will then "
                "no longer verify)"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyFileError(
            f"certificate key {path} is damaged: expected {KEY_BYTES} bytes as hex on one line"
        )
    return key


# -- issuing ---------------------------------------------------------------------------------


def build_payload(
    ledger: Ledger,
    *,
    run_id: str,
    contract_id: str,
    contract_sha256: str,
    nonce: str,
    verdict: str,
    exit_code: int,
    winner: str,
    issued_at: str | None = None,
) -> dict[str, Any]:
    """The payload for ``run_id``'s winner, with totals and chain head read from the ledger.

    Why read them here: the totals must be the ledger's (reported figures only, "not reported"
    otherwise), and the chain head must be the row the ledger really ends on. The ledger is
    synced first, so the head the certificate names survives a power cut.
    """
    ledger.sync()
    seq, head = ledger.head()
    if seq == 0:
        raise CertificateError("the ledger is empty: there is no run to certify")
    return {
        "version": CERT_VERSION,
        "run_id": run_id,
        "contract": {"id": contract_id, "sha256": contract_sha256},
        "verdict": {"nonce": nonce, "verdict": verdict, "exit_code": exit_code},
        "winner": winner,
        "totals": ledger.totals_payload(run_id, upto_seq=seq),
        "chain_head": head,
        "chain_seq": seq,
        "issued_at": issued_at or utc_stamp(),
    }


def issue(payload: Mapping[str, Any], key: bytes) -> str:
    """Sign ``payload`` and return the token. Raises :class:`CertificateError` on a bad payload."""
    _check_key(key)
    doc = dict(payload)
    problem = _payload_problem(doc)
    if problem:
        raise CertificateError(f"cannot issue a certificate: {problem}")
    body = _b64encode(canonical_json(doc).encode("ascii"))
    return f"{body}.{_b64encode(_mac(key, body))}"


# -- checking --------------------------------------------------------------------------------


def verify(token: str, key: bytes, *, ledger: Ledger | None = None) -> CertCheck:
    """Check a token; with a ledger, also that the ledger still backs it. Never raises on input.

    Order, stopping at the first mismatch: the token's shape, the signature (constant-time),
    the payload's fields, then with a ledger: the ledger verifies, the chain head is still at
    its row, and the run's rows up to the head agree with the payload (contract, winner,
    totals).
    """
    _check_key(key)
    if not isinstance(token, str):
        return _malformed("a certificate token is text")
    token = token.strip()
    if len(token) > MAX_TOKEN_CHARS:
        return _malformed(f"longer than {MAX_TOKEN_CHARS} characters")
    parts = token.split(".")
    if len(parts) != 2 or not all(parts):
        return _malformed("expected two base64url parts joined by '.' (PAYLOAD.SIGNATURE)")
    body, sig_text = parts
    if not _B64URL.fullmatch(body) or not _B64URL.fullmatch(sig_text):
        return _malformed("a part is not unpadded base64url text")
    signature = _b64decode(sig_text)
    if signature is None or len(signature) != hashlib.sha256().digest_size:
        return _malformed("the signature part is not a 32-byte HMAC-SHA256 (truncated?)")
    if not hmac.compare_digest(_mac(key, body), signature):
        return CertCheck(
            False,
            "bad signature: the payload was altered, or it was signed with another key",
            None,
            "bad_signature",
        )
    raw = _b64decode(body)
    try:
        doc = json.loads(raw.decode("ascii")) if raw is not None else None
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return CertCheck(False, "bad payload: not a JSON object", None, "bad_payload")
    problem = _payload_problem(doc)
    if problem:
        return CertCheck(False, f"bad payload: {problem}", doc, "bad_payload")
    if ledger is not None:
        mismatch = _ledger_mismatch(doc, ledger)
        if mismatch is not None:
            return CertCheck(False, mismatch[1], doc, mismatch[0])
    return CertCheck(True, "VALID", doc, "valid")


def _ledger_mismatch(doc: dict[str, Any], ledger: Ledger) -> tuple[str, str] | None:
    result = ledger.verify()
    if not result.ok:
        return ("ledger_broken", f"ledger does not verify: {result.reason}")
    head, seq = doc["chain_head"], doc["chain_seq"]
    row = ledger.row(seq)
    if row is None or row.row_hash != head:
        last_seq, last_hash = ledger.head()
        return (
            "chain_head_missing",
            f"chain head {head[:16]}… (row {seq}) is not in the ledger: it was rewritten or "
            f"cut short (it now ends at row {last_seq}, head {last_hash[:16]}…)",
        )
    run_id = doc["run_id"]
    rows = [r for r in ledger.rows(run_id=run_id) if r.seq <= seq]
    if not rows:
        return ("ledger_mismatch", f"the ledger has no rows of run {run_id!r} up to row {seq}")
    contracts = sorted({r.contract_id for r in rows})
    if contracts != [doc["contract"]["id"]]:
        return (
            "ledger_mismatch",
            f"contract: the certificate says {doc['contract']['id']!r}, the ledger's rows of "
            f"run {run_id!r} say {', '.join(map(repr, contracts))}",
        )
    decisions = [r for r in rows if r.kind == "decision"]
    decided = decisions[-1].seat if decisions else None
    if decided != doc["winner"]:
        said = "no decision" if not decisions else f"winner {decided!r}"
        return (
            "ledger_mismatch",
            f"winner: the certificate says {doc['winner']!r}, the ledger's decision for run "
            f"{run_id!r} says {said}",
        )
    totals = ledger.totals_payload(run_id, upto_seq=seq)
    # a certificate issued before totals had by_role is checked on the two figures it has
    for name in ("tokens", "cost_usd", *(("by_role",) if "by_role" in doc["totals"] else ())):
        if totals[name] != doc["totals"][name]:
            return (
                "ledger_mismatch",
                f"totals.{name}: the certificate says {doc['totals'][name]!r}, the ledger "
                f"sums to {totals[name]!r}",
            )
    return None


def _payload_problem(doc: dict[str, Any]) -> str | None:
    """The first thing wrong with a payload's shape, or None."""
    missing = [f for f in _FIELDS if f not in doc]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if doc["version"] != CERT_VERSION or isinstance(doc["version"], bool):
        return f"version {doc['version']!r} is not {CERT_VERSION}"
    if not _nonempty(doc["run_id"]):
        return "run_id must be a non-empty string"
    contract = doc["contract"]
    if not isinstance(contract, dict) or not _nonempty(contract.get("id")):
        return "contract.id must be a non-empty string"
    if not isinstance(contract.get("sha256"), str) or not _HEX64.fullmatch(contract["sha256"]):
        return "contract.sha256 must be 64 lowercase hex digits"
    verdict = doc["verdict"]
    if not isinstance(verdict, dict) or not _nonempty(verdict.get("nonce")):
        return "verdict.nonce must be a non-empty string"
    if verdict.get("verdict") != "pass":
        return f"verdict.verdict is {verdict.get('verdict')!r}: only a passing winner is certified"
    code = verdict.get("exit_code")
    if isinstance(code, bool) or not isinstance(code, int):
        return "verdict.exit_code must be an integer"
    if not _nonempty(doc["winner"]):
        return "winner must name a seat: a run without a winner gets no certificate"
    totals = doc["totals"]
    if not isinstance(totals, dict):
        return "totals must be an object"
    tokens, cost = totals.get("tokens"), totals.get("cost_usd")
    if tokens != NOT_REPORTED and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
    ):
        return f"totals.tokens must be a whole number or {NOT_REPORTED!r}"
    if cost != NOT_REPORTED and (
        isinstance(cost, bool)
        or not isinstance(cost, (int, float))
        or not math.isfinite(cost)
        or cost < 0
    ):
        return f"totals.cost_usd must be a number or {NOT_REPORTED!r}"
    if not isinstance(totals.get("by_role", {}), dict):
        return "totals.by_role must be an object"
    if not isinstance(doc["chain_head"], str) or not _HEX64.fullmatch(doc["chain_head"]):
        return "chain_head must be 64 lowercase hex digits"
    chain_seq = doc["chain_seq"]
    if isinstance(chain_seq, bool) or not isinstance(chain_seq, int) or chain_seq < 1:
        return "chain_seq must be a row number >= 1"
    if not _nonempty(doc["issued_at"]):
        return "issued_at must be a timestamp"
    return None


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes) or len(key) < KEY_BYTES:
        raise CertificateError(f"a certificate key is at least {KEY_BYTES} bytes")


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()


def _malformed(why: str) -> CertCheck:
    return CertCheck(False, f"malformed token: {why}", None, "malformed")


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes | None:
    """Decode unpadded base64url, accepting only the canonical spelling of the bytes."""
    if len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if _b64encode(data) == text else None
