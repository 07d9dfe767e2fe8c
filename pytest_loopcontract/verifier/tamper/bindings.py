"""What each global name of a pinned test module must be bound to, read from its pinned source.

Twins catch a forged outcome, not a forged *subject*: a test whose ``slugify`` was rebound to a
private correct copy (while the package stays broken) passes honestly, and so do its twins'
failures. The referee therefore checks, inside the run, that the names a test module's own
statements bind still mean what those statements say (see ``inner/namespace.py``). This module
is the launcher's half, pure: from the pinned bytes, the names bound exactly once at module
level, and how:

- ``import a.b`` binds ``a`` to the module ``a``; ``import a.b as c`` binds ``c`` to ``a.b``;
- ``from m import n as x`` binds ``x`` to the attribute ``n`` of the module ``m`` (relative
  imports resolved inside the run, against the test module's package);
- ``def f(...)`` (undecorated) binds ``f`` to a function whose code starts at its line;
- ``NAME = <literal>`` binds ``NAME`` to an immutable value equal to that literal.

A name bound anywhere else in the module's scope too (twice, in an ``if`` or ``try``, by a
loop, or declared ``global`` in a function) is left out: what it must mean is not one thing. A
module that can bind names dynamically (``exec``, ``globals()``, ``setattr``, ``__dict__``) is
left out whole.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["Binding", "module_bindings"]

IMPORT = "import"  # target: the module's name
FROM = "from"  # target: "<dots><module>:<attribute>"
DEF = "def"  # target: the line the function's code starts at
CONST = "const"  # target: the literal's source text

_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset)


class Binding(NamedTuple):
    name: str
    kind: str
    target: str
    line: int


_DYNAMIC_CALLS = frozenset({"exec", "globals", "locals", "vars", "setattr", "__import__"})


def module_bindings(source: str) -> list[Binding]:
    """The checkable bindings of the module ``source`` (see the module notes); none when the
    module can bind names its statements do not show (``exec``, ``globals()``, ``setattr``,
    a ``__dict__``: mako's lexer tests ``exec`` a class per parse-tree node over the names
    they first bound to ``None``)."""
    tree = ast.parse(source)
    if _binds_dynamically(tree):
        return []
    counts = Counter(_bound_names(tree))
    found = [b for statement in tree.body for b in _bindings(statement)]
    return [b for b in found if counts[b.name] == 1]


def _bindings(statement: ast.stmt) -> Iterator[Binding]:
    line = statement.lineno
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                yield Binding(alias.asname, IMPORT, alias.name, line)
            else:
                top = alias.name.split(".", 1)[0]
                yield Binding(top, IMPORT, top, line)
    elif isinstance(statement, ast.ImportFrom):
        module = "." * statement.level + (statement.module or "")
        for alias in statement.names:
            if alias.name != "*":
                yield Binding(alias.asname or alias.name, FROM, f"{module}:{alias.name}", line)
    elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        if not statement.decorator_list:
            yield Binding(statement.name, DEF, str(line), line)
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Name) and _immutable_literal(statement.value):
            yield Binding(target.id, CONST, ast.unparse(statement.value), line)


def _immutable_literal(node: ast.expr) -> bool:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return _frozen(value)


def _frozen(value: object) -> bool:
    if isinstance(value, tuple | frozenset):
        return all(_frozen(v) for v in value)
    return isinstance(value, _IMMUTABLE)


def _bound_names(tree: ast.Module) -> Iterator[str]:
    """Every binding of a name in the module's own scope, and every ``global`` declaration
    (nested functions and classes have their own scopes, but ``global`` reaches out of them)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            yield from node.names
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                yield node.name
            stack.extend(n for n in ast.walk(node) if isinstance(n, ast.Global))
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".", 1)[0]
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name
        stack.extend(ast.iter_child_nodes(node))


def _binds_dynamically(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _DYNAMIC_CALLS:
                return True
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
    return False
