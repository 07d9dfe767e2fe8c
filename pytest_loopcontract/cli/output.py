"""How commands talk to the user: JSON for machines on stdout, ``loop-contract: ...`` on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

from pytest_loopcontract.fsio import finite_json

__all__ = ["err", "print_json"]


def print_json(data: Any) -> None:
    """``data`` as indented, strict JSON on stdout (what ``--json`` promises a machine)."""
    json.dump(finite_json(data), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def err(message: str) -> None:
    """One line on stderr, named after the command so it stands out in an agent's log."""
    sys.stderr.write(f"loop-contract: {message}\n")
