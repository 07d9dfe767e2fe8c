"""The verdict's ``tests`` block: every test's outcome, compactly; and the readers of it.

One record per test (``{nodeid, outcome, duration, when}``) would be 8 MB in a 60,000-test
verdict for facts that are mostly "passed". So the block keeps the meaning (every test's
outcome, the duration where something needs it) in this shape::

    "tests": {
      "outcomes": {"passed": <id set>, "failed": <id set>, ...},
      "records": [{nodeid, outcome, duration, when, message?}, ...],
      "durations": {nodeid: seconds, ...}
    }

``outcomes`` are the outcome sets (:mod:`.idsets`); ``records`` are the full records of every
test that did not pass (what a person or an agent needs to act on: the phase, the message);
``durations`` of the passed tests only when a ``duration.*`` gate measured them.

Every reader of "the failing tests of a verdict" goes through :func:`failing_tests` or
:func:`verdict_records`, and every text that names them to a person or an agent (the terminal
summary, the Stop hook's reason, the loop's prompt) through :func:`failure_lines`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pytest_loopcontract.idsets import pack_ids, unpack_ids
from pytest_loopcontract.plural import plural

__all__ = [
    "FAILING_OUTCOMES",
    "FAILURES_SHOWN",
    "FAILURE_LINE_WIDTH",
    "failing_tests",
    "failure_lines",
    "pack_tests",
    "tests_section",
    "verdict_outcomes",
    "verdict_records",
]


def pack_tests(tests: Iterable[Mapping[str, Any]], *, durations: bool) -> dict[str, Any]:
    """The format-2 ``tests`` block of the per-test records ``tests``."""
    return tests_section(tests, durations=durations)[0]


SUMMARY_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected")


def tests_section(
    tests: Iterable[Mapping[str, Any]], *, durations: bool
) -> tuple[dict[str, Any], dict[str, int]]:
    """The ``tests`` block and the ``summary`` counts of a verdict, in one pass over ``tests``.

    One pass, so ``tests`` may be a generator: the in-process plugin makes each passed test's
    record only to read it here, and 2,000 of them held at once cost half a MiB of peak memory.
    """
    by_outcome: dict[str, list[str]] = {}
    records: list[dict[str, Any]] = []
    passed_durations: dict[str, Any] = {}
    for test in tests:
        outcome = str(test["outcome"])
        by_outcome.setdefault(outcome, []).append(str(test["nodeid"]))
        if outcome != "passed":
            records.append(dict(test))
        elif durations:
            passed_durations[str(test["nodeid"])] = test.get("duration", 0.0)
    block: dict[str, Any] = {
        "outcomes": {name: pack_ids(ids) for name, ids in by_outcome.items()},
        "records": records,
    }
    if durations:
        block["durations"] = passed_durations
    counts = dict.fromkeys((*SUMMARY_OUTCOMES, "missing"), 0)
    counts.update((name, len(ids)) for name, ids in by_outcome.items())
    counts["total"] = sum(len(ids) for ids in by_outcome.values())
    return block, counts


def verdict_records(verdict: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One record per test (``nodeid``, ``outcome``, and what the verdict kept besides),
    failing ones first; nothing for a verdict without a readable block."""
    block = verdict.get("tests")
    if not isinstance(block, Mapping):
        return []
    records = [
        dict(t) for t in block.get("records") or () if isinstance(t, Mapping) and "nodeid" in t
    ]
    durations = block.get("durations")
    durations = durations if isinstance(durations, Mapping) else {}
    for nodeid in _outcome_ids(block, "passed"):
        record: dict[str, Any] = {"nodeid": nodeid, "outcome": "passed"}
        if nodeid in durations:
            record["duration"] = durations[nodeid]
        records.append(record)
    return records


def verdict_outcomes(verdict: Mapping[str, Any]) -> dict[str, str]:
    """``{nodeid: outcome}`` of every test of a verdict."""
    return {str(t["nodeid"]): str(t.get("outcome", "")) for t in verdict_records(verdict)}


# What "failing" means wherever a verdict's failing tests are listed (the loop's history, its
# progress key, a contest retry's prompt): a skipped, xfailed or deselected test did not pass,
# but it did not fail either, and listing it as failing sends the agent after a green test.
FAILING_OUTCOMES = frozenset({"failed", "error"})


def failing_tests(verdict: Mapping[str, Any]) -> list[str]:
    """The node ids of the tests that failed or errored, in the verdict's order."""
    block = verdict.get("tests")
    records = block.get("records") if isinstance(block, Mapping) else None
    if not isinstance(records, list):  # the records are those of the tests that did not pass
        return []
    return [
        str(t["nodeid"])
        for t in records
        if isinstance(t, Mapping) and "nodeid" in t and t.get("outcome") in FAILING_OUTCOMES
    ]


FAILURES_SHOWN = 5
FAILURE_LINE_WIDTH = 160


def failure_lines(
    verdict: Mapping[str, Any],
    tests: Iterable[tuple[str, str]],
    *,
    hide: Collection[str] | None = None,
    shown: int = FAILURES_SHOWN,
    width: int = FAILURE_LINE_WIDTH,
) -> list[str]:
    """The first ``shown`` of ``tests`` that did not pass, one line each, and how many more.

    ``tests`` are ``(nodeid, outcome)`` pairs in the order to show them (a gate's ``failing``,
    a DoD item's tests; passed ones are left out). Each line names the outcome, the test, the
    phase that decided it and the first line of its error, from the verdict's records::

        failed: tests/test_core.py::test_double (call): assert 5 == 4
        error: tests/test_db.py::test_query (setup): ConnectionError: db down
        ... and 22 more

    A test the run never reached has no record: ``missing: <nodeid> (not run)``. Lines are cut
    to ``width`` characters. With ``hide`` (the places of the hidden acceptance tests) a test
    in one of those files, or whose record is marked hidden, is never named, only counted.
    """
    records = _records_by_id(verdict)
    failing = [(str(n), str(o)) for n, o in tests if o != "passed"]
    hidden = 0
    if hide is not None:
        places = frozenset(hide)
        named = [
            (n, o)
            for n, o in failing
            if n.split("::", 1)[0] not in places and not records.get(n, {}).get("hidden")
        ]
        hidden, failing = len(failing) - len(named), named
    lines = [_failure_line(n, o, records.get(n), width) for n, o in failing[:shown]]
    if len(failing) > shown:
        lines.append(f"... and {len(failing) - shown} more")
    if hidden:
        lines.append(f"and {plural(hidden, 'hidden acceptance test')}")
    return lines


def _failure_line(nodeid: str, outcome: str, record: Mapping[str, Any] | None, width: int) -> str:
    if record is None:
        line = f"{outcome}: {nodeid} (not run)" if outcome == "missing" else f"{outcome}: {nodeid}"
    else:
        when = record.get("when")
        line = f"{outcome}: {nodeid}" + (f" ({when})" if isinstance(when, str) and when else "")
        first = _error_line(record.get("message"))
        if first:
            line += f": {first}"
    return line if len(line) <= width else line[: width - 3] + "..."


def _error_line(message: object) -> str:
    """The first line of a test's error: pytest's first ``E`` line (``assert 5 == 4``,
    ``ValueError: boom``), which is what went wrong, where the report opens with the test's
    source; else the message's first non-empty line."""
    if not isinstance(message, str):
        return ""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("E ") and line[1:].strip():
            return line[1:].strip()
    return lines[0] if lines else ""


def _records_by_id(verdict: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The verdict's records (those of the tests that did not pass) by node id."""
    block = verdict.get("tests")
    records = block.get("records") if isinstance(block, Mapping) else None
    if not isinstance(records, list):
        return {}
    return {str(t["nodeid"]): t for t in records if isinstance(t, Mapping) and "nodeid" in t}


def _outcome_ids(block: Mapping[str, Any], outcome: str) -> list[str]:
    sets = block.get("outcomes")
    if not isinstance(sets, Mapping) or outcome not in sets:
        return []
    try:
        return unpack_ids(sets[outcome], f"tests.outcomes.{outcome}")
    except ValueError:
        return []  # a damaged verdict: the schema check reports it, the readers go on
