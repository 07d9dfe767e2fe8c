"""The live status page's data: the status document plus what the page draws (pure).

:func:`pytest_loopcontract.loop.status.status_document` is the one status computation; this
adds the bars a person reads at a glance, each with a level the page colours: ``ok`` (under
three quarters of the cap), ``warn`` (under the cap), ``over`` (at or past it) and ``none`` (no
cap, drawn empty). The HTTP side is :mod:`pytest_loopcontract.loop.status.server`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_loopcontract.loop.status import loop_line

__all__ = ["WARN_AT", "bar_level", "page_document"]

WARN_AT = 0.75
_BARS = (  # name, label, text with a cap, text without one
    ("iterations", "iterations", "{used:g} of {cap:g}", "{used:g} (no cap)"),
    ("minutes", "time", "{used:.1f} of {cap:g} min", "{used:.1f} min (no cap)"),
    ("tokens", "tokens", "{used:g} of {cap:g}", "{used:g} (no cap)"),
    ("usd", "dollars", "${used:.2f} of ${cap:.2f}", "${used:.2f} (no cap)"),
)


def bar_level(used: float, cap: float | None) -> tuple[float, str]:
    """(fraction of the bar filled, 0..1; level) for ``used`` against ``cap``."""
    if cap is None:
        return 0.0, "none"
    if cap <= 0:
        return 1.0, "over"
    fraction = used / cap
    level = "ok" if fraction < WARN_AT else "warn" if fraction < 1 else "over"
    return max(0.0, min(1.0, fraction)), level


def _bar(
    name: str, label: str, text: str, uncapped: str, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """One bar: how full, its level, the figure written beside it."""
    used = float(entry.get("used") or 0)
    cap = entry.get("cap")
    fraction, level = bar_level(used, None if cap is None else float(cap))
    shown = (
        text.format(used=used, cap=float(cap)) if cap is not None else uncapped.format(used=used)
    )
    return {"name": name, "label": label, "used": used, "cap": cap, "fraction": fraction,
            "level": level, "text": shown}  # fmt: skip


def page_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with ``page.bars`` and ``page.loop`` (the loop's line, as ``status`` words it)
    added: what ``/status.json`` serves."""
    budget = doc["budget"]
    bars = [_bar(*row, budget[row[0]]) for row in _BARS]
    return {**doc, "page": {"bars": bars, "loop": loop_line(doc["loop"])}}
