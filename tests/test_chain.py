"""chain: the one way both logs seal entries and tell what a broken link means."""

from __future__ import annotations

import hashlib

import pytest

from pytest_loopcontract.chain import ZERO_HASH, digest, link_fault, seal


def test_seal_and_digest_are_sha256() -> None:
    assert digest(b"line") == hashlib.sha256(b"line").hexdigest()
    assert seal(ZERO_HASH, "[1]") == hashlib.sha256((ZERO_HASH + "[1]").encode()).hexdigest()
    assert seal(ZERO_HASH, "[1]") != seal("1" * 64, "[1]")


@pytest.mark.parametrize(
    ("expected", "seq", "links", "fault"),
    [
        (4, 4, True, ""),
        (4, 6, True, "removed"),
        (4, 6, False, "removed"),
        (4, 3, True, "reordered"),
        (4, 4, False, "relinked"),
        (None, 9, True, ""),  # after an unreadable entry no seq is expected
        (None, 9, False, "relinked"),
    ],
)
def test_link_fault(expected: int | None, seq: int, links: bool, fault: str) -> None:
    assert link_fault(expected, seq, links) == fault
