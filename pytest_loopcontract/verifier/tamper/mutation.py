"""Vacuous-pass mutation: rewrite a test file so that every expectation it asserts is wrong.

A pure syntax-tree rewrite. For each assertion of a supported shape the expected side is
replaced by a value nothing honest equals:

- ``assert a == b``: the expected side (a ``pytest.approx(...)`` call, else the one literal
  side, else the right side) becomes a fresh ``object()``;
- ``assert a != b`` becomes ``assert a == b``; ``not in`` becomes ``in``;
- ``assert a in b``: a literal container becomes ``(object(),)``, else ``a`` becomes
  ``object()``;
- ``self.assertEqual(a, b)`` / ``assertEquals`` / ``assertAlmostEqual``: ``b`` becomes
  ``object()``; ``assertNotEqual`` becomes ``assertEqual``; ``assertIn`` / ``assertNotIn`` as
  ``in`` / ``not in``.

Honest code fails the mutated assertion; an object whose ``__eq__`` always answers yes, or an
assertion that compares a value with itself, still passes it. With ``reach=True`` each mutated
assertion is instead replaced by ``raise AssertionError``: a test that passes even then never
reached the assertion, so its survival proves nothing (inconclusive, not a finding).

Every mutation records its line and the test function it belongs to (``Class::name`` or
``name``, the outermost definition), so the verifier re-runs only the tests it changed.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_loopcontract.verifier.tamper.rules import Names

__all__ = ["MutatedSource", "Mutation", "function_of", "mutate_expectations"]

_EQUAL_CALLS = frozenset({"assertEqual", "assertEquals", "assertAlmostEqual", "assertAlmostEquals"})
_FLIP_CALLS = {"assertNotEqual": "assertEqual", "assertNotEquals": "assertEqual"}
_IN_CALLS = {"assertIn": False, "assertNotIn": True}  # name -> negated


@dataclass(frozen=True)
class Mutation:
    line: int
    function: str
    description: str


@dataclass(frozen=True)
class MutatedSource:
    source: str
    mutations: tuple[Mutation, ...]

    def functions(self) -> set[str]:
        return {m.function for m in self.mutations}


def function_of(nodeid: str) -> str:
    """``tests/t.py::C::test_x[1-2]`` -> ``C::test_x``."""
    return "::".join(nodeid.split("::")[1:]).split("[", 1)[0]


def _either_side_fresh(left: ast.expr, right: ast.expr) -> ast.expr:
    """``(left == object()) or (object() == right)``, for an equality without a literal."""
    return ast.BoolOp(
        ast.Or(),
        [
            ast.Compare(left, [ast.Eq()], [_fresh()]),
            ast.Compare(_fresh(), [ast.Eq()], [right]),
        ],
    )


def _fresh() -> ast.expr:
    """``__import__("builtins").object()``: immune to a test module shadowing ``object``."""
    importer = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("builtins")], [])
    return ast.Call(ast.Attribute(importer, "object", ast.Load()), [], [])


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class _Mutator(ast.NodeTransformer):
    def __init__(self, names: Names, reach: bool, only: set[str] | None) -> None:
        self.names = names
        self.reach = reach
        self.only = only
        self.scope: list[tuple[str, bool]] = []  # (name, is a function)
        self.mutations: list[Mutation] = []

    def _enter(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.scope.append((node.name, not isinstance(node, ast.ClassDef)))
        try:
            return self.generic_visit(node)
        finally:
            self.scope.pop()

    visit_ClassDef = _enter
    visit_FunctionDef = _enter
    visit_AsyncFunctionDef = _enter

    def _function(self) -> str | None:
        """The test this node belongs to: the first function in the class/function chain."""
        chain: list[str] = []
        for name, is_function in self.scope:
            chain.append(name)
            if is_function:
                return "::".join(chain)
        return None

    def _record(self, node: ast.stmt, description: str) -> ast.stmt:
        function = self._function()
        assert function is not None
        self.mutations.append(Mutation(node.lineno, function, description))
        if not self.reach:
            return node
        raise_ = ast.Raise(
            ast.Call(
                ast.Name("AssertionError", ast.Load()),
                [ast.Constant("loop-contract: mutated assertion reached")],
                [],
            ),
            None,
        )
        return ast.copy_location(raise_, node)

    def _wanted(self) -> bool:
        function = self._function()
        return function is not None and (self.only is None or function in self.only)

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        test = node.test
        if not self._wanted() or not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return node
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.Eq):
            if self._is_approx(left) or (_is_literal(left) and not _is_literal(right)):
                test.left = _fresh()
            elif _is_literal(right) or self._is_approx(right):
                test.comparators = [_fresh()]
            else:
                # Neither side is plainly the expectation (``assert expected == actual`` is as
                # common as the reverse): try both at once. An honest pair fails both halves;
                # an always-equal value on either side passes one of them.
                node.test = _either_side_fresh(left, right)
            return self._record(node, "expected side of '==' replaced by a fresh object")
        if isinstance(op, (ast.NotEq, ast.NotIn)):
            test.ops = [ast.Eq() if isinstance(op, ast.NotEq) else ast.In()]
            return self._record(node, "negated comparison flipped")
        if isinstance(op, ast.In):
            self._mutate_in(test, left, right)
            return self._record(node, "membership expectation replaced")
        return node

    def _mutate_in(self, test: ast.Compare, left: ast.expr, right: ast.expr) -> None:
        if _is_literal(right):
            test.comparators = [ast.Tuple([_fresh()], ast.Load())]
        else:
            test.left = _fresh()

    def _is_approx(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and (self.names.qual(node.func) or "").endswith("approx")

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        call = node.value
        if (
            not self._wanted()
            or not isinstance(call, ast.Call)
            or not isinstance(call.func, ast.Attribute)
            or len(call.args) < 2
            or any(isinstance(a, ast.Starred) for a in call.args[:2])
        ):
            return node
        name = call.func.attr
        if name in _EQUAL_CALLS:
            call.args[1] = _fresh()
            return self._record(node, f"{name}: expected argument replaced by a fresh object")
        if name in _FLIP_CALLS:
            call.func.attr = _FLIP_CALLS[name]
            return self._record(node, f"{name} flipped to {_FLIP_CALLS[name]}")
        if name in _IN_CALLS:
            if _IN_CALLS[name]:
                call.func.attr = "assertIn"
                return self._record(node, "assertNotIn flipped to assertIn")
            if _is_literal(call.args[1]):
                call.args[1] = ast.Tuple([_fresh()], ast.Load())
            else:
                call.args[0] = _fresh()
            return self._record(node, "assertIn expectation replaced")
        return node


def mutate_expectations(
    source: str, *, reach: bool = False, only: Sequence[str] | None = None
) -> MutatedSource:
    """The mutated module and what changed; ``only`` limits it to the named test functions.
    Raises ``SyntaxError`` (or ``ValueError`` for null bytes) when the source cannot be parsed.
    """
    tree = ast.parse(source)
    mutator = _Mutator(Names(tree), reach, None if only is None else set(only))
    tree = mutator.visit(tree)
    ast.fix_missing_locations(tree)
    return MutatedSource(ast.unparse(tree) + "\n", tuple(mutator.mutations))
