"""The lessons' prompt block: ranked lessons under a hard character cap that says what it dropped.

The block goes into a seat's prompt, so it must never exceed its budget
and never silently lose rules; and it prints a lesson's rule and evidence, never its seat."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_loopcontract.contest.lessons.evidence import one_line
from pytest_loopcontract.contest.lessons.model import EVIDENCE_CHARS, RULE_CHARS, Lesson
from pytest_loopcontract.plural import plural

__all__ = [
    "HEADER",
    "PromptBlock",
    "bullet",
    "prompt_block",
]

HEADER = "Lessons from earlier runs (verifier evidence, not agent text):"


@dataclass(frozen=True)
class PromptBlock:
    """The prompt text (at most the cap), how many lessons it holds and how many it dropped."""

    text: str
    included: int
    dropped: int
    ids: tuple[str, ...] = field(default=())


def bullet(lesson: Lesson) -> str:
    """One lesson's line in a prompt block: its rule, how often it was seen, its evidence."""
    seen = f" (seen {lesson.seen} times)" if lesson.seen > 1 else ""
    rule = one_line(lesson.rule, RULE_CHARS)
    evidence = one_line(lesson.evidence, EVIDENCE_CHARS)
    return f"- {rule}{seen}. Evidence: {evidence}"


def _dropped_line(dropped: int, cap_chars: int) -> str:
    noun = "lesson" if dropped == 1 else "lessons"
    return f"({dropped} more {noun} dropped by the {cap_chars}-character cap)"


def prompt_block(
    ranked: Sequence[Lesson], *, cap_chars: int, total: int | None = None
) -> PromptBlock:
    """A prompt block of ranked lessons that never exceeds ``cap_chars`` characters in total.

    One bullet per lesson (its rule, then its evidence; never its seat), in the given order,
    lines joined by ``\\n`` without a trailing newline. The longest prefix of ``ranked`` that
    fits is kept; when any lesson is left out the block ends with "(N more lessons dropped by
    the C-character cap)", and that line counts against the cap too. ``total`` is the number
    of lessons ranked when ``ranked`` holds only the first few of them (a store that fetched a
    prefix); the dropped count is then ``total - included``. No lessons: an empty block. A cap
    too small for even the header and the dropped line: an empty block that drops them all.
    """
    if isinstance(cap_chars, bool) or not isinstance(cap_chars, int) or cap_chars < 0:
        raise ValueError(f"cap_chars must be an integer >= 0, got {cap_chars!r}")
    count = len(ranked) if total is None else total
    if count < len(ranked):
        raise ValueError(
            f"total ({total}) is smaller than the {plural(len(ranked), 'lesson')} given"
        )
    if count == 0:
        return PromptBlock("", 0, 0)
    best = -1
    size = len(HEADER)
    for k in range(len(ranked) + 1):
        if k:
            size += 1 + len(bullet(ranked[k - 1]))
        if size > cap_chars:
            break
        left = count - k
        full = size + (1 + len(_dropped_line(left, cap_chars)) if left else 0)
        if full <= cap_chars:
            best = k
    if best < 0:
        return PromptBlock("", 0, count)
    lines = [HEADER, *(bullet(lesson) for lesson in ranked[:best])]
    if count - best:
        lines.append(_dropped_line(count - best, cap_chars))
    return PromptBlock(
        "\n".join(lines), best, count - best, tuple(lesson.id for lesson in ranked[:best])
    )
