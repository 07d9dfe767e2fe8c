"""Pure no-progress detection: is the agent going anywhere?

The progress key of an iteration (:func:`pytest_loopcontract.history.records.progress_key`)
is the hash of its diff against the baseline together with the set of failing tests. The same
key several times in a row means the agent's turns change nothing that matters; two keys
alternating means it is undoing and redoing the same edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_loopcontract.plural import plural

__all__ = ["no_progress", "oscillating", "stalled"]


def no_progress(keys: Sequence[str], window: int) -> bool:
    """The last ``window`` keys are identical (and there are at least that many)."""
    if window < 1 or len(keys) < window:
        return False
    tail = keys[-window:]
    return all(k == tail[0] for k in tail)


def oscillating(keys: Sequence[str], span: int = 6) -> bool:
    """The last ``span`` keys alternate between exactly two different values: A B A B A B."""
    if span < 4 or len(keys) < span:
        return False
    tail = keys[-span:]
    a, b = tail[0], tail[1]
    return a != b and all(k == (a if i % 2 == 0 else b) for i, k in enumerate(tail))


def stalled(keys: Sequence[str], window: int, span: int = 6) -> str | None:
    """Why the loop should stop for lack of progress, or None."""
    if no_progress(keys, window):
        return (
            f"no progress: the same diff and failing tests {plural(window, 'iteration')} in a row"
        )
    if oscillating(keys, span):
        return (
            f"no progress: oscillating between two states over the last {plural(span, 'iteration')}"
        )
    return None
