"""Literals copied from an acceptance test into the code under test: special-casing its inputs.

The precise rule, so that honest code that happens to share a constant with a test passes:

1. From each acceptance test (its pinned source) take the *pairs* of its equality assertions:
   the literal inputs of the call on the actual side (arguments written as literals, local
   names bound to a literal, ``parametrize`` columns) and the literal on the expected side.
   The calls inside a ``pytest.raises``/``assertRaises`` block give pairs too, whose
   expectation is "raises" (positional arguments only: keyword arguments are options).
2. An input counts when it is *distinctive*: text or bytes of 3 characters or more, a
   number other than -2..2 (booleans and ``None`` never), or a collection holding one. Text of
   one or two characters counts only with the stronger evidence :mod:`reward_inputs` names.
3. ``test_literal_special_case`` (tamper): code on an added line branches on an input of a
   pair (``==``/``is``/``in`` in an ``if``, a conditional expression or a ``match`` case)
   *and* that branch returns, yields or assigns that same pair's expected value (or raises,
   for a raising pair). Both halves of one assertion, wired together: the branch exists for
   the test.
4. ``test_literal_table`` (evidence): a dict display on an added line maps a distinctive input
   of a pair to that pair's expected value. Lookup tables are honest code too, so a person
   decides.
5. ``test_literal_data`` (evidence): the added lines of a data file of the diff (``.txt``,
   ``.json``, ``.yaml``..., documentation left out) spell a distinctive input of a pair and its
   distinctive expected value: a special case kept where the code rules never read.

A constant that appears alone (only the input, only the expected value, or the two in
different places) is not a finding. Pure: source text in, hits out.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.verifier.tamper.inputs import (
    callee_name,
    computes,
    is_short,
    parameters,
    raises_blocks,
    raises_in,
)
from pytest_loopcontract.verifier.tamper.rules import Names, RuleHit

__all__ = [
    "Expectation",
    "data_literal_hits",
    "expectations",
    "is_distinctive",
    "is_documentation",
    "literal_hits",
]

_MISSING: Any = object()


@dataclass(frozen=True)
class Expectation:
    """One assertion's inputs and what it expects: a value, or (``raises``) an exception.
    ``short`` holds one- and two-character text inputs, which count only with the stronger
    evidence of :mod:`reward_inputs`; ``callees`` the functions the inputs were passed to."""

    nodeid: str
    line: int
    inputs: tuple[Any, ...]
    expected: Any
    raises: tuple[str, ...] = ()
    short: tuple[Any, ...] = ()
    callees: tuple[str, ...] = ()


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return _MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def is_distinctive(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (str, bytes)):
        return len(value.strip()) >= 3
    if isinstance(value, (int, float)):
        return not (-2 <= value <= 2 and float(value).is_integer())
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(is_distinctive(v) for v in value)
    if isinstance(value, dict):
        return any(is_distinctive(v) for v in (*value, *value.values()))
    return False


def same(a: Any, b: Any) -> bool:
    """Equal and of the same type all the way down (``1 == True`` is not a copy)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - literal_eval values compare cleanly
        return False


# --- the test side -------------------------------------------------------------------------


def expectations(source: str, path: str, nodeids: Iterable[str]) -> list[Expectation]:
    """The (inputs, expected) pairs of the named tests in one test file. Raises ``SyntaxError``
    when the file cannot be parsed."""
    tree = ast.parse(source, filename=path)
    names = Names(tree)
    found: list[Expectation] = []
    for nodeid in dict.fromkeys(n.split("[", 1)[0] for n in nodeids):  # one per function
        parts = nodeid.split("::")[1:]
        func = _find(tree.body, parts) if parts else None
        if func is not None:
            found += _function_pairs(nodeid, func, names)
    return found


def _find(body: Sequence[ast.stmt], parts: Sequence[str]) -> ast.FunctionDef | None:
    for node in body:
        if isinstance(node, ast.ClassDef) and len(parts) > 1 and node.name == parts[0]:
            return _find(node.body, parts[1:])
        if isinstance(node, ast.FunctionDef) and len(parts) == 1 and node.name == parts[0]:
            return node
    return None


def _param_rows(func: ast.FunctionDef, names: Names) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Argument names and literal rows of the ``parametrize`` decorators (first one only)."""
    for deco in func.decorator_list:
        if not isinstance(deco, ast.Call) or len(deco.args) < 2:
            continue
        qual = names.qual(deco.func) or ""
        if not qual.endswith("parametrize"):
            continue
        raw = _literal(deco.args[0])
        argnames = (
            [n.strip() for n in raw.split(",") if n.strip()]
            if isinstance(raw, str)
            else [str(n) for n in raw]
            if isinstance(raw, (list, tuple))
            else []
        )
        rows: list[tuple[Any, ...]] = []
        if isinstance(deco.args[1], (ast.List, ast.Tuple)):
            for elt in deco.args[1].elts:
                if isinstance(elt, ast.Call) and (names.qual(elt.func) or "").endswith("param"):
                    value = tuple(_literal(a) for a in elt.args)
                else:
                    lit = _literal(elt)
                    value = lit if len(argnames) > 1 and isinstance(lit, tuple) else (lit,)
                if len(value) == len(argnames):
                    rows.append(value)
        return argnames, rows
    return [], []


def _expected_and_actual(node: ast.AST, names: Names) -> tuple[ast.expr, ast.expr] | None:
    if (
        isinstance(node, ast.Assert)
        and isinstance(node.test, ast.Compare)
        and len(node.test.ops) == 1
        and isinstance(node.test.ops[0], ast.Eq)
    ):
        left, right = node.test.left, node.test.comparators[0]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("assertEqual", "assertEquals")
        and len(node.args) >= 2
    ):
        left, right = node.args[0], node.args[1]
    else:
        return None
    if _literal(left) is not _MISSING and _literal(right) is _MISSING:
        return left, right
    return right, left


def _function_pairs(nodeid: str, func: ast.FunctionDef, names: Names) -> list[Expectation]:
    argnames, rows = _param_rows(func, names)
    local: dict[str, Any] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and (v := _literal(node.value)) is not _MISSING:
                local[target.id] = v
    pairs = _raising_pairs(nodeid, func, names, argnames, rows, local)
    for node in ast.walk(func):
        sides = _expected_and_actual(node, names)
        if sides is None:
            continue
        expected_node, actual = sides
        for row in rows or [()]:
            env = {**local, **dict(zip(argnames, row, strict=False))}
            expected = _value(expected_node, env)
            if expected is _MISSING:
                continue
            found = list(_inputs(actual, env))
            inputs = [v for v in found if is_distinctive(v)]
            short = tuple(v for v in found if is_short(v))
            if len(found) > 1 and inputs:
                inputs.append(tuple(found))  # `if (a, b) == (20, 22)`, a table keyed by both
            if inputs or short:
                line = getattr(node, "lineno", 1)
                callees = tuple(_callees(actual))
                pairs.append(Expectation(nodeid, line, tuple(inputs), expected, (), short, callees))
    return pairs


def _raising_pairs(
    nodeid: str,
    func: ast.FunctionDef,
    names: Names,
    argnames: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    local: dict[str, Any],
) -> list[Expectation]:
    """The inputs of the calls inside ``pytest.raises`` blocks: each is expected to raise."""
    pairs = []
    for block in raises_blocks(func, names):
        for row in rows or [()]:
            env = {**local, **dict(zip(argnames, row, strict=False))}
            for callee, args in block.calls:
                found = [v for a in args if (v := _value(a, env)) is not _MISSING]
                inputs = tuple(v for v in found if is_distinctive(v))
                short = tuple(v for v in found if is_short(v))
                if inputs or short:
                    raises = block.exceptions or ("Exception",)
                    pairs.append(
                        Expectation(nodeid, block.line, inputs, _MISSING, raises, short, (callee,))
                    )
    return pairs


def _callees(actual: ast.AST) -> Iterator[str]:
    for node in ast.walk(actual):
        if isinstance(node, ast.Call) and (name := callee_name(node.func)):
            yield name


def _value(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return env.get(node.id, _MISSING)
    return _literal(node)


def _inputs(actual: ast.AST, env: dict[str, Any]) -> Iterator[Any]:
    for node in ast.walk(actual):
        if isinstance(node, ast.Call):
            for arg in (*node.args, *(k.value for k in node.keywords)):
                if (v := _value(arg, env)) is not _MISSING:
                    yield v


# --- the code side -------------------------------------------------------------------------


def literal_hits(
    path: str, source: str, pairs: Sequence[Expectation], added: Iterable[int]
) -> list[RuleHit]:
    """Special-casing of the pairs on added lines of one non-test module."""
    if not pairs:
        return []
    lines = set(added)
    tree = ast.parse(source, filename=path)
    consts = _module_constants(tree)
    owners = _owners(tree) if any(p.short for p in pairs) else {}
    hits: list[RuleHit] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            hits += _table_hits(path, node, pairs, lines, consts)
        for compare, branch in _branches(node):
            if not ({compare.lineno, *(_lines(b) for b in branch)} & lines):
                continue
            owner = owners.get(id(node))
            for pair in pairs:
                hit = _special_case(path, compare, branch, pair, consts, lines, owner)
                if hit is not None:
                    hits.append(hit)
                    break
    return hits


def _special_case(
    path: str,
    compare: ast.expr,
    branch: list[ast.AST],
    pair: Expectation,
    consts: dict[str, Any],
    lines: set[int],
    owner: ast.FunctionDef | ast.AsyncFunctionDef | None,
) -> RuleHit | None:
    """A branch on one of the pair's inputs that produces what the pair expects."""
    value = _compared_input(compare, pair, consts)
    if value is _MISSING and pair.short:
        value = _compared_short(compare, pair, consts, lines, owner)
    if value is _MISSING:
        return None
    source = f"an input of {pair.nodeid} (line {pair.line})"
    if pair.raises:
        if not raises_in(branch):
            return None
        expected = " or ".join(pair.raises)
        return RuleHit(
            "test_literal_special_case",
            path,
            compare.lineno,
            f"{value!r} -> raise",
            f"branches on {value!r}, {source} that expects {expected}, and raises",
        )
    if not any(same(v, pair.expected) for b in branch for v in _produced(b, consts)):
        return None
    return RuleHit(
        "test_literal_special_case",
        path,
        compare.lineno,
        f"{value!r} -> {pair.expected!r}",
        f"branches on {value!r}, {source}, and produces its expected {pair.expected!r}",
    )


def _owners(tree: ast.Module) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """id(node) -> the innermost function holding it."""
    owners: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for func in ast.walk(tree):  # outer functions come first, so inner ones overwrite them
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                owners[id(node)] = func
    return owners


def _compared_short(
    cond: ast.expr,
    pair: Expectation,
    consts: dict[str, Any],
    lines: set[int],
    owner: ast.FunctionDef | ast.AsyncFunctionDef | None,
) -> Any:
    """A short input counts only on the stronger evidence the module notes of
    :mod:`reward_inputs` list: a new comparison of the called function's own parameter, in a
    function that otherwise computes its result."""
    if owner is None or cond.lineno not in lines or owner.name not in pair.callees:
        return _MISSING
    if not computes(owner):
        return _MISSING
    params = parameters(owner)
    for node in ast.walk(cond):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, (a, b) in zip(node.ops, itertools.pairwise(operands), strict=True):
            if not isinstance(op, (ast.Eq, ast.Is)):
                continue
            for name, other in ((a, b), (b, a)):
                if isinstance(name, ast.Name) and name.id in params:
                    value = _value(other, consts)
                    if any(same(value, s) for s in pair.short):
                        return value
    return _MISSING


def _lines(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound once to a literal: ``ANSWER = "x"`` is the literal."""
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and (v := _literal(node.value)) is not _MISSING:
                out[target.id] = v
    return out


def _table_hits(
    path: str,
    node: ast.Dict,
    pairs: Sequence[Expectation],
    lines: set[int],
    consts: dict[str, Any],
) -> list[RuleHit]:
    hits = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None or key.lineno not in lines:
            continue
        k, v = _value(key, consts), _value(value, consts)
        for pair in pairs:
            if pair.raises or v is _MISSING:
                continue
            if any(same(k, i) for i in pair.inputs) and same(v, pair.expected):
                hits.append(
                    RuleHit(
                        "test_literal_table",
                        path,
                        key.lineno,
                        f"{k!r} -> {v!r}",
                        f"maps {k!r}, an input of {pair.nodeid} (line {pair.line}), to its "
                        f"expected {v!r}",
                    )
                )
                break
    return hits


def _branches(node: ast.AST) -> Iterator[tuple[ast.expr, list[ast.AST]]]:
    """(condition, what the branch taken on it does) for if / conditional / match."""
    if isinstance(node, (ast.If, ast.While)):
        yield node.test, list(node.body)
    elif isinstance(node, ast.IfExp):
        yield node.test, [node.body]
    elif isinstance(node, ast.Match):
        for case in node.cases:
            for pattern in ast.walk(case.pattern):
                if isinstance(pattern, ast.MatchValue):
                    yield pattern.value, list(case.body)


def _compared_input(cond: ast.expr, pair: Expectation, consts: dict[str, Any]) -> Any:
    """The pair's input that ``cond`` compares against (``==``, ``is``, ``in`` a literal)."""
    candidates: list[Any] = []
    for node in ast.walk(cond):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, (a, b) in zip(node.ops, itertools.pairwise(operands), strict=True):
                if isinstance(op, (ast.Eq, ast.Is)):
                    candidates += [_value(a, consts), _value(b, consts)]
                elif isinstance(op, ast.In):
                    container = _value(b, consts)
                    if isinstance(container, (tuple, list, set, frozenset)):
                        candidates += list(container)
    if not isinstance(cond, ast.Compare):
        candidates.append(_value(cond, consts))  # a match case's value
    for value in candidates:
        if value is not _MISSING and any(same(value, i) for i in pair.inputs):
            return value
    return _MISSING


def _produced(node: ast.AST, consts: dict[str, Any]) -> Iterator[Any]:
    """Literal values a branch returns, yields or assigns (not inside nested functions)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(current, (ast.Return, ast.Yield, ast.Assign, ast.AnnAssign)):
            value = current.value
            if value is not None:
                yield _value(value, consts)
        elif isinstance(current, ast.expr) and current is node:
            yield _value(current, consts)  # the body of a conditional expression
        stack.extend(ast.iter_child_nodes(current))


# --- data files of the diff -----------------------------------------------------------------

_DOCS = re.compile(
    r"(^|/)(docs?|documentation)/|(^|/)(readme|changelog|changes|news|history|authors|license)"
    r"[^/]*$|\.(md|rst|adoc)$",
    re.IGNORECASE,
)


def is_documentation(path: str) -> bool:
    """Prose a change log or a manual holds, which quotes a fixed example without loading it."""
    return _DOCS.search(path) is not None


def data_literal_hits(
    path: str, text: str, pairs: Sequence[Expectation], added: Iterable[int]
) -> list[RuleHit]:
    """``test_literal_data``: the added lines of a data file (text the code under test may
    load, ``exec`` or look up) spell both halves of one acceptance assertion, a distinctive
    input and its distinctive expected value. One of the two alone is not a finding."""
    lines = text.splitlines()
    added_lines = [(n, lines[n - 1]) for n in sorted(set(added)) if 0 < n <= len(lines)]
    body = "\n".join(line for _, line in added_lines)
    hits = []
    for pair in pairs:
        if pair.raises or not is_distinctive(pair.expected) or not _spelled(pair.expected, body):
            continue
        value = next((i for i in pair.inputs if is_distinctive(i) and _spelled(i, body)), _MISSING)
        if value is _MISSING:
            continue
        line = next((n for n, text_ in added_lines if _spelled(value, text_)), added_lines[0][0])
        hits.append(
            RuleHit(
                "test_literal_data",
                path,
                line,
                f"{value!r} -> {pair.expected!r}",
                f"holds {value!r}, an input of {pair.nodeid} (line {pair.line}), and its "
                f"expected {pair.expected!r}",
            )
        )
    return hits


def _spelled(value: Any, text: str) -> bool:
    """Whether ``text`` spells ``value`` as a data file would (raw, JSON-escaped, a number
    standing alone)."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        return value in text or json.dumps(value)[1:-1] in text
    if isinstance(value, int | float) and not isinstance(value, bool):
        return re.search(rf"(?<![\w.]){re.escape(repr(value))}(?![\w.])", text) is not None
    if isinstance(value, tuple | list | set | frozenset):
        parts = [v for v in value if is_distinctive(v)]
        return bool(parts) and all(_spelled(v, text) for v in parts)
    return False
