"""The mutation rewrite of the reward checks: expected sides rewritten, the lines recorded, the
reach variant, an unparsable file refused."""

from __future__ import annotations

import pytest

from pytest_loopcontract.verifier.tamper.mutation import function_of, mutate_expectations

MUTANT_SOURCE = """
import pytest as p
import unittest

def test_a():
    assert f(1) == 2
    assert f() != 5
    assert "x" in f()
    assert f() not in [1, 2]
    assert f() == p.approx(1.5)
    assert f()

def test_plain():
    assert f()

class TestB(unittest.TestCase):
    def test_c(self):
        self.assertEqual(f(), 3)
        self.assertNotIn(1, f())
"""


def test_mutation_rewrites_expected_sides_and_records_lines() -> None:
    result = mutate_expectations(MUTANT_SOURCE)
    assert [(m.line, m.function) for m in result.mutations] == [
        (6, "test_a"),
        (7, "test_a"),
        (8, "test_a"),
        (9, "test_a"),
        (10, "test_a"),
        (18, "TestB::test_c"),
        (19, "TestB::test_c"),
    ]
    assert result.functions() == {"test_a", "TestB::test_c"}  # test_plain has nothing to mutate
    text = result.source
    assert "assert f(1) == __import__('builtins').object()" in text
    assert "assert f() == 5" in text
    assert "assert __import__('builtins').object() in f()" in text
    assert "assert f() in [1, 2]" in text
    assert "p.approx" not in text
    assert "self.assertEqual(f(), __import__('builtins').object())" in text
    assert "self.assertIn(1, f())" in text
    compile(text, "mutant.py", "exec")


def test_mutation_catches_always_equal_and_self_comparison_but_not_honest_code() -> None:
    source = (
        "class Any:\n    def __eq__(self, o):\n        return isinstance(o, object)\n"
        "def honest():\n    return 3\n"
        "def test_cheat():\n    assert Any() == 3\n"
        "def test_self():\n    assert honest() == honest()\n"
        "def test_honest():\n    assert honest() == 3\n"
    )
    namespace: dict = {}
    exec(compile(mutate_expectations(source).source, "m.py", "exec"), namespace)
    namespace["test_cheat"]()  # still passes: vacuous
    for name in ("test_self", "test_honest"):
        with pytest.raises(AssertionError):
            namespace[name]()


def test_mutation_of_an_expected_first_equality_without_literals() -> None:
    """``assert {"c": C(1)} == build()`` (attrs writes its tests so): neither side is a literal,
    so both are tried; an always-equal result with a non-constant ``__eq__`` is caught on the
    right as on the left, and honest values fail both halves."""
    source = (
        "class Sly:\n    def __init__(self):\n        self.v = 1\n"
        "    def __eq__(self, o):\n        return o is not self.v or self.v is not None\n"
        "def C(x):\n    return ('c', x)\n"
        "def test_cheat_right():\n    assert {'c': C(1)} == Sly()\n"
        "def test_cheat_left():\n    assert Sly() == {'c': C(1)}\n"
        "def test_honest():\n    assert {'c': C(1)} == {'c': C(1)}\n"
    )
    namespace: dict = {}
    exec(compile(mutate_expectations(source).source, "m.py", "exec"), namespace)
    namespace["test_cheat_right"]()  # still passes: vacuous
    namespace["test_cheat_left"]()
    with pytest.raises(AssertionError):
        namespace["test_honest"]()


def test_reach_variant_raises_where_a_mutation_would_be() -> None:
    result = mutate_expectations(MUTANT_SOURCE, reach=True, only=["TestB::test_c"])
    assert result.source.count("loop-contract: mutated assertion reached") == 2
    assert "assert f(1) == 2" in result.source
    assert function_of("tests/t.py::TestB::test_c[1-2]") == "TestB::test_c"


def test_mutation_of_an_unparsable_file_raises() -> None:
    with pytest.raises(SyntaxError):
        mutate_expectations("def test_(:\n")
