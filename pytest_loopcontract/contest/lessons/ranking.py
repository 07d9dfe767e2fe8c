"""Which lessons apply to a task, best first: by the dotted domain path, then tags, then age.

The store ranks thousands of lessons per lookup, and the rule (the exact
domain, its ancestors and descendants, never siblings) must be one reading for the store, the
prompt and the tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pytest_loopcontract.contest.lessons.model import Lesson

__all__ = [
    "Relation",
    "ancestors",
    "domain_distance",
    "domain_relation",
    "rank_lessons",
]

Relation = Literal["exact", "ancestor", "descendant"]


def ancestors(domain: str) -> list[str]:
    """Proper ancestors of a dotted domain, nearest last: ``a.b.c`` -> ``["a", "a.b"]``."""
    parts = domain.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def domain_relation(lesson_domain: str, query: str) -> Relation | None:
    """How a lesson's domain stands to the queried one, along the dotted path.

    ``"ancestor"``: the lesson's domain is an ancestor of the query (``a.b`` for ``a.b.c``);
    ``"descendant"``: the other way round. Siblings, cousins and a prefix that is not a whole
    segment (``a.bc`` against ``a.b``) are unrelated: ``None``.
    """
    if lesson_domain == query:
        return "exact"
    if query.startswith(lesson_domain + "."):
        return "ancestor"
    if lesson_domain.startswith(query + "."):
        return "descendant"
    return None


def domain_distance(lesson_domain: str, query: str) -> int | None:
    """Segments between two related domains (0 for exact); ``None`` when unrelated."""
    if domain_relation(lesson_domain, query) is None:
        return None
    return abs(lesson_domain.count(".") - query.count("."))


def rank_lessons(
    lessons: Iterable[Lesson], *, domain: str, tags: Iterable[str] = ()
) -> list[Lesson]:
    """The lessons that apply to ``domain``, best first.

    Only exact, ancestor and descendant domains apply. Order: nearer along the dotted path
    first (exact, then one segment away, ...), then more tags in common with ``tags``, then
    newest ``created`` first, then ``id`` (so the order is total and reproducible).
    """
    wanted = frozenset(tags)
    distances: dict[str, int | None] = {}
    keyed: list[tuple[int, int, str, Lesson]] = []
    for lesson in lessons:
        if lesson.domain in distances:
            distance = distances[lesson.domain]
        else:
            distance = distances[lesson.domain] = domain_distance(lesson.domain, domain)
        if distance is None:
            continue
        overlap = len(wanted.intersection(lesson.tags)) if wanted else 0
        keyed.append((-distance, overlap, lesson.created, lesson))
    keyed.sort(key=lambda k: k[3].id)
    # Reversed, (-distance, overlap, created) is nearer, more tags, newer first; a reversed
    # sort is still stable, so equal keys keep the ascending ids of the first sort.
    keyed.sort(key=lambda k: k[:3], reverse=True)
    return [k[3] for k in keyed]
