"""Counts in messages: "1 DoD item", "2 DoD items". One helper, so every count agrees."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun`` in agreement; ``many`` when the plural is not ``noun + "s"``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"
