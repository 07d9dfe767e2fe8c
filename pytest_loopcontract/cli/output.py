"""How commands talk to the user: JSON for machines on stdout, ``loop-contract: ...`` on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["err", "print_json"]


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (what ``--json`` promises a machine)."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def err(message: str) -> None:
    """One line on stderr, named after the command so it stands out in an agent's log."""
    sys.stderr.write(f"loop-contract: {message}\n")
