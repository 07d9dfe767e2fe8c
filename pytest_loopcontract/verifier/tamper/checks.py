"""The static reward checks as ``verify`` runs them: the rules over the diff.

:func:`static_checks` (before the run) applies the rules of :mod:`.rules` and
:mod:`.literals` to the changed Python files the run will execute with the candidate's bytes,
and returns what the verdict needs and nothing else. A ``tamper`` rule becomes a finding (exit
25); an ``evidence`` rule becomes a checkpoint match that joins the file's clearance request
(exit 24 until a person resolves it); a rule the pinned contract allows for the path produces
nothing. A check record (``ran`` / ``skipped`` / ``timed_out`` / ``not_run``) goes to the
verdict's ``tamper.checks``.

The outcome checks (twins and canaries of the acceptance tests, run inside the main run) are
:mod:`.twins`. The launcher supplies how a tree is built and how pytest runs, so this module
does not care whether that happens in a sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_loopcontract.checkpoints.model import Match
from pytest_loopcontract.contract.model import Contract
from pytest_loopcontract.verdict import Finding
from pytest_loopcontract.verifier import gates
from pytest_loopcontract.verifier.baseline.record import BaselineRecord
from pytest_loopcontract.verifier.sensors.diff_lines import added_lines_from_diff
from pytest_loopcontract.verifier.tamper.literals import (
    Expectation,
    data_literal_hits,
    expectations,
    is_documentation,
    literal_hits,
)
from pytest_loopcontract.verifier.tamper.rules import (
    RULES,
    RuleHit,
    is_test_path,
    new_hits,
    scan_source,
)
from pytest_loopcontract.workspace import (
    TreeEntry,
    list_tree,
    matches_any,
    read_blobs,
)

__all__ = [
    "RewardChecks",
    "acceptance_nodeids",
    "blob_reader",
    "check_record",
    "launcher_static_checks",
    "static_checks",
]


@dataclass
class RewardChecks:
    findings: list[Finding] = field(default_factory=list)
    evidence: list[Match] = field(default_factory=list)  # for diff_checkpoints(extra=...)
    checks: list[dict[str, Any]] = field(default_factory=list)


def check_record(check_id: str, status: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"id": check_id, "status": status, "message": message, **extra}


def acceptance_nodeids(
    contract: Contract, fail_to_pass: Iterable[str], collected: Iterable[str]
) -> list[str]:
    """The acceptance tests: the baseline's FAIL_TO_PASS plus every collected node a DoD
    selector names (``improve`` mode has no FAIL_TO_PASS)."""
    selectors = contract.acceptance_selectors()
    chosen = dict.fromkeys(fail_to_pass)
    for nodeid in collected:
        if any(gates.selector_matches(s, nodeid) for s in selectors):
            chosen[nodeid] = None
    return list(chosen)


def blob_reader(root: Path, entries: Mapping[str, Any]) -> Callable[[str], bytes | None]:
    """Bytes of a path from a tree listing or the pins (anything with a ``blob``), or None."""

    def read(path: str) -> bytes | None:
        entry = entries.get(path)
        if entry is None:
            return None
        return read_blobs(root, [entry.blob]).get(entry.blob)

    return read


def launcher_static_checks(
    root: Path,
    baseline: BaselineRecord,
    contract: Contract,
    files: Mapping[str, TreeEntry],
    patch: str,
    existing: Sequence[Finding],
) -> RewardChecks:
    """:func:`static_checks` wired to the launcher's trees: the candidate's ``files``, the
    baseline's tree, the pins (pinned files and new protected files never run as the
    candidate wrote them, so they are not scanned here: the pin checks own them)."""
    globs = list(baseline.protected_globs)
    try:
        changed = added_lines_from_diff(patch)
    except ValueError as exc:
        return RewardChecks(
            checks=[check_record("reward_rules", "not_run", f"diff unreadable: {exc}")]
        )
    return static_checks(
        contract=contract,
        changed_lines=changed,
        candidate_source=blob_reader(root, files),
        baseline_source=blob_reader(root, list_tree(root, baseline.tree)),
        skip_path=lambda p: p in baseline.pins or matches_any(p, globs),
        acceptance=acceptance_nodeids(contract, baseline.fail_to_pass, baseline.collected),
        existing=existing,
    )


# --- static rules ------------------------------------------------------------------------------


def static_checks(
    *,
    contract: Contract,
    changed_lines: Mapping[str, frozenset[int]],
    candidate_source: Callable[[str], bytes | None],
    baseline_source: Callable[[str], bytes | None],
    skip_path: Callable[[str], bool],
    acceptance: Sequence[str],
    existing: Sequence[Finding] = (),
) -> RewardChecks:
    """Rule hits on the candidate's added lines, split by severity, allowances applied.

    ``skip_path`` names files the run will not execute with the candidate's bytes (pinned or
    removed); ``acceptance`` the acceptance node ids, whose pinned files ``baseline_source``
    reads to learn the literals special-casing would copy.
    """
    out = RewardChecks()
    coverage_gate = any(g.metric.startswith("coverage.") for g in contract.measured_gates)
    pairs, notes = _acceptance_pairs(acceptance, baseline_source)
    hits: list[RuleHit] = []
    scanned = 0
    for path, lines in sorted(changed_lines.items()):
        if skip_path(path):
            continue
        if not path.endswith(".py"):
            hits += _data_hits(path, lines, candidate_source, baseline_source, pairs)
            continue
        data = candidate_source(path)
        if data is None:
            continue
        scanned += 1
        try:
            source = data.decode("utf-8")
            found = scan_source(path, source, coverage_gate=coverage_gate)
            if not is_test_path(path):
                found += literal_hits(path, source, pairs, lines)
        except Exception as exc:  # untrusted input: any failure is "not checked", never a crash
            hits.append(_unparsable(path, exc))
            continue
        hits += new_hits(found, _baseline_hits(path, baseline_source, coverage_gate, pairs), lines)
    _sort_hits(out, contract, hits, existing)
    unparsed = [h.path for h in hits if h.code == "reward_rules_not_run"]
    status = "not_run" if unparsed and len(unparsed) == scanned else "ran" if scanned else "skipped"
    message = f"{scanned} changed Python file(s) checked"
    if unparsed:
        message += f"; could not parse {', '.join(unparsed)} (a person must look)"
    out.checks.append(check_record("reward_rules", status, "; ".join([message, *notes])))
    return out


DATA_LIMIT = 1 << 20  # larger files are not read as text for the tests' literals


def _data_hits(
    path: str,
    lines: frozenset[int],
    candidate_source: Callable[[str], bytes | None],
    baseline_source: Callable[[str], bytes | None],
    pairs: Sequence[Expectation],
) -> list[RuleHit]:
    """``test_literal_data`` on a changed data file's added lines; binary files, large ones,
    documentation and test files are not read."""
    if not pairs or is_test_path(path) or is_documentation(path):
        return []
    texts = []
    for source in (candidate_source, baseline_source):
        data = source(path) or b""
        if len(data) > DATA_LIMIT or b"\0" in data:
            return []
        texts.append(data.decode("utf-8", "replace"))
    now, before = texts
    found = data_literal_hits(path, now, pairs, lines)
    everything = range(1, before.count("\n") + 2)
    return new_hits(found, data_literal_hits(path, before, pairs, everything), lines)


def _sort_hits(
    out: RewardChecks, contract: Contract, hits: Sequence[RuleHit], existing: Sequence[Finding]
) -> None:
    """Each hit the contract does not allow: a finding (tamper rules) or evidence for a
    person (the others); a harness call the text rule already reported is not repeated."""
    seen = {(f.path, f.line) for f in existing if f.code == "harness_manipulation"}
    for hit in hits:
        if contract.tamper.allows(hit.code, hit.path):
            continue
        if hit.code == "harness_call" and (hit.path, hit.line) in seen:
            continue
        rule = RULES[hit.code]
        message = f"{rule.summary}: {hit.message}"
        if rule.severity == "tamper":
            out.findings.append(Finding(hit.code, message, hit.path, hit.line))
        else:
            out.evidence.append(
                Match(hit.code, "reward", message, hit.evidence, hit.path, hit.line)
            )


def _unparsable(path: str, exc: BaseException) -> RuleHit:
    line = getattr(exc, "lineno", None) or 1
    reason = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
    return RuleHit(
        "reward_rules_not_run",
        path,
        int(line),
        "unparsable",
        f"the reward rules could not parse this file ({reason}), so they did not check it",
    )


def _baseline_hits(
    path: str,
    baseline_source: Callable[[str], bytes | None],
    coverage_gate: bool,
    pairs: Sequence[Expectation],
) -> list[RuleHit]:
    data = baseline_source(path)
    if data is None:
        return []
    try:
        source = data.decode("utf-8")
        found = scan_source(path, source, coverage_gate=coverage_gate)
        if not is_test_path(path):
            found += literal_hits(path, source, pairs, range(1, source.count("\n") + 2))
        return found
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return []  # nothing at baseline to excuse: every hit on an added line is new


def _acceptance_pairs(
    nodeids: Sequence[str], source_of: Callable[[str], bytes | None]
) -> tuple[list[Expectation], list[str]]:
    by_file: dict[str, list[str]] = {}
    for nodeid in nodeids:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    pairs: list[Expectation] = []
    notes = []
    for path, ids in sorted(by_file.items()):
        data = source_of(path)
        if data is None:
            continue
        try:
            pairs += expectations(data.decode("utf-8"), path, ids)
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            notes.append(f"test literals of {path} not read ({type(exc).__name__})")
    return pairs, notes
