"""A reason: a stable ``code`` and a ``message`` for people, as verdicts and contests give them.

The verdict's reasons, the checkpoints' and the validity matrix's
failures and escalations are one concept, and the matrix is a pure core that must not import
the verdict (schema files, JSON). Stdlib only and no I/O, so every pure core may import it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Reason", "ReasonDocument"]

ReasonDocument = dict[str, str]
"""A reason in a JSON document: ``{"code": ..., "message": ...}`` and nothing else."""


class Reason(NamedTuple):
    """Why something failed, stopped, escalated or waits. ``code`` is stable (other tools
    branch on it); ``message`` is for people and may change."""

    code: str
    message: str

    def to_json(self) -> ReasonDocument:
        """The shape every document that lists reasons uses (verdict, contest result)."""
        return {"code": self.code, "message": self.message}
