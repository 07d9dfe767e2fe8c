"""The panel's documents: what a run result lists of a lesson."""

from __future__ import annotations

from pytest_loopcontract.contest.lessons.model import Lesson, lesson_id
from pytest_loopcontract.contest.panel import lesson_document


def _lesson() -> Lesson:
    return Lesson(
        id=lesson_id("py.num", "acc", "acceptance", "make it pass"),
        domain="py.num",
        tags=("perf",),
        contract_id="c-1",
        run_id="run-1",
        seat="alpha",
        gate="acc",
        kind="acceptance",
        what="acceptance gate acc failed",
        evidence="not passing: tests/test_x.py::test_y",
        cause="the change does not do it yet",
        rule="make it pass",
        created="2026-01-01T00:00:00Z",
        seen=3,
    )


def test_a_result_lists_the_lesson_without_its_provenance_in_a_fixed_order() -> None:
    lesson = _lesson()
    assert list(lesson_document(lesson).items()) == [
        ("id", lesson.id),
        ("domain", "py.num"),
        ("gate", "acc"),
        ("kind", "acceptance"),
        ("what", "acceptance gate acc failed"),
        ("evidence", "not passing: tests/test_x.py::test_y"),
        ("cause", "the change does not do it yet"),
        ("rule", "make it pass"),
    ]
