"""Twin sources: a function's own lines with its expectations made wrong, every line kept where
it was, so a twin compiled at the function's first line reports the real file and lines."""

from __future__ import annotations

import pytest

from pytest_loopcontract.verifier.tamper.mutation import function_of
from pytest_loopcontract.verifier.tamper.mutation import test_functions as functions_in

SOURCE = """\
import pytest
import unittest

@pytest.mark.parametrize("x", [1, 2])
def test_a(x):
    assert f(1) == 2
    assert f() != 5
    assert "x" in f(
        x,
    )
    assert f(), "msg é"

class TestB(unittest.TestCase):
    def test_c(self):
        self.assertEqual(f(), "é3")
        self.assertNotIn(1, f())

def test_nothing_to_mutate():
    helper()

def test_approx():
    assert f() == pytest.approx(1.5)
"""


def _namespace(**values: object) -> dict[str, object]:
    return {"pytest": pytest, **values}


def test_functions_keep_their_lines_and_decorators() -> None:
    found = functions_in(SOURCE)
    assert set(found) == {"test_a", "TestB::test_c", "test_nothing_to_mutate", "test_approx"}
    first = found["test_a"]
    assert first.start == 4 and first.text.startswith("@pytest.mark.parametrize")
    for function in found.values():
        for twin in function.twins:
            # same number of lines: every replacement is padded inside its parentheses
            assert twin.text.count("\n") == function.text.count("\n"), twin
            indent = "if 1:\n" if function.text.startswith(" ") else ""
            compile(indent + twin.text, "t.py", "exec")
    assert found["test_nothing_to_mutate"].twins == ()
    kinds = [(t.kind, t.line) for t in first.twins]
    assert kinds == [
        ("value", 6),
        ("fresh", 6),
        ("value", 7),  # a negated comparison: value and fresh are one twin
        ("value", 8),
        ("fresh", 8),
        ("raise", 6),
    ]


def _run(text: str, name: str, f: object) -> None:
    namespace = _namespace(f=f, helper=lambda: None)
    exec(compile(text, "t.py", "exec"), namespace)
    function = namespace[name]
    assert callable(function)
    function()


def test_every_twin_fails_for_an_honest_function_and_passes_for_an_always_equal_one() -> None:
    found = functions_in("def test_eq():\n    assert f() == 'abc'\n")
    (value, fresh, raise_) = found["test_eq"].twins

    class AnyStr(str):
        def __eq__(self, other: object) -> bool:
            return isinstance(other, str)

        __hash__ = str.__hash__

    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    for twin in (value, fresh, raise_):
        with pytest.raises(AssertionError):
            _run(twin.text, "test_eq", lambda: "abc")
    _run(value.text, "test_eq", AnyStr)  # a lenient __eq__ of the right type survives value
    with pytest.raises(AssertionError):
        _run(fresh.text, "test_eq", AnyStr)  # ... but not a fresh object
    _run(fresh.text, "test_eq", Anything)
    with pytest.raises(AssertionError):
        _run(raise_.text, "test_eq", Anything)  # nothing survives the raise but a forgery


@pytest.mark.parametrize(
    ("expected", "honest"),
    [
        ("42", 42),
        ("2.5", 2.5),
        ("True", True),
        ("[1, 2]", [1, 2]),
        ("{'a': 1}", {"a": 1}),
        ("(1,)", (1,)),
        ("b'x'", b"x"),
        ("None", None),
        ("{1}", {1}),
    ],
)
def test_value_twin_changes_the_value_keeping_the_type(expected: str, honest: object) -> None:
    found = functions_in(f"def test_v():\n    assert f() == {expected}\n")
    value = found["test_v"].twins[0]
    assert value.kind == "value"
    with pytest.raises(AssertionError):
        _run(value.text, "test_v", lambda: honest)


def test_approx_target_moves_past_its_tolerance() -> None:
    twins = functions_in(SOURCE)["test_approx"].twins
    value = next(t for t in twins if t.kind == "value")
    with pytest.raises(AssertionError):
        _run(value.text, "test_approx", lambda: 1.5)


def test_unittest_calls_are_rewritten() -> None:
    twins = functions_in(SOURCE)["TestB::test_c"].twins
    texts = {(t.kind, t.line): t.text for t in twins}
    assert "__import__('builtins').object()" in texts[("fresh", 15)]
    assert "assertIn)(1, f())" in texts[("value", 16)]
    assert texts[("raise", 15)].count("raise AssertionError(") == 2


def test_an_unparsable_file_is_refused() -> None:
    with pytest.raises(SyntaxError):
        functions_in("def broken(:\n")


def test_function_of_strips_the_file_and_parameters() -> None:
    assert function_of("tests/t.py::C::test_x[1-2]") == "C::test_x"
    assert function_of("tests/t.py::test_y") == "test_y"
