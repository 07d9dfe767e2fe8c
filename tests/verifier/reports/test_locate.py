"""Where a test lives, from its node id and failure message."""

from __future__ import annotations

from pytest_loopcontract.verifier.reports.locate import test_place as place_of


def test_classname_and_name_follow_pytests_own_junit_writer() -> None:
    place = place_of("tests/unit/test_a.py::TestX::TestY::test_b[1-2]")
    assert place.file == "tests/unit/test_a.py"
    assert place.classname == "tests.unit.test_a.TestX.TestY"
    assert place.name == "test_b[1-2]"
    assert place.line is None


def test_the_line_is_the_last_frame_in_the_tests_own_file() -> None:
    message = (
        "tests/test_a.py:5: in test_b\n    helper()\nsrc/lib.py:40: in helper\n"
        "tests/test_a.py:9: in check\nsrc/lib.py:41: AssertionError"
    )
    assert place_of("tests/test_a.py::test_b", message).line == 9


def test_a_line_in_another_file_is_not_taken_for_the_tests() -> None:
    """A wrong line annotates the wrong code: none is better."""
    message = "src/lib.py:41: AssertionError\nother/tests/test_a.py:3: x"
    assert place_of("tests/test_a.py::test_b", message).line is None
    assert place_of("tests/test_a.py::test_b", "tests/test_a.py:0: weird").line is None
