"""DoD items one at a time: ``next`` claims, ``done`` proves, ``amend`` adds (by a person).

An agent cannot mark an item done by saying so: ``done`` runs the isolated verifier and records
the item only when that verdict shows the item's tests passing. Only a named person may add a
criterion, and doing so re-pins the contract under their name.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_loopcontract.contract.model import Contract, parse_contract
from pytest_loopcontract.contract.scaffold import slugify
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import write_json_atomic
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.state import reduce
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verdict import VerdictView
from pytest_loopcontract.verifier.baseline.record import load_baseline
from pytest_loopcontract.workspace import Pin, git, sha256_bytes

__all__ = [
    "ItemError",
    "amend",
    "claim_next",
    "mark_done",
    "pinned_contract_bytes",
    "repin_contract",
]


class ItemError(LoopContractError):
    """The item cannot be claimed, marked or added; the message says why."""


@dataclass(frozen=True)
class DoneResult:
    item: str
    done: bool
    failing: list[dict[str, str]]
    hook_exit: int | None
    verdict_exit: int


def claim_next(root: Path, contract: Contract) -> dict[str, Any] | None:
    """The first item not yet proven done; recorded as claimed. None when all are done."""
    history = History(StateDir.of(root).folder)
    state = reduce(history.read().records)
    for item in contract.dod:
        if state["items"].get(item.id) != "done":
            history.append("item_claimed", {"item": item.id})
            return {
                "id": item.id,
                "text": item.text,
                "tests": list(item.tests),
                "marker": f'@pytest.mark.dod("{item.id}")',
            }
    return None


def mark_done(root: Path, contract: Contract, item_id: str) -> DoneResult:
    """Verify in isolation; record the item done only if its tests pass in that verdict."""
    from pytest_loopcontract.verifier.verify import verify

    if item_id not in {i.id for i in contract.dod}:
        raise ItemError(
            f"no DoD item {item_id!r} in the contract "
            f"(items: {', '.join(i.id for i in contract.dod)})"
        )
    history = History(StateDir.of(root).folder)
    outcome = verify(root, history=history)
    entry = next(d for d in outcome.verdict["dod"] if d["id"] == item_id)
    failing = [dict(t) for t in VerdictView(outcome.verdict).dod_failing(item_id)]
    tamper = outcome.verdict["tamper"]["detected"]
    if entry["status"] != "done" or tamper:
        return DoneResult(item_id, False, failing, None, int(outcome.verdict["exit_code"]))
    hook_exit = None
    if contract.on_item_done:
        try:
            hook_exit = subprocess.run(
                list(contract.on_item_done), cwd=root, check=False, timeout=600
            ).returncode
        except (OSError, subprocess.TimeoutExpired):
            hook_exit = -1
    history.append(
        "item_done", {"item": item_id, "nonce": outcome.verdict["nonce"], "hook_exit": hook_exit}
    )
    return DoneResult(item_id, True, [], hook_exit, int(outcome.verdict["exit_code"]))


def amend(root: Path, contract_relpath: str, *, text: str, tests: list[str], by: str) -> str:
    """Add a DoD item to the contract and re-pin it under ``by``'s name; returns the item id."""
    if not by.strip():
        raise ItemError("an amendment is made by a named person: pass --by NAME")
    if not text.strip():
        raise ItemError('the new criterion needs text: --add "TEXT"')
    current = pinned_contract_bytes(root, contract_relpath)
    contract = parse_contract(current, Path(contract_relpath))
    existing = {i.id for i in contract.dod}
    item_id = slugify(text) or "item"
    suffix = 2
    while item_id in existing:
        item_id, suffix = f"{slugify(text)}-{suffix}", suffix + 1
    block = yaml.safe_dump(
        [{"id": item_id, "text": text.strip(), "tests": tests}],
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )
    new_text = _append_dod_item(current.decode("utf-8"), block, bool(contract.dod))
    data = new_text.encode("utf-8")
    parse_contract(data, Path(contract_relpath))  # an amendment must itself be valid
    repin_contract(
        root,
        contract_relpath,
        data,
        "amend",
        {"item": item_id, "text": text.strip(), "tests": tests, "by": by.strip()},
    )
    return item_id


def pinned_contract_bytes(root: Path, contract_relpath: str) -> bytes:
    """The adopted contract's bytes, refused when they differ from the pin (any edit other
    than an amendment is tampering, and must not be folded into one)."""
    baseline = load_baseline(root)
    if baseline.contract_path != contract_relpath:
        raise ItemError(f"the adopted contract is {baseline.contract_path}, not {contract_relpath}")
    current = (root / contract_relpath).read_bytes()
    if sha256_bytes(current) != baseline.pins[contract_relpath].sha256:
        raise ItemError(
            f"{contract_relpath} differs from its pin; restore it before amending "
            "(any change other than an amendment is tampering)"
        )
    return current


def repin_contract(
    root: Path, contract_relpath: str, data: bytes, kind: str, record: dict[str, Any]
) -> None:
    """Write the amended contract, re-pin it in the baseline, record ``kind`` in the history
    (``amend`` or ``amend_removed``) with the new digest."""
    baseline = load_baseline(root)
    pin = baseline.pins[contract_relpath]
    (root / contract_relpath).write_bytes(data)
    blob = git(root, "hash-object", "-w", "--", contract_relpath).decode().strip()
    baseline.pins[contract_relpath] = Pin(sha256=sha256_bytes(data), blob=blob, mode=pin.mode)
    baseline.contract_sha256 = sha256_bytes(data)
    note = {"item": record.get("item"), "by": record.get("by")}
    if kind != "amend":
        note["removed"] = True
    baseline.extra.setdefault("amendments", []).append(note)
    write_json_atomic(StateDir.of(root).baseline, baseline.to_json())
    History(StateDir.of(root).folder).append(
        kind, {**record, "contract_sha256": baseline.contract_sha256}
    )


_DOD_KEY = re.compile(r"dod:[ \t]*(?P<empty>\[[ \t]*\])?[ \t]*(?:#.*)?$")


def _append_dod_item(text: str, block: str, has_items: bool) -> str:
    """Append under ``dod:``; comments and layout elsewhere in the file are kept as written.

    The new item takes the indentation of the items already there: ``- id:`` at the key's
    own column (PyYAML's style) is as valid as an indented list, and mixing the two is not.
    """
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        found = _DOD_KEY.match(line.rstrip("\r\n"))
        if found is None:
            continue
        if found.group("empty") is not None or not has_items:
            lines[i] = "dod:\n"
        end = i + 1
        indent: int | None = None
        while end < len(lines) and (
            lines[end].startswith((" ", "\t", "-")) or not lines[end].strip()
        ):
            stripped = lines[end].lstrip(" ")
            if indent is None and stripped.startswith("-"):
                indent = len(lines[end]) - len(stripped)
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        pad = " " * (2 if indent is None else indent)
        indented = "".join(f"{pad}{row}\n" for row in block.splitlines())
        return "".join(lines[:end]) + indented + "".join(lines[end:])
    indented = "".join(f"  {row}\n" for row in block.splitlines())
    return text.rstrip("\n") + "\ndod:\n" + indented
