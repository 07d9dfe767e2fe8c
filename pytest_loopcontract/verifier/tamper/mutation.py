"""Twin sources: a test function's own lines with its expectations made wrong, lines kept.

A pure text rewrite driven by the syntax tree of the *pinned* test file (the candidate never
supplies it). For each test function it gives the function's lines as they are (decorators
first) and a few *twins* of them, each the same lines with assertions changed so that nothing
honest can pass them:

- ``value``: the expected side of one equality keeps its type but not its value (an ``int``
  one more, a ``str`` one character longer, a list one element longer, a ``pytest.approx``
  target moved far past its tolerance); any other assertion is negated;
- ``fresh``: the expected side of one equality becomes a new ``object()``;
- ``raise``: every assertion of the function becomes ``raise AssertionError``.

``value`` catches an ``__eq__`` that accepts any value of the expected type; ``fresh`` one that
accepts anything; ``raise`` a test that passes without reaching an assertion (or any forged
outcome). Unittest's ``assert*`` methods are rewritten the same way (``assertEqual``'s second
argument, the ``Not`` forms flipped). Every replacement keeps the statement on its lines (padded
with newlines inside its parentheses), so a twin compiled at the function's first line reports
the real file and line numbers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["KINDS", "TestFunction", "Twin", "function_of", "test_functions"]

KINDS = ("value", "fresh", "raise")
MAX_SITES = 3  # assertions per function that get their own value and fresh twins

_FRESH = "__import__('builtins').object()"
# Same type, other value; anything else becomes a fresh object. Names reach builtins through
# defaults, so a test module that shadows ``type`` or ``abs`` changes nothing.
_SHIFT = (
    "(lambda v, b=__import__('builtins'): "
    "(not v) if b.type(v) is b.bool else "
    "v + 1 if b.type(v) is b.int else "
    "(-v if v * 0 != 0 else v + b.abs(v) + 1.0) if b.type(v) is b.float else "
    "v + '\\u2063' if b.type(v) is b.str else "
    "v + b'\\x00' if b.type(v) is b.bytes else "
    "[*v, *(v[-1:] or [b.object()])] if b.type(v) is b.list else "
    "(*v, *(v[-1:] or (b.object(),))) if b.type(v) is b.tuple else "
    "{**v, b.object(): None} if b.type(v) is b.dict else "
    "v | {b.object()} if b.type(v) in (b.set, b.frozenset) else "
    "b.object())"
)
_EQUAL_CALLS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "assertAlmostEqual",
        "assertAlmostEquals",
        "assertMultiLineEqual",
        "assertSequenceEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertCountEqual",
    }
)
_FLIPS = {
    "assertNotEqual": "assertEqual",
    "assertNotEquals": "assertEqual",
    "assertNotAlmostEqual": "assertAlmostEqual",
    "assertTrue": "assertFalse",
    "assertFalse": "assertTrue",
    "assertIn": "assertNotIn",
    "assertNotIn": "assertIn",
    "assertIs": "assertIsNot",
    "assertIsNot": "assertIs",
    "assertIsNone": "assertIsNotNone",
    "assertIsNotNone": "assertIsNone",
    "assertIsInstance": "assertNotIsInstance",
    "assertNotIsInstance": "assertIsInstance",
    "assertRegex": "assertNotRegex",
    "assertNotRegex": "assertRegex",
    "assertGreater": "assertLessEqual",
    "assertGreaterEqual": "assertLess",
    "assertLess": "assertGreaterEqual",
    "assertLessEqual": "assertGreater",
}


@dataclass(frozen=True)
class Twin:
    kind: str  # one of KINDS
    line: int  # the (first) assertion it changes
    description: str
    text: str  # the function's lines, changed


@dataclass(frozen=True)
class TestFunction:
    """One test function of a pinned file: its lines as they are, and its twins."""

    qualname: str  # ``Class::test_x`` or ``test_x``
    start: int  # the first line (its first decorator)
    text: str
    twins: tuple[Twin, ...]


TestFunction.__test__ = False  # type: ignore[attr-defined]  # not a pytest test class


def function_of(nodeid: str) -> str:
    """``tests/t.py::C::test_x[1-2]`` -> ``C::test_x``."""
    return "::".join(nodeid.split("::")[1:]).split("[", 1)[0]


def test_functions(source: str) -> dict[str, TestFunction]:
    """Every function defined at module level or in a (nested) class, by qualname, with its
    twins. Raises ``SyntaxError`` (``ValueError`` for null bytes) on an unparsable file."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found: dict[str, TestFunction] = {}
    for qualname, node in _definitions(tree.body, ()):
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        own = lines[start - 1 : end]
        sites = sorted(_sites(node), key=lambda s: (s.line, s.raise_.col))
        twins = _twins(own, start, sites)
        found[qualname] = TestFunction(qualname, start, "".join(own), tuple(twins))
    return found


_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _definitions(body: list[ast.stmt], scope: tuple[str, ...]) -> Iterator[tuple[str, _Def]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield from _definitions(node.body, (*scope, node.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield "::".join((*scope, node.name)), node


@dataclass(frozen=True)
class _Edit:
    """Replace the span (line, byte column) .. (end line, end byte column) with ``text``."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


def _span(node: ast.AST, text: str) -> _Edit:
    line, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return _Edit(line, node.col_offset, end, node.end_col_offset or 0, text)  # type: ignore[attr-defined]


def _expr(node: ast.AST, text: str) -> _Edit:
    """An expression replaced, its parentheses padded to the lines it spanned."""
    edit = _span(node, "")
    return _Edit(*_pos(edit), "(" + text + "\n" * (edit.end_line - edit.line) + ")")


def _pos(edit: _Edit) -> tuple[int, int, int, int]:
    return edit.line, edit.col, edit.end_line, edit.end_col


def _src(node: ast.AST) -> str:
    return "(" + ast.unparse(node) + ")"


@dataclass(frozen=True)
class _Site:
    """One assertion: the edits of its value and fresh twins, and its raise."""

    line: int
    value: _Edit
    fresh: _Edit
    raise_: _Edit
    description: str


def _sites(function: _Def) -> Iterator[_Site]:
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            yield _assert_site(node)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr.startswith("assert")
            and not any(isinstance(a, ast.Starred) for a in node.value.args)
        ):
            site = _call_site(node, node.value, node.value.func)
            if site is not None:
                yield site


def _raise(stmt: ast.stmt) -> _Edit:
    edit = _span(stmt, "")
    pad = "\n" * (edit.end_line - edit.line)
    return _Edit(*_pos(edit), f"raise AssertionError({pad})")


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _is_approx(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "approx"


def _assert_site(node: ast.Assert) -> _Site:
    test = node.test
    negated = f"not {_src(test)}"
    value = fresh = _expr(test, negated)
    description = "assertion negated"
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.Eq):
            value, fresh = _equality(test, left, right)
            description = "expected side of '=='"
        elif isinstance(op, ast.In):
            container = _is_literal(right)
            fresh = _expr(right if container else left, f"({_FRESH},)" if container else _FRESH)
            description = "membership expectation"
    return _Site(node.lineno, value, fresh, _raise(node), description)


def _equality(test: ast.Compare, left: ast.expr, right: ast.expr) -> tuple[_Edit, _Edit]:
    """The value and fresh edits of ``left == right``: the approx call, else the literal side,
    else both orientations at once (an honest pair fails both halves)."""
    for expected in (left, right):
        if _is_approx(expected):
            assert isinstance(expected, ast.Call)
            target = expected.args[0]
            return _expr(target, f"{_SHIFT}{_src(target)}"), _expr(expected, _FRESH)
    other = None
    if _is_literal(right):
        other = right
    elif _is_literal(left):
        other = left
    if other is not None:
        return _expr(other, f"{_SHIFT}{_src(other)}"), _expr(other, _FRESH)
    lt, rt = _src(left), _src(right)
    return (
        _expr(test, f"{lt} == {_SHIFT}{rt} or {_SHIFT}{lt} == {rt}"),
        _expr(test, f"{lt} == {_FRESH} or {_FRESH} == {rt}"),
    )


def _call_site(stmt: ast.Expr, call: ast.Call, func: ast.Attribute) -> _Site | None:
    name = func.attr
    if name in _EQUAL_CALLS and len(call.args) >= 2:
        expected = call.args[1]
        value = _expr(expected, f"{_SHIFT}{_src(expected)}")
        fresh = _expr(expected, _FRESH)
        return _Site(stmt.lineno, value, fresh, _raise(stmt), f"{name}: expected argument")
    if name in _FLIPS:
        flipped = _expr(func, f"{_src(func.value)}.{_FLIPS[name]}")
        return _Site(stmt.lineno, flipped, flipped, _raise(stmt), f"{name} flipped")
    return None


def _twins(own: list[str], start: int, sites: list[_Site]) -> list[Twin]:
    if not sites:
        return []
    twins: list[Twin] = []
    seen: set[str] = set()
    for site in sites[:MAX_SITES]:
        for kind, edit in (("value", site.value), ("fresh", site.fresh)):
            text = _apply(own, start, [edit])
            if text not in seen:
                seen.add(text)
                twins.append(Twin(kind, site.line, f"{site.description} ({kind})", text))
    every = _apply(own, start, [s.raise_ for s in sites])
    twins.append(Twin("raise", sites[0].line, "every assertion replaced by a raise", every))
    return twins


def _apply(own: list[str], start: int, edits: list[_Edit]) -> str:
    """``own`` (the lines from ``start``) with non-overlapping ``edits``, last first. Columns
    are UTF-8 byte offsets, as the syntax tree gives them."""
    data = [line.encode("utf-8") for line in own]
    for edit in sorted(edits, key=_pos, reverse=True):
        first, last = edit.line - start, edit.end_line - start
        head = data[first][: edit.col]
        tail = data[last][edit.end_col :]
        replaced = (head + edit.text.encode("utf-8") + tail).splitlines(keepends=True)
        data[first : last + 1] = replaced
    return b"".join(data).decode("utf-8")
