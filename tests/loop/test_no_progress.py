"""No-progress detection: repeated keys and A-B oscillation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.history.records import EMPTY_DIFF_HASH, diff_hash, progress_key
from pytest_loopcontract.loop.no_progress import no_progress, oscillating, stalled


def test_key_depends_on_diff_and_failing_set_not_order() -> None:
    d1, d2 = diff_hash("a"), diff_hash("b")
    assert progress_key(d1, ["x", "y"]) == progress_key(d1, ["y", "x", "x"])
    assert progress_key(d1, ["x"]) != progress_key(d2, ["x"])
    assert progress_key(d1, ["x"]) != progress_key(d1, ["x", "y"])
    assert diff_hash("") == EMPTY_DIFF_HASH


def test_no_progress_window() -> None:
    assert not no_progress(["a", "a"], 3)
    assert no_progress(["b", "a", "a", "a"], 3)
    assert not no_progress(["a", "a", "b"], 3)
    assert not no_progress(["a"], 0)


def test_oscillation() -> None:
    assert oscillating(list("ABABAB"))
    assert oscillating(list("CABABAB"))
    assert not oscillating(list("ABABA"))
    assert not oscillating(list("AAAAAA"))
    assert not oscillating(list("ABABAC"))
    assert stalled(list("ABABAB"), 3) is not None
    assert stalled(list("ABC"), 3) is None


@given(st.lists(st.sampled_from("ABC"), max_size=12), st.integers(1, 5))
def test_appending_a_new_key_always_resets(keys: list[str], window: int) -> None:
    assert not no_progress([*keys, "NEW"], window) or window == 1
