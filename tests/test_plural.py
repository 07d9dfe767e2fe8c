"""Counts agree with their nouns: "1 DoD item", "2 DoD items", "0 DoD items"."""

from __future__ import annotations

import pytest

from pytest_loopcontract.plural import plural


@pytest.mark.parametrize(
    ("count", "noun", "many", "expected"),
    [
        (1, "DoD item", None, "1 DoD item"),
        (2, "DoD item", None, "2 DoD items"),
        (0, "seat", None, "0 seats"),
        (1, "dispatch", "dispatches", "1 dispatch"),
        (3, "dispatch", "dispatches", "3 dispatches"),
    ],
)
def test_plural(count: int, noun: str, many: str | None, expected: str) -> None:
    assert plural(count, noun, many) == expected
