"""The baseline record: what ``baseline.json`` holds, and reading it back.

Apart from :mod:`.take`, which takes a baseline (scratch checkouts, repeated runs, the
hidden tests): everything that only *reads* one (the in-process plugin in every enabled test
run, the hooks, ``verify``) imports this small module instead of the whole recording side.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pytest_loopcontract.statedir import StateDir
from pytest_loopcontract.verifier.baseline.format import (
    FORMAT,
    BaselineFormatError,
    decode_sets,
    encode_sets,
)
from pytest_loopcontract.workspace import Pin, WorkspaceError

__all__ = ["BaselineRecord", "included_pins", "load_baseline"]


@dataclass
class BaselineRecord:
    commit: str
    tree: str
    contract_path: str
    contract_sha256: str
    contract_id: str
    mode: str
    collected: list[str]
    outcomes: dict[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    pins: dict[str, Pin]
    protected_globs: list[str]
    plugins: list[str]
    created: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``baseline.json`` document: the test sets as compact id sets (format 2)."""
        # Field by field, not asdict(): a deep copy of 60,000 ids only to drop them again.
        sets = encode_sets(self.outcomes, self.pass_to_pass)
        data: dict[str, Any] = {"schema_version": FORMAT}
        for f in fields(self):
            if f.name != "collected":  # every id of the outcome sets: not written
                data[f.name] = sets.get(f.name, getattr(self, f.name))
        data["pins"] = {p: pin._asdict() for p, pin in sorted(self.pins.items())}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, outcomes: bool = True) -> BaselineRecord:
        """The record of a ``baseline.json`` document; without ``outcomes``, ``collected`` and
        ``outcomes`` stay empty (see :func:`load_baseline`)."""
        try:
            pins = {str(p): Pin(**v) for p, v in dict(data["pins"]).items()}
            collected, by_id, pass_to_pass = decode_sets(data, outcomes=outcomes)
            return cls(
                commit=str(data["commit"]),
                tree=str(data["tree"]),
                contract_path=str(data["contract_path"]),
                contract_sha256=str(data["contract_sha256"]),
                contract_id=str(data["contract_id"]),
                mode=str(data["mode"]),
                collected=collected,
                outcomes=by_id,
                fail_to_pass=[str(n) for n in data["fail_to_pass"]],
                pass_to_pass=pass_to_pass,
                pins=pins,
                protected_globs=[str(g) for g in data["protected_globs"]],
                plugins=[str(p) for p in data["plugins"]],
                created=str(data.get("created", "")),
                extra=dict(data.get("extra") or {}),
            )
        except BaselineFormatError as exc:
            raise WorkspaceError(str(exc), exit_code=27) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise WorkspaceError(
                f"baseline record is damaged ({exc}): run 'loop-contract baseline' again",
                exit_code=27,
            ) from None


def included_pins(record: BaselineRecord) -> dict[str, Pin]:
    """The git-ignored files the baseline copied in (``pytest.include_untracked``), pinned."""
    raw = record.extra.get("included") or {}
    try:
        return {str(p): Pin(**v) for p, v in dict(raw).items()}
    except TypeError:
        raise WorkspaceError(
            "baseline record is damaged (included files): run 'loop-contract baseline' again",
            exit_code=27,
        ) from None


def load_baseline(root: Path, *, outcomes: bool = True) -> BaselineRecord:
    """The baseline of ``root``. ``outcomes=False`` is for a reader that judges a run against
    the baseline but never compares outcome by outcome (the in-process plugin): the record's
    ``collected`` and ``outcomes`` are left empty, 2,000 ids not decoded in every test run."""
    path = StateDir.of(root).baseline
    if not path.exists():
        raise WorkspaceError(
            f"no baseline yet in {root}: run 'loop-contract baseline' on the base commit first",
            exit_code=27,
        )
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise WorkspaceError(
            f"cannot read {path} ({exc}): run 'loop-contract baseline' again", exit_code=27
        ) from None
    return BaselineRecord.from_json(data, outcomes=outcomes)
