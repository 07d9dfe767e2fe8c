"""Pure gate arithmetic: test outcomes and observations in, gate outcomes out.

Nothing here touches files, processes or the rest of the package, so the rules that decide
whether an agent is done can be read and tested in isolation. Inputs are plain mappings and
protocols; the I/O layers (plugin, launcher) gather them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

from pytest_loopcontract.plural import plural
from pytest_loopcontract.verdict import DodResult, GateResult

__all__ = [
    "compare",
    "evaluate_acceptance",
    "evaluate_command",
    "evaluate_dod",
    "evaluate_measured",
    "evaluate_pass_to_pass",
    "evaluate_selected",
    "select_tests",
]

OPS = (">=", ">", "<=", "<", "==", "!=")


class DodItemLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def tests(self) -> tuple[str, ...]: ...


class MeasuredGateLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def threshold(self) -> float: ...
    @property
    def unit(self) -> str: ...


class ObservationLike(Protocol):
    @property
    def value(self) -> float | None: ...
    @property
    def status(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def extra(self) -> Mapping[str, Any]: ...


@lru_cache(maxsize=1024)
def _selector_regex(selector: str) -> re.Pattern[str] | None:
    """A selector with ``*`` or ``?`` as a regex; None for a plain selector.

    Only ``*`` and ``?`` are wildcards: brackets are literal, because parametrized node ids
    are full of them (``test_x[a-b]``) and fnmatch would read them as character classes.
    """
    if "*" not in selector and "?" not in selector:
        return None
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in selector)
    return re.compile(body)


def selector_matches(selector: str, nodeid: str) -> bool:
    """Whether a contract selector names a node id.

    A selector is an exact node id, a prefix at a node boundary (a file, a directory, a class,
    or a function whose parametrized ids should all count), or a glob with ``*`` and ``?``.
    """
    if selector == nodeid:
        return True
    regex = _selector_regex(selector)
    if regex is not None:
        return regex.fullmatch(nodeid) is not None
    return nodeid.startswith((selector + "::", selector + "[", selector.rstrip("/") + "/"))


def select_tests(
    selectors: Iterable[str],
    nodeids: Iterable[str],
    marked: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """Node ids the selectors name, plus exact selectors that matched nothing (missing).

    ``marked`` are node ids tied to the item by the ``dod`` marker; they always count.
    """
    ids = list(nodeids)
    chosen: dict[str, None] = dict.fromkeys(marked)
    missing: list[str] = []
    for selector in selectors:
        hits = [n for n in ids if selector_matches(selector, n)]
        if not hits:
            missing.append(selector)
        chosen.update(dict.fromkeys(hits))
    return list(chosen), missing


def evaluate_dod(
    items: Sequence[DodItemLike],
    outcomes: Mapping[str, str],
    marked: Mapping[str, Sequence[str]],
) -> list[DodResult]:
    """An item is done only when it has tests and every one of them passed.

    A skip, an xfail, an xpass, an error, a deselection or a selector that matched nothing is
    not a pass: those are exactly the ways an agent makes a red test look harmless.
    """
    results = []
    for item in items:
        chosen, missing = select_tests(item.tests, outcomes, marked.get(item.id, ()))
        tests = [(n, outcomes.get(n, "missing")) for n in chosen]
        tests += [(sel, "missing") for sel in missing]
        if not tests:
            status = "no_tests"
        elif all(outcome == "passed" for _, outcome in tests):
            status = "done"
        else:
            status = "failed"
        results.append(DodResult(item.id, item.text, status, tuple(tests)))
    return results


def _failing(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {n: o for n, o in pairs if o != "passed"}


def evaluate_acceptance(gate_id: str, dod: Sequence[DodResult]) -> GateResult:
    if not dod:
        return GateResult(gate_id, "acceptance", "fail", "the contract has no DoD items")
    pending = [d.id for d in dod if d.status != "done"]
    failing = _failing(p for d in dod for p in d.tests)
    if pending:
        return GateResult(
            gate_id,
            "acceptance",
            "fail",
            f"{len(pending)} of {plural(len(dod), 'DoD item')} not done: {', '.join(pending)}",
            {"pending": pending, "failing": failing},
        )
    return GateResult(
        gate_id,
        "acceptance",
        "pass",
        ("the one DoD item done" if len(dod) == 1 else f"all {len(dod)} DoD items done"),
    )


def evaluate_pass_to_pass(
    gate_id: str,
    outcomes: Mapping[str, str],
    pass_to_pass: Sequence[str] | None,
    acceptance: Iterable[str],
) -> GateResult:
    """Every test that passed at baseline must still pass.

    Without a baseline the only honest reading of "no regressions" is that every test outside
    the acceptance set passes now; the message says which rule was applied.
    """
    if pass_to_pass is None:
        skip = set(acceptance)
        expected = [n for n in outcomes if n not in skip]
        rule = "no baseline: every non-acceptance test must pass"
    else:
        expected = list(pass_to_pass)
        rule = f"{plural(len(expected), 'test')} that passed at baseline"
    failing = {n: outcomes.get(n, "missing") for n in expected if outcomes.get(n) != "passed"}
    if failing:
        return GateResult(
            gate_id,
            "pass_to_pass",
            "fail",
            f"{len(failing)} regressions ({rule})",
            {"failing": failing},
        )
    return GateResult(gate_id, "pass_to_pass", "pass", f"no regressions ({rule})")


def evaluate_selected(
    gate_id: str, selectors: Sequence[str], outcomes: Mapping[str, str]
) -> GateResult:
    chosen, missing = select_tests(selectors, outcomes)
    failing = _failing((n, outcomes[n]) for n in chosen)
    failing.update(dict.fromkeys(missing, "missing"))
    if not chosen and not missing:
        return GateResult(gate_id, "tests", "fail", "the selectors matched no tests")
    if failing:
        return GateResult(
            gate_id,
            "tests",
            "fail",
            f"{len(failing)} selected tests not passing",
            {"failing": failing},
        )
    return GateResult(gate_id, "tests", "pass", f"{len(chosen)} selected tests passed")


def evaluate_command(
    gate_id: str,
    argv: Sequence[str],
    expected: int,
    exit_code: int | None,
    output_tail: str,
    error: str = "",
) -> GateResult:
    """``exit_code`` None means the command never finished (timeout, not found)."""
    details = {"argv": list(argv), "expect_exit": expected, "exit_code": exit_code}
    if exit_code is None:
        return GateResult(gate_id, "command", "error", error or "command did not finish", details)
    if exit_code != expected:
        tail = output_tail.strip().splitlines()[-1:] if output_tail.strip() else []
        suffix = f": {tail[0]}" if tail else ""
        return GateResult(
            gate_id,
            "command",
            "fail",
            f"exit {exit_code}, expected {expected}{suffix}",
            {**details, "output_tail": output_tail},
        )
    return GateResult(gate_id, "command", "pass", f"exit {exit_code} as expected", details)


def compare(observed: float, op: str, threshold: float) -> bool:
    """Apply a contract operator. NaN never satisfies anything (not even ``!=``)."""
    if math.isnan(observed) or math.isnan(threshold):
        return False
    if op == ">=":
        return observed >= threshold
    if op == ">":
        return observed > threshold
    if op == "<=":
        return observed <= threshold
    if op == "<":
        return observed < threshold
    if op == "==":
        return observed == threshold
    if op == "!=":
        return observed != threshold
    raise ValueError(f"unknown operator {op!r}")


def evaluate_measured(gate: MeasuredGateLike, observation: ObservationLike) -> GateResult:
    """Compare one observation with its threshold; missing data fails, never passes."""
    details: dict[str, Any] = {
        "metric": gate.metric,
        "observed": observation.value,
        "op": gate.op,
        "threshold": gate.threshold,
        "unit": gate.unit,
        "source": observation.detail,
    }
    unit = f" {gate.unit}" if gate.unit else ""
    if observation.status == "not_measurable":
        return GateResult(gate.id, "measured", "not_measurable", observation.detail, details)
    if observation.status != "ok" or observation.value is None:
        status = "error" if observation.status == "error" else "missing"
        return GateResult(
            gate.id,
            "measured",
            status,
            f"{gate.metric} not produced: {observation.detail}",
            details,
        )
    ok = compare(observation.value, gate.op, gate.threshold)
    message = (
        f"{gate.metric} = {observation.value:g}{unit} "
        f"({'meets' if ok else 'misses'} {gate.op} {gate.threshold:g}{unit})"
    )
    where = observation.extra.get("where")
    if not ok and isinstance(where, str) and where:  # what moved the figure, by the source
        message += f" - {where}"
    return GateResult(gate.id, "measured", "pass" if ok else "fail", message, details)
