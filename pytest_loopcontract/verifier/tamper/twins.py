"""Outcomes first: the referee's copies, twins and canaries, planned before the run and judged
after it by the launcher.

Any mechanism that turns a failing acceptance test into a pass without knowing the right answer
(a patched report, a swapped ``__code__``, an ``__eq__`` that accepts anything, forged results)
turns a failing twin of that test into a pass as well. So, inside the main run, the injected
plugin (``inner/referee.py``) runs each acceptance test as a copy the referee compiled from the
pinned file, a few twins of it whose expectations are wrong (``mutation.py``), and canaries
that must pass or must fail, all under names keyed by this run's secret and at random places.
Here the launcher:

- plans them (:func:`plan_twins`) from the pinned bytes, never from the candidate's tree;
- checks every name the run reports against the key (:data:`FORGED`: a name it did not make);
- judges: a twin of a passing acceptance test that did not fail is ``twin_passed``, a missing
  twin ``twin_missing``, a canary with the wrong outcome ``canary_wrong`` (all tamper, 25);
- gives the rest of the verdict the run as if the copies were the tests they stand for.

An acceptance test the plan cannot twin (no assertion the rewrite knows, a file that does not
parse) is named in the check record as not cross-checked, never silently counted as checked.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier.results import RunResults
from pytest_loopcontract.verifier.tamper.bindings import Binding, module_bindings
from pytest_loopcontract.verifier.tamper.mutation import TestFunction, function_of, test_functions

__all__ = ["RefereeJudgement", "TwinPlan", "judge_referee", "plan_twins"]

_FAILED = ("failed", "error")


def _load_names() -> ModuleType:
    """``inner/names.py``, the one definition of the items' names, loaded as a file: importing
    it through its package would import pytest into the launcher."""
    path = Path(__file__).resolve().parents[1] / "inner" / "names.py"
    spec = importlib.util.spec_from_file_location("pytest_loopcontract._referee_names", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_names = _load_names()
CANARIES: int = _names.CANARIES
CANARY_FAIL: str = _names.CANARY_FAIL
CANARY_PASS: str = _names.CANARY_PASS
COPY: str = _names.COPY
item_name: Callable[[bytes, str, str, int], str] = _names.item_name


@dataclass(frozen=True)
class TwinPlan:
    """The acceptance functions by file and qualname, with their twins."""

    functions: Mapping[str, Mapping[str, TestFunction]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    bindings: Mapping[str, Sequence[Binding]] = field(default_factory=dict)
    # what was asked for: acceptance node ids, or whole hidden files' paths
    acceptance: tuple[str, ...] = ()

    def function(self, nodeid: str) -> TestFunction | None:
        return self.functions.get(nodeid.split("::", 1)[0], {}).get(function_of(nodeid))

    def settings(self) -> dict[str, Any]:
        """What the injected plugin needs: lines and twins per function (JSON)."""
        return {
            "files": {
                path: {
                    name: {
                        "start": fn.start,
                        "text": fn.text,
                        "twins": [{"kind": t.kind, "text": t.text} for t in fn.twins],
                    }
                    for name, fn in functions.items()
                }
                for path, functions in self.functions.items()
            },
            "bindings": {path: [list(b) for b in found] for path, found in self.bindings.items()},
        }


def plan_twins(acceptance: Sequence[str], source_of: Callable[[str], bytes | None]) -> TwinPlan:
    """Plan the copies and twins of ``acceptance`` (node ids, or whole hidden files' paths)
    from the pinned sources ``source_of`` gives."""
    functions: dict[str, dict[str, TestFunction]] = {}
    bindings: dict[str, list[Binding]] = {}
    notes: list[str] = []
    for path in dict.fromkeys(n.split("::", 1)[0] for n in acceptance):
        data = source_of(path)
        if data is None:
            notes.append(f"{path} is not pinned, so its tests were not cross-checked")
            continue
        try:
            found = test_functions(data.decode("utf-8"))
            bindings[path] = module_bindings(data.decode("utf-8"))
        except Exception as exc:  # the rewrite cannot handle it: named, never a crash
            notes.append(f"{path} could not be read for twins ({type(exc).__name__}: {exc})")
            continue
        whole = path in acceptance
        wanted = {function_of(n) for n in acceptance if n.startswith(path + "::")}
        functions[path] = {q: f for q, f in found.items() if whole or q in wanted}
    return TwinPlan(functions, tuple(notes), bindings, tuple(dict.fromkeys(acceptance)))


@dataclass
class RefereeJudgement:
    """The run with the referee's items folded back, what they showed, and the check record."""

    results: RunResults
    findings: list[Finding] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # passed acceptance tests whose twins failed
    unchecked: list[str] = field(default_factory=list)  # acceptance tests no twin covered
    twins: int = 0


@dataclass
class _Items:
    copies: dict[str, str] = field(default_factory=dict)  # what it stands for -> copy's node id
    twins: dict[str, dict[str, str]] = field(default_factory=dict)  # of -> {kind:index: node id}
    canaries: dict[str, str] = field(default_factory=dict)  # kind:index -> node id
    forged: list[str] = field(default_factory=list)


def _name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1].split("[", 1)[0]


def _sort(items: Iterable[tuple[str, str, str]], key: bytes) -> _Items:
    """The reported items by role, each name checked against the key."""
    out = _Items()
    for nodeid, of, label in items:
        kind, _, index = label.partition(":")
        expected = item_name(key, of, kind, int(index) if index.isdigit() else 0)
        if _name(nodeid) != expected or (kind == COPY and index):
            out.forged.append(nodeid)
        elif kind == COPY:
            out.copies[of] = nodeid
        elif kind in (CANARY_PASS, CANARY_FAIL) and not of:
            out.canaries[label] = nodeid
        else:
            out.twins.setdefault(of, {})[label] = nodeid
    return out


def judge_referee(results: RunResults, plan: TwinPlan, key: bytes) -> RefereeJudgement:
    """Judge the referee's items of one run (see the module notes)."""
    if results.referee_items is None:
        finding = Finding(
            "referee_missing",
            "the run reported none of the referee's items: its injected plugin did not run "
            "as launched, or its report was replaced",
        )
        return RefereeJudgement(results, [finding], unchecked=sorted(_planned(plan, results)))
    items = _sort(results.referee_items, key)
    outcomes = results.outcomes()
    judgement = RefereeJudgement(_fold(results, items))
    if items.forged:
        judgement.findings.append(
            Finding(
                "referee_forged",
                f"{len(items.forged)} item(s) reported as the referee's carry names this run's "
                "key did not make: " + ", ".join(items.forged[:3]),
            )
        )
    for of, copy in items.copies.items():
        _judge_twins(judgement, plan, of, outcomes.get(copy, "missing"), items, outcomes)
    judgement.unchecked += sorted(
        _planned(plan, results) - set(items.copies) - set(judgement.unchecked)
    )
    judgement.findings += _rebound_findings(results.referee_rebound, plan)
    judgement.findings += _canary_findings(items, outcomes, bool(items.copies))
    return judgement


def _planned(plan: TwinPlan, results: RunResults) -> set[str]:
    """The acceptance tests that passed (reported under their own ids), whether the plan
    found their function or not: one defined in a mixin class elsewhere, or under another
    qualname, is not cross-checked and must say so."""
    asked = set(plan.acceptance)
    return {
        nodeid
        for nodeid, outcome in results.outcomes().items()
        if outcome in ("passed", "xpassed")
        and (nodeid in asked or nodeid.split("::", 1)[0] in asked or plan.function(nodeid))
    }


def _judge_twins(
    judgement: RefereeJudgement,
    plan: TwinPlan,
    of: str,
    outcome: str,
    items: _Items,
    outcomes: Mapping[str, str],
) -> None:
    function = plan.function(of)
    if function is None or not function.twins:
        judgement.unchecked.append(of)
        return
    if outcome not in ("passed", "xpassed"):
        return  # a failing test needs no twin to fail
    reported = items.twins.get(of, {})
    bad = False
    for index, twin in enumerate(function.twins):
        label = f"{twin.kind}:{index}"
        judgement.twins += 1
        got = outcomes.get(reported.get(label, ""), "missing")
        if got in _FAILED:
            continue
        bad = True
        code = "twin_missing" if got == "missing" else "twin_passed"
        verb = "did not run" if got == "missing" else f"{got}"
        path = of.split("::", 1)[0]
        judgement.findings.append(
            Finding(
                code,
                f"{of}: its twin with the {twin.description} at line {twin.line} {verb}; "
                "a test whose expectation is wrong must fail, so this run's outcomes do not "
                "come from the test's assertions",
                path,
                twin.line,
            )
        )
    if not bad:
        judgement.checked.append(of)


def _rebound_findings(
    rebound: Sequence[tuple[str, str, str, str]], plan: TwinPlan
) -> list[Finding]:
    """``namespace_rebound``, once per (test, name): the test ran against something other
    than what its pinned module imports or defines."""
    findings: dict[tuple[str, str], Finding] = {}
    for of, name, instead, when in rebound:
        path = of.split("::", 1)[0]
        line = next((b.line for b in plan.bindings.get(path, ()) if b.name == name), None)
        findings.setdefault(
            (of, name),
            Finding(
                "namespace_rebound",
                f"{of}: the name {name!r} of its module was bound to {instead} ({when}); the "
                "test ran against something other than what its pinned file binds",
                path,
                line,
            ),
        )
    return list(findings.values())


def _canary_findings(items: _Items, outcomes: Mapping[str, str], expected: bool) -> list[Finding]:
    findings = []
    labels = [f"{CANARY_PASS if i == 0 else CANARY_FAIL}:{i}" for i in range(CANARIES)]
    for label in labels if expected else []:
        want = "passed" if label.startswith(CANARY_PASS) else "failed"
        got = outcomes.get(items.canaries.get(label, ""), "missing")
        if got != want:
            findings.append(
                Finding(
                    "canary_wrong",
                    f"a canary that must be {want} was {got}: the run's outcomes are not the "
                    "tests' own",
                )
            )
    return findings


def _fold(results: RunResults, items: _Items) -> RunResults:
    """The run as the verdict reads it: each copy under the id of the test it stands for, the
    twins and canaries taken out."""
    back = {copy: of for of, copy in items.copies.items()}
    extra = {n for twins in items.twins.values() for n in twins.values()}
    extra |= set(items.canaries.values()) | set(items.forged)
    tests = [
        t._replace(nodeid=back.get(t.nodeid, t.nodeid))
        for t in results.tests
        if t.nodeid not in extra
    ]
    marks = {
        item: [back.get(n, n) for n in ids if n not in extra]
        for item, ids in results.dod_marks.items()
    }
    return replace(
        results,
        tests=tests,
        collected=[back.get(n, n) for n in results.collected if n not in extra],
        dod_marks=marks,
        metrics=[m._replace(nodeid=back.get(m.nodeid, m.nodeid)) for m in results.metrics],
        egress=[{**e, "test": back.get(str(e.get("test")), e.get("test"))} for e in results.egress],
    )
