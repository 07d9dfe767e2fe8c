"""``python -m pytest_loopcontract`` is the ``loop-contract`` command (isolated launcher)."""

from __future__ import annotations

import sys

from pytest_loopcontract.launcher import main

if __name__ == "__main__":
    sys.exit(main())
