"""The referee's items inside the test process: acceptance tests it compiled, their twins and
canaries, all under names only the launcher can check.

The launcher sends, per acceptance test function, the function's lines from the *pinned* file
and its twins' lines (see ``verifier/tamper/mutation.py``). After collection this plugin:

- replaces each acceptance item by a copy whose function the referee compiled from those lines
  (so a test module rewritten in memory, by an import hook say, is not what runs), and adds
  the twins of each copy at random places after it in its module: every twin must fail;
- adds canaries, tests that must pass and tests that must fail, at random places;
- checks that each acceptance test's module still binds its global names as its pinned source
  says (``namespace.py``), after collection and around each copy's call;
- names all of them ``test_<mac>``: the launcher's key over what each stands for, so nothing
  in the process tells a copy from a twin by its name, and nothing but the launcher can name
  one (a forged results file cannot invent a twin that failed).

The mapping (name -> what it stands for) travels in the results; the launcher verifies every
name and judges the twins' and canaries' outcomes itself. Standard library and pytest only.
"""

from __future__ import annotations

import ast
import hmac
import itertools
import random
import types
from collections.abc import Callable, Mapping, Sequence
from hashlib import sha256
from typing import Any

import pytest
from _pytest.assertion.rewrite import rewrite_asserts
from _pytest.unittest import TestCaseFunction

from .names import (
    CANARIES,
    CANARY_FAIL,
    CANARY_PASS,
    COPY,
    REBOUND_PROPERTY,
    REFEREE_PROPERTY,
    item_name,
)
from .namespace import rebound

__all__ = ["Referee"]


def _compile(
    text: str, start: int, name: str, module: types.ModuleType, path: str, config: Any
) -> Callable[..., Any]:
    """The function ``name`` defined by ``text`` (lines from ``start`` of ``path``), compiled
    with pytest's assertion rewriting, its globals the test module's own."""
    if text[:1] in (" ", "\t"):  # a method: an ``if`` block holds it at its own indentation
        source = "\n" * (start - 2) + "if 1:\n" + text
    else:
        source = "\n" * (start - 1) + text
    tree = ast.parse(source, path)
    rewrite_asserts(tree, source.encode("utf-8"), None, config)
    namespace: dict[str, Any] = {}
    exec(compile(tree, path, "exec"), vars(module), namespace)
    for helper, value in namespace.items():  # what the rewrite imports, under names like @py_*
        if helper.startswith("@"):
            vars(module).setdefault(helper, value)
    function = namespace[name]
    if not callable(function):
        raise TypeError(f"{name} is not a function")
    return function  # type: ignore[no-any-return]


class _RefereeCase(TestCaseFunction):
    """A unittest method the referee compiled: the TestCase is built for the method that
    exists, then runs the compiled one under this item's name."""

    _lc_method = ""
    _lc_function: Callable[..., Any] | None = None

    def _getinstance(self) -> Any:
        case = self.parent.obj(self._lc_method)  # type: ignore[union-attr]
        case._testMethodName = self.name
        return case

    def _getobj(self) -> Any:
        return types.MethodType(self._lc_function, self.instance)  # type: ignore[arg-type]


_RefereeCase.__name__ = _RefereeCase.__qualname__ = "TestCaseFunction"


class Referee:
    """Adds the referee's items after collection (see the module notes)."""

    def __init__(self, plan: Mapping[str, Any], key: bytes) -> None:
        self.files: Mapping[str, Mapping[str, Any]] = plan.get("files") or {}
        self.bindings: Mapping[str, Sequence[Sequence[Any]]] = plan.get("bindings") or {}
        self.copies: dict[str, str] = {}  # a copy's node id: the acceptance test it stands for
        self.labels: dict[str, list[str]] = {}  # node id: [node id, stands for, kind:index]
        self.key = key
        self.errors: list[str] = []
        self.extra: set[str] = set()  # the twins' and canaries' node ids (the live count skips)
        self.rng = random.Random(hmac.new(key, b"order", sha256).digest())

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        added: list[tuple[Any, int]] = []  # (copy, its first line)
        twins_of: dict[int, list[Any]] = {}  # id of a copy: its twins
        for index, item in enumerate(items):
            spec = self._spec(item)
            if spec is None:
                continue
            try:
                copy, twins = self._copies(config, item, spec)
            except Exception as exc:  # the referee cannot build it: named, the test runs as is
                self.errors.append(f"{item.nodeid}: {type(exc).__name__}: {exc}")
                continue
            items[index] = copy
            added.append((copy, int(spec["start"])))
            twins_of[id(copy)] = twins
            self.copies[copy.nodeid] = item.nodeid
            self._check_names(copy, "after collection")
        if added:
            self._place_twins(items, twins_of)
            self._add_canaries(config, items, added)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        """Before any fixture runs: a fixture that patches its own module's names (with
        ``monkeypatch``, undone at teardown) is the suite's business, not a rebinding."""
        if item.nodeid in self.copies:
            self._check_names(item, "before it ran")
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        """After every finalizer, before the teardown report: the item's tag goes on only now,
        so nothing that sees the item while it runs (a patched report, a patched call) reads
        from it which of the referee's items it is."""
        try:
            return (yield)
        finally:
            if item.nodeid in self.copies:
                self._check_names(item, "after it ran")
            label = self.labels.pop(item.nodeid, None)
            if label is not None:
                item.user_properties.append((REFEREE_PROPERTY, label))

    def _check_names(self, copy: Any, when: str) -> None:
        """Tag ``copy`` with each global name of its module bound otherwise than the pinned
        source binds it (the first sighting per name)."""
        bindings = self.bindings.get(copy.nodeid.split("::", 1)[0])
        if not bindings:
            return
        seen = {v[1] for k, v in copy.user_properties if k == REBOUND_PROPERTY}
        for name, instead in rebound(copy.module, bindings):
            if name not in seen:
                of = self.copies[copy.nodeid]
                copy.user_properties.append((REBOUND_PROPERTY, [of, name, instead, when]))

    def _spec(self, item: Any) -> Mapping[str, Any] | None:
        path, _, rest = item.nodeid.partition("::")
        if not rest or not isinstance(item, pytest.Function):
            return None
        qualname = rest.split("[", 1)[0]
        return self.files.get(path, {}).get(qualname)

    def _copies(
        self, config: pytest.Config, item: Any, spec: Mapping[str, Any]
    ) -> tuple[Any, list[Any]]:
        of = item.nodeid
        start = int(spec["start"])
        copy = self._item(config, item, str(spec["text"]), item_name(self.key, of, COPY, 0), start)
        self._tag(copy, of, COPY, item)
        twins = []
        for index, twin in enumerate(spec.get("twins") or ()):
            name = item_name(self.key, of, str(twin["kind"]), index)
            made = self._item(config, item, str(twin["text"]), name, start)
            self._tag(made, of, f"{twin['kind']}:{index}", item)
            self.extra.add(made.nodeid)
            twins.append(made)
        return copy, twins

    def _item(self, config: pytest.Config, item: Any, text: str, name: str, start: int) -> Any:
        """An item like ``item`` (parent, fixtures, parameters) running the compiled text."""
        function = _compile(text, start, item.originalname, item.module, str(item.path), config)
        callspec = getattr(item, "callspec", None)
        params = f"[{callspec.id}]" if callspec is not None and callspec._idlist else ""
        if isinstance(item, TestCaseFunction):
            made = _RefereeCase.from_parent(item.parent, name=name, callobj=function)
            made._lc_method, made._lc_function = item.originalname, function
            made._obj = None  # both made again when it runs, from the two lines above
            del made._instance
            return made
        if getattr(item, "cls", None) is not None:
            function = types.MethodType(function, item.parent.newinstance())
        return pytest.Function.from_parent(
            item.parent,
            name=name + params,
            originalname=name,
            callspec=callspec,
            callobj=function,
            fixtureinfo=item._fixtureinfo,
        )

    def _place_twins(self, items: list[Any], twins_of: Mapping[int, list[Any]]) -> None:
        """Each copy's twins at random places after it among its module's items (the real
        test sees the order it saw at baseline); one pass over the items, module by module."""
        placed: list[Any] = []
        for _, group in itertools.groupby(items, key=lambda i: i.getparent(pytest.Module)):
            block = list(group)
            for copy in [i for i in block if id(i) in twins_of]:
                for twin in twins_of[id(copy)]:
                    block.insert(self.rng.randint(block.index(copy) + 1, len(block)), twin)
            placed += block
        items[:] = placed

    def _add_canaries(
        self, config: pytest.Config, items: list[Any], copies: Sequence[tuple[Any, int]]
    ) -> None:
        for index in range(CANARIES):
            kind = CANARY_PASS if index == 0 else CANARY_FAIL
            host, start = self.rng.choice(list(copies))
            module_node = host.getparent(pytest.Module)
            value = self.rng.randrange(1 << 30)
            other = value if kind == CANARY_PASS else value + 1 + self.rng.randrange(1 << 20)
            name = item_name(self.key, "", kind, index)
            text = f"def {name}():\n    assert {value} == {other}\n"
            function = _compile(text, start, name, module_node.obj, str(host.path), config)
            canary = pytest.Function.from_parent(module_node, name=name, callobj=function)
            self._tag(canary, "", f"{kind}:{index}")
            self.extra.add(canary.nodeid)
            items.insert(self.rng.randint(0, len(items)), canary)

    def _tag(self, item: Any, of: str, label: str, original: Any = None) -> None:
        """Name what ``item`` stands for (its tag goes on at teardown); it carries what
        ``original`` was tagged with already (its ``dod`` ids), whichever of this plugin and
        the tagger ran first."""
        if original is not None:
            item.user_properties.extend(original.user_properties)
        self.labels[item.nodeid] = [item.nodeid, of, label]

    def report(self, items: list[list[str]], rebound: list[list[str]]) -> dict[str, Any]:
        """The referee's section of the results: ``items`` and ``rebound`` names as the
        reports carried them."""
        return {"items": items, "errors": self.errors, "rebound": rebound}
