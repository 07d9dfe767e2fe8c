"""How ``baseline.json`` stores the test sets: compact id sets.

Every node id three times as plain lists and maps (``collected``, ``outcomes`` as
``{nodeid: outcome}``, ``pass_to_pass``) would be about 20 MB for a 60,000-test suite. So the
outcome sets are id sets (:mod:`.idsets`, each file and class said once) and ``collected``,
which is every id of the outcome sets, is not written. ``fail_to_pass`` stays a plain list: it
is short, and its order is the DoD's. A format this version does not know is refused with the
command that takes the baseline again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.idsets import pack_ids, unpack_ids
from pytest_loopcontract.verifier.results import OUTCOMES

__all__ = ["FORMAT", "BaselineFormatError", "decode_sets", "encode_sets"]

FORMAT = 2


class BaselineFormatError(LoopContractError, ValueError):
    """``baseline.json`` is in a format this version cannot read."""


def encode_sets(outcomes: Mapping[str, str], pass_to_pass: list[str]) -> dict[str, Any]:
    """The keys for the outcomes and the pass-to-pass set."""
    by_outcome: dict[str, list[str]] = {}
    for nodeid, outcome in outcomes.items():
        by_outcome.setdefault(outcome, []).append(nodeid)
    order = {name: i for i, name in enumerate(OUTCOMES)}
    return {
        "outcomes": {
            name: pack_ids(ids)
            for name, ids in sorted(by_outcome.items(), key=lambda kv: order.get(kv[0], 99))
        },
        "pass_to_pass": pack_ids(pass_to_pass),
    }


def decode_sets(
    data: Mapping[str, Any], *, outcomes: bool = True
) -> tuple[list[str], dict[str, str], list[str]]:
    """(collected, outcomes, pass_to_pass) of a baseline document; without
    ``outcomes`` the first two are left empty (a reader that only judges a run against the
    pass-to-pass set need not build a map of every test)."""
    version = data.get("schema_version")
    if type(version) is not int or version != FORMAT:
        raise BaselineFormatError(
            f"baseline.json is in format {version!r}, this loop-contract reads format "
            f"{FORMAT}: run 'loop-contract baseline' again"
        )
    pass_to_pass = unpack_ids(data["pass_to_pass"], "pass_to_pass")
    if not outcomes:
        return [], {}, pass_to_pass
    sets = data["outcomes"]
    if not isinstance(sets, dict):
        raise ValueError("outcomes is not an object of outcome sets")
    by_id: dict[str, str] = {}
    for outcome, ids in sets.items():
        for nodeid in unpack_ids(ids, f"outcomes.{outcome}"):
            by_id[nodeid] = str(outcome)
    return sorted(n for n in by_id if n), by_id, pass_to_pass
