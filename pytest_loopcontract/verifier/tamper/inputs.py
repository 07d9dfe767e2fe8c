"""Two more shapes of special-casing that :mod:`reward_literals` checks, kept apart here.

1. **Inputs expected to raise.** ``with pytest.raises(E): f("2003-13-45")`` (also
   ``pytest.raises(E, f, "2003-13-45")``, ``self.assertRaises``/``assertRaisesRegex`` in both
   forms) pairs the literal positional arguments of the calls in the block with "raises". The
   cheat it catches is ``if s == "2003-13-45": raise ValueError`` in the library: a branch on
   the test's distinctive input whose body raises. Keyword arguments are left out: they are
   options, and an option that turns raising on (``control_codes="strict"`` in wcwidth, whose
   code says ``if control_codes == "strict": raise ValueError(...)``) is honest code.
2. **Short inputs need stronger evidence.** Text of one or two characters (``"コン"`` for a
   width function, ``"0x"``, ``"a"``) is too common to count as copied on its own. It counts
   only when all of these hold: the comparison is on an added line (a new branch, not an old
   one with a new body); it compares a *parameter* of the enclosing function; that function has
   the name of the function the test called with the literal; the branch produces that same
   test's expected value; and the function also returns something computed (the branch
   short-cuts a general computation, as special-casing does, rather than being one entry of a
   function that is all literals, as a prefix table is). The empty string never counts.

Pure: syntax trees in, values out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.verifier.tamper.rules import Names

__all__ = [
    "RaisesBlock",
    "callee_name",
    "computes",
    "is_short",
    "parameters",
    "raises_blocks",
    "raises_in",
]


@dataclass(frozen=True)
class RaisesBlock:
    """One place a test expects an exception: its line, the exception names, and the calls
    (callee name, argument expressions) whose literal arguments are the raising inputs."""

    line: int
    exceptions: tuple[str, ...]
    calls: tuple[tuple[str, tuple[ast.expr, ...]], ...]


def is_short(value: Any) -> bool:
    """Non-empty text or bytes of fewer than three characters (after stripping)."""
    return isinstance(value, (str, bytes)) and 0 < len(value.strip()) < 3


def callee_name(func: ast.AST) -> str:
    """``wcwidth.wcswidth`` -> ``wcswidth``; ``f`` -> ``f``; anything else -> ``""``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_raises(call: ast.Call, names: Names) -> bool:
    qual = names.qual(call.func) or ""
    if qual == "pytest.raises" or qual.endswith(".pytest.raises"):
        return True
    return isinstance(call.func, ast.Attribute) and call.func.attr in (
        "assertRaises",
        "assertRaisesRegex",
        "assertRaisesRegexp",
    )


def _exception_names(node: ast.expr) -> tuple[str, ...]:
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return tuple(name for part in parts if (name := callee_name(part)))


def _calls(body: Sequence[ast.AST]) -> tuple[tuple[str, tuple[ast.expr, ...]], ...]:
    out = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                out.append((callee_name(node.func), tuple(node.args)))
    return tuple(out)


def raises_blocks(func: ast.FunctionDef, names: Names) -> Iterator[RaisesBlock]:
    """Every ``raises`` expectation in one test function, in both spellings."""
    for node in ast.walk(func):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                ctx = item.context_expr
                if isinstance(ctx, ast.Call) and ctx.args and _is_raises(ctx, names):
                    yield RaisesBlock(node.lineno, _exception_names(ctx.args[0]), _calls(node.body))
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and _is_raises(node, names):
            call = ((callee_name(node.args[1]), tuple(node.args[2:])),)
            yield RaisesBlock(node.lineno, _exception_names(node.args[0]), call)


def raises_in(branch: Sequence[ast.AST]) -> bool:
    """Whether a branch raises (not inside a nested function or class)."""
    stack = list(branch)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(current, ast.Raise) and current.exc is not None:
            return True
        stack.extend(ast.iter_child_nodes(current))
    return False


def parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    names += [x for x in (a.vararg, a.kwarg) if x is not None]
    return {n.arg for n in names}


def computes(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function returns something that is not a literal (a computed value)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            try:
                ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return True
    return False
