"""Runtime patching: the clocks, builtins and framework objects the verdict depends on.

Code under test that replaces ``time.perf_counter`` (which a timing metric reads), a builtin,
or pytest's reporting and assertion machinery changes what the run measures without touching
a single pinned file. The identities of those objects are taken when this plugin loads (before
any conftest or test module is imported) and compared after collection and after every test;
a test's own ``monkeypatch`` is undone in its teardown, so only a change that outlives the
test that made it is recorded, with the name of that test.
"""

from __future__ import annotations

import builtins
import importlib
import sys
from collections.abc import Generator
from itertools import repeat
from operator import attrgetter, is_not
from types import MethodType
from typing import Any

import pytest

__all__ = ["WATCH_PROPERTY", "PatchWatch"]

WATCH_PROPERTY = "loop_patched"
_MISSING = object()
# Module metadata, and ``_``, which doctest's display hook sets after every example.
_UNWATCHED_BUILTINS = frozenset(
    {"_", "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__debug__"}
)

# (module, dotted attribute) pairs whose identity must not change during the run.
WATCHED: tuple[tuple[str, str], ...] = (
    *(
        ("time", name)
        for name in (
            "time",
            "time_ns",
            "monotonic",
            "monotonic_ns",
            "perf_counter",
            "perf_counter_ns",
            "process_time",
            "sleep",
        )
    ),
    ("datetime", "datetime"),
    ("datetime", "date"),
    ("os", "_exit"),
    ("sys", "exit"),
    ("pytest", "approx"),
    ("pytest", "raises"),
    ("pytest", "skip"),
    ("pytest", "fail"),
    ("pytest", "xfail"),
    ("_pytest.runner", "call_and_report"),
    ("_pytest.runner", "runtestprotocol"),
    ("_pytest.runner", "CallInfo.from_call"),
    ("_pytest.reports", "TestReport.from_item_and_call"),
    ("_pytest.reports", "TestReport.__init__"),
    ("_pytest.python", "Function.runtest"),
    ("_pytest.python", "pytest_pyfunc_call"),
    ("_pytest.assertion.rewrite", "rewrite_asserts"),
    ("_pytest.assertion.util", "assertrepr_compare"),
    ("unittest.case", "TestCase.run"),
    ("unittest.case", "TestCase.assertEqual"),
    ("unittest.case", "TestCase.assertTrue"),
)


def _lookup(module: str, dotted: str) -> Any:
    """The watched object; a bound method (a classmethod looked up on its class is a new
    object at every lookup) stands for the function it binds, which is what a patch replaces."""
    obj: Any = sys.modules.get(module)
    if obj is None:
        obj = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return _unbound(obj)


def _unbound(obj: Any) -> Any:
    return obj.__func__ if isinstance(obj, MethodType) else obj


def _bound(module: str, dotted: str) -> bool:
    obj: Any = sys.modules[module]
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return isinstance(obj, MethodType)


def _watched() -> dict[str, Any]:
    """Everything watched, by name, as it is now (what is missing is left out)."""
    taken: dict[str, Any] = {}
    for module, dotted in WATCHED:
        try:
            taken[f"{module}.{dotted}"] = _lookup(module, dotted)
        except (ImportError, AttributeError):
            continue
    for name, value in vars(builtins).items():
        if name not in _UNWATCHED_BUILTINS:
            taken[f"builtins.{name}"] = value
    return taken


class PatchWatch:
    """Compares the watched objects with the ones taken at load; first change wins.

    The reference holds the objects themselves (so no address is ever reused by a new object)
    and the check after each test is one pass of ``is`` over them; only when something differs
    are the names resolved one by one. Changes travel on the test's user_properties (its
    teardown report), so they reach the controller from pytest-xdist workers too.
    """

    def __init__(self) -> None:
        taken = _watched()
        self.names = tuple(taken)
        self.reference = tuple(taken.values())
        # A bound method's function is read through ``__func__``, so a replacement that is
        # not a bound method any more fails the fast path and goes to the slow one.
        self._getters = tuple(
            (module, attrgetter(dotted + ".__func__" if _bound(module, dotted) else dotted))
            for module, dotted in WATCHED
            if f"{module}.{dotted}" in taken
        )
        self._builtins = tuple(
            n[len("builtins.") :] for n in self.names if n.startswith("builtins.")
        )
        self.seen: set[str] = set()
        self.pending: list[dict[str, str]] = []

    def _unchanged(self) -> bool:
        """Whether every watched object is still the one taken at load (the fast path)."""
        modules = sys.modules
        try:
            now = [getter(modules[module]) for module, getter in self._getters]
        except (KeyError, AttributeError):
            return False
        now += map(vars(builtins).get, self._builtins, repeat(_MISSING))
        return not any(map(is_not, now, self.reference))

    def check(self, when: str) -> None:
        if self._unchanged():
            return
        current = _watched()
        for name, ref in zip(self.names, self.reference, strict=True):
            if name not in self.seen and (name not in current or current[name] is not ref):
                self.seen.add(name)
                self.pending.append({"object": name, "during": when})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.check("collection")

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            self.check(item.nodeid)
            for change in self.pending:
                item.user_properties.append((WATCH_PROPERTY, change))
            self.pending = []
