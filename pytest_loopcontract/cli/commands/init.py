"""``loop-contract init``: write a starting contract, optionally from a markdown checklist."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.repo import contract_file
from pytest_loopcontract.contract.scaffold import render_contract, slugify
from pytest_loopcontract.errors import CommandError
from pytest_loopcontract.fsio import write_text_atomic

__all__ = ["init"]


def init(
    contract: str,
    *,
    from_checklist: str | None = None,
    contract_id: str | None = None,
    goal: str | None = None,
    force: bool = False,
) -> int:
    """Scaffold ``contract``; an existing file is kept unless ``force``."""
    target = contract_file(contract)
    if target.exists() and not force:
        raise CommandError(f"{target} already exists (use --force to overwrite)")
    checklist = _read_checklist(from_checklist) if from_checklist else None
    name = contract_id or slugify(target.resolve().parent.name) or "contract"
    try:
        text = render_contract(name, goal=goal or "", checklist=checklist)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    write_text_atomic(target, text)
    print(f"wrote {target}; next: edit it, then 'loop-contract check' and 'loop-contract baseline'")
    return 0


def _read_checklist(path: str) -> str:
    try:
        return Path(path).read_text("utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
