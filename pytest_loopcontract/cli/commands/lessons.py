"""``loop-contract lessons``: lessons of earlier contests, ranked for this contract's domain."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, repo_root
from pytest_loopcontract.contest.lesson_store import LessonStore
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.lessons.prompt import prompt_block
from pytest_loopcontract.contest.orchestrate import DEFAULT_LESSON_CHARS
from pytest_loopcontract.contest.panel import lesson_scope
from pytest_loopcontract.statedir import StateDir

__all__ = ["lessons"]


def lessons(
    *,
    fmt: str = "text",
    domain: str | None = None,
    tags: Sequence[str] | None = None,
    chars: int | None = None,
) -> int:
    """Print the ranked lessons as text, as the prompt block a seat gets, or as JSON.

    Without ``domain`` the adopted contract's ``contest.domain`` (and its tags, unless ``tags``
    is given) is used; without ``chars`` its ``lesson_chars``.
    """
    root = repo_root()
    settings: dict[str, Any] = {}
    scope_tags = tuple(tags or ())
    if domain is None:
        contract = adopted_contract(root)
        settings = dict(contract.contest)
        domain, contract_tags = lesson_scope(contract)
        scope_tags = scope_tags if tags is not None else contract_tags
    cap = chars if chars is not None else int(settings.get("lesson_chars", DEFAULT_LESSON_CHARS))
    path = StateDir.of(root).lessons
    ranked: list[Lesson] = []
    if path.exists():
        with LessonStore(path) as store:
            ranked = store.lookup(domain, scope_tags)
    _print(ranked, fmt, domain, cap)
    return 0


def _print(ranked: Sequence[Lesson], fmt: str, domain: str, cap: int) -> None:
    if fmt == "json":
        print_json([lesson.to_json() for lesson in ranked])
    elif fmt == "prompt":
        text = prompt_block(ranked, cap_chars=cap).text
        sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
    else:
        if not ranked:
            print(f"no lessons for {domain}")
        for lesson in ranked:
            print(f"[{lesson.domain}] {lesson.rule}")
            print(f"    evidence: {lesson.evidence}  (gate {lesson.gate}, seen {lesson.seen}x)")
