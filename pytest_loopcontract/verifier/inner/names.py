"""The names of the referee's items, made from the run's key: shared by the test process and
the launcher. Standard library only: the launcher loads this file by itself (importing the
``inner`` package would import pytest, which the launcher never needs)."""

from __future__ import annotations

import hmac
from hashlib import sha256

__all__ = [
    "CANARIES",
    "CANARY_FAIL",
    "CANARY_PASS",
    "COPY",
    "POLICY_PROPERTY",
    "REBOUND_PROPERTY",
    "REFEREE_PROPERTY",
    "item_name",
]

# On each item of the referee: [its node id, what it stands for, kind:index]. It travels on the
# item's reports, so the controller learns it from xdist workers too.
REFEREE_PROPERTY = "loop_referee"
# On a copy whose test module's names no longer mean what the pinned source binds them to:
# [what it stands for, the name, what it is bound to instead, when it was seen].
REBOUND_PROPERTY = "loop_referee_rebound"
# On any item: a capability use the policy attributed to the candidate (or, at baseline, a
# (file, capability) pair of the profile), moved onto the report of the phase it happened in.
POLICY_PROPERTY = "loop_policy"

COPY = "copy"
CANARY_PASS = "canary-pass"
CANARY_FAIL = "canary-fail"
CANARIES = 3  # the first must pass, the others must fail


def item_name(key: bytes, of: str, kind: str, index: int) -> str:
    """The name of the referee's item standing for ``of`` (a node id, or "" for a canary)."""
    tag = hmac.new(key, f"{of}\0{kind}\0{index}".encode("utf-8", "surrogatepass"), sha256)
    return "test_" + tag.hexdigest()[:16]
