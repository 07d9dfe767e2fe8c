"""pytest-loopcontract: an external verifier that decides when a coding agent is done."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
