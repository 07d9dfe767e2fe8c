"""``loop-contract baseline``: adopt the contract at the base commit (fail-to-pass, pins)."""

from __future__ import annotations

from pathlib import Path

from pytest_loopcontract.cli.display import showing_progress
from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import contract_in_repo
from pytest_loopcontract.idtext import readable_nodeid
from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier import harness
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.baseline.take import BaselineRefused, take_baseline
from pytest_loopcontract.verifier.selectors import UnmatchedSelectors

__all__ = ["baseline"]


def baseline(
    contract: str,
    *,
    base: str | None = None,
    python: str | None = None,
    as_json: bool = False,
    quiet: bool = False,
) -> int:
    """Record the baseline; a refused one exits 27, one refused for test ids that name no
    collected test 26 (as JSON ``{"ok": false}`` with ``--json``)."""
    root, rel = contract_in_repo(contract)
    try:
        with showing_progress("baseline", quiet=quiet):
            record = take_baseline(root, rel, base, python=python)
    except (BaselineRefused, UnmatchedSelectors) as exc:
        if not as_json:
            raise
        answer: dict[str, object] = {"ok": False, "reason": str(exc)}
        if isinstance(exc, UnmatchedSelectors):
            answer["unmatched"] = exc.entries()
        print_json(answer)
        return exc.exit_code
    # Adopting a contract adopts the harness as it is now: its files' digests are recorded.
    harness.record(root, by="loop-contract baseline")
    if as_json:
        print_json(_summary(record, StateDir.of(root).baseline))
    else:
        _print_text(record, StateDir.of(root).baseline)
    return 0


def _summary(record: BaselineRecord, path: Path) -> dict[str, object]:
    return {
        "ok": True,
        "commit": record.commit,
        "mode": record.mode,
        "fail_to_pass": record.fail_to_pass,
        "pass_to_pass": len(record.pass_to_pass),
        "pins": len(record.pins),
        "plugins": record.plugins,
        "path": str(path),
    }


def _print_text(record: BaselineRecord, path: Path) -> None:
    print(
        f"baseline at {record.commit[:12]} ({record.mode} mode): "
        f"{len(record.fail_to_pass)} fail-to-pass, {len(record.pass_to_pass)} pass-to-pass, "
        f"{len(record.pins)} pinned paths, plugins: {', '.join(record.plugins) or 'none'}"
    )
    for nodeid in record.fail_to_pass:
        print(f"  must go green: {readable_nodeid(nodeid)}")
    print(f"recorded in {path}")
