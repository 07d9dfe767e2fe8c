"""Inside the run: do a test module's global names still mean what its pinned source says?

The launcher reads the bindings from the pinned file (``verifier/tamper/bindings.py``); here
they are resolved against the live process after collection and around every acceptance test.
A value *equivalent* to the one expected is not a rebinding: an honest suite that reloads a
module (``importlib.reload``) leaves the test module holding the old function, which has the
same code from the same file. A private copy has other code, or code from another file.
Standard library only.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["rebound"]

_MISSING = object()


def rebound(module: types.ModuleType, bindings: Sequence[Sequence[Any]]) -> list[tuple[str, str]]:
    """``(name, what it is bound to instead)`` for each binding of ``module`` that no longer
    holds; bindings whose expected value cannot be resolved (a module gone from
    ``sys.modules`` by the suite's own doing) are skipped, never guessed."""
    names = vars(module)
    problems = []
    for name, kind, target, _line in bindings:
        got = names.get(name, _MISSING)
        problem = _check(module, str(kind), str(target), got)
        if problem:
            problems.append((str(name), problem))
    return problems


def _check(module: types.ModuleType, kind: str, target: str, got: Any) -> str:
    if got is _MISSING:
        return "deleted from the module"
    if kind == "const":
        want = ast.literal_eval(target)
        same = type(got) is type(want) and got == want
        return "" if same else f"a {type(got).__name__} other than {target}"
    if kind == "def":
        return _check_def(module, int(target), got)
    want = _expected(module, kind, target)
    if want is _MISSING or _equivalent(got, want):
        return ""
    return f"{_describe(got)} where the import gives {_describe(want)}"


def _check_def(module: types.ModuleType, line: int, got: Any) -> str:
    code = getattr(got, "__code__", None)
    if not isinstance(code, types.CodeType):
        return f"{_describe(got)}, not the function defined at line {line}"
    if code.co_firstlineno != line or not _same_file(code.co_filename, module.__file__):
        return f"{_describe(got)}, not the function defined at line {line}"
    return ""


def _expected(module: types.ModuleType, kind: str, target: str) -> Any:
    """What the import statement would bind now, from ``sys.modules``."""
    if kind == "import":
        return sys.modules.get(target, _MISSING)
    dotted, _, attribute = target.rpartition(":")
    try:
        name = importlib.util.resolve_name(dotted, module.__package__ or None)
    except (ImportError, ValueError):
        return _MISSING
    source = sys.modules.get(name)
    if source is None:
        return _MISSING
    value = getattr(source, attribute, _MISSING)
    if value is _MISSING:  # ``from pkg import sub``: the submodule itself
        value = sys.modules.get(f"{name}.{attribute}", _MISSING)
    return value


def _equivalent(got: Any, want: Any) -> bool:
    """``got`` is ``want``, or the same definition loaded again (a reloaded module's)."""
    if got is want:
        return True
    if type(got) is not type(want):
        return False
    if isinstance(got, types.ModuleType):
        return bool(got.__name__ == want.__name__ and _same_file(got.__file__, want.__file__))
    code, other = _code_of(got), _code_of(want)
    if code is not None and other is not None:
        return (
            code.co_code == other.co_code
            and code.co_firstlineno == other.co_firstlineno
            and _same_file(code.co_filename, other.co_filename)
        )
    if isinstance(got, type):
        return bool(got.__qualname__ == want.__qualname__ and got.__module__ == want.__module__)
    try:
        return bool(want == got)  # the expected object's own equality decides
    except Exception:
        return False


def _code_of(value: Any) -> types.CodeType | None:
    function = getattr(value, "__func__", value)
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def _same_file(one: str | None, other: str | None) -> bool:
    if not one or not other:
        return one == other
    return os.path.realpath(one) == os.path.realpath(other)


def _describe(value: Any) -> str:
    code = _code_of(value)
    if code is not None:
        name = getattr(value, "__qualname__", type(value).__name__)
        return f"{name} from {os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    return f"a {type(value).__name__}"
