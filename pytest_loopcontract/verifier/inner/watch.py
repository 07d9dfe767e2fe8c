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
from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["WATCH_PROPERTY", "PatchWatch"]

WATCH_PROPERTY = "loop_patched"
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
    obj: Any = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _snapshot() -> dict[str, int]:
    taken: dict[str, int] = {}
    for module, dotted in WATCHED:
        try:
            taken[f"{module}.{dotted}"] = id(_lookup(module, dotted))
        except (ImportError, AttributeError):
            continue
    for name, value in vars(builtins).items():
        if name not in _UNWATCHED_BUILTINS:
            taken[f"builtins.{name}"] = id(value)
    return taken


class PatchWatch:
    """Compares the watched identities with the ones taken at load; first change wins.

    Changes travel on the test's user_properties (its teardown report), so they reach the
    controller from pytest-xdist workers too.
    """

    def __init__(self) -> None:
        self.reference = _snapshot()
        # Hold the objects too, so an id is never reused by a new object at the same address.
        self._keep = [_lookup(m, d) for m, d in WATCHED if _exists(m, d)]
        self.seen: set[str] = set()
        self.pending: list[dict[str, str]] = []

    def check(self, when: str) -> None:
        now = _snapshot()
        for name, ident in self.reference.items():
            if name not in self.seen and now.get(name) != ident:
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


def _exists(module: str, dotted: str) -> bool:
    try:
        _lookup(module, dotted)
    except (ImportError, AttributeError):
        return False
    return True
