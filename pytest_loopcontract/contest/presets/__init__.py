"""Seat presets for agent CLIs: a contract says ``agent: claude-code`` instead of an argv.

The registry is plain data (pure, no I/O) so the contract's seats can be built from it; the
reading of each CLI's output is a pure function in the CLI's own module; :mod:`.adapter` is
the seat-adapter hook implementation that applies them, registered like any plugin.
"""

from __future__ import annotations

from pytest_loopcontract.contest.presets import aider, claude_code, codex, gemini, generic
from pytest_loopcontract.contest.presets.model import Preset

__all__ = ["NAMES", "PRESETS", "preset"]

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (claude_code.PRESET, codex.PRESET, gemini.PRESET, aider.PRESET, generic.PRESET)
}
NAMES: tuple[str, ...] = tuple(PRESETS)


def preset(name: str) -> Preset:
    """The preset called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(
            f"unknown agent preset {name!r}: expected one of {', '.join(NAMES)}"
        ) from None
