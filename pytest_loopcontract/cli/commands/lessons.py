"""``loop-contract lessons``: lessons of earlier contests, ranked for this contract's domain."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_loopcontract.cli.output import print_json
from pytest_loopcontract.cli.repo import adopted_contract, repo_root
from pytest_loopcontract.contest.lesson_store import LessonStore
from pytest_loopcontract.contest.lessons.model import Lesson
from pytest_loopcontract.contest.lessons.prompt import prompt_block
from pytest_loopcontract.contest.panel import lesson_scope
from pytest_loopcontract.contract.model import ContestSettings, Contract, working_copy
from pytest_loopcontract.plural import plural
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
    settings = ContestSettings()
    scope_tags = tuple(tags or ())
    contract: Contract | None = None
    if domain is None:
        contract = adopted_contract(root)
        settings = contract.contest
        domain, contract_tags = lesson_scope(contract)  # the contest's own scope
        scope_tags = scope_tags if tags is not None else contract_tags
    cap = chars if chars is not None else settings.lesson_chars
    path = StateDir.of(root).lessons
    ranked: list[Lesson] = []
    elsewhere: dict[str, int] = {}
    if path.exists():
        with LessonStore(path) as store:
            ranked = store.lookup(domain, scope_tags)
            if not ranked and contract is not None:
                elsewhere = store.domains_of(contract.id)
    _print(ranked, fmt, domain, cap)
    if fmt == "text" and not ranked and contract is not None:
        for line in _why_none(root, contract, elsewhere):
            print(line)
    return 0


def _why_none(root: Path, contract: Contract, elsewhere: dict[str, int]) -> list[str]:
    """Why the default domain holds no lessons: where it came from, where this contract's
    lessons are filed instead, and whether the contract file names another domain than the
    pin (the contest files and looks up lessons under the pinned contract's domain)."""
    named = contract.contest.domain
    lines = [
        "  (the contest.domain of the contract pinned at baseline)"
        if named
        else "  (the contract pinned at baseline sets no contest.domain: contract.<id>)"
    ]
    if elsewhere:
        where = ", ".join(f"{d} ({plural(n, 'lesson')})" for d, n in elsewhere.items())
        first = next(iter(elsewhere))
        lines.append(
            f"  lessons of contract {contract.id!r} are filed under {where}: list them with "
            f"'loop-contract lessons --domain {first}'"
        )
    current = working_copy(root, contract)
    if current is not None and lesson_scope(current)[0] != lesson_scope(contract)[0]:
        lines.append(
            f"  {contract.path.as_posix()} now files lessons under {lesson_scope(current)[0]}: "
            "commit it and run 'loop-contract baseline' to adopt it"
        )
    return lines


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
