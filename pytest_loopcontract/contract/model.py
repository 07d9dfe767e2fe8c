"""Load and validate ``loopcontract.yml``.

The contract is the only statement of what "done" means, so a mistake in it must be reported
precisely (file, line, column, field path) before anything runs: a typo that silently drops a
gate would let an agent pass a contract nobody meant to write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from pytest_loopcontract.contract.hidden import HiddenTest, parse_hidden
from pytest_loopcontract.errors import ContractError
from pytest_loopcontract.workspace import matches_any

__all__ = [
    "DEFAULT_CONTRACT_NAME",
    "DEFAULT_VERIFY_WORKFLOW",
    "Boundaries",
    "BracketSettings",
    "Budget",
    "ContestSettings",
    "Contract",
    "DodItem",
    "GithubSettings",
    "HardGate",
    "HiddenTest",
    "JudgedSettings",
    "MeasuredGate",
    "Protect",
    "PushSettings",
    "PytestSettings",
    "StopWhen",
    "TamperAllow",
    "TamperSettings",
    "load_contract",
    "parse_contract",
    "parse_validated",
    "working_copy",
]

DEFAULT_CONTRACT_NAME = "loopcontract.yml"

# The contract's parts are named tuples, not frozen dataclasses: every ``--loop-contract`` run
# builds this model before its first test, and a frozen dataclass costs 0.6 to 0.9 ms to create
# (its methods are generated and compiled at import) against 0.07 ms for a named tuple: 7 ms of
# the run's start for these eleven (benchmarks/bench_plugin.py). Immutable all the same; a
# mapping left out is this shared read-only empty one.
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class DodItem(NamedTuple):
    """One Definition-of-Done entry; ``tests`` are node ids or fnmatch globs over node ids,
    ``hidden`` the test files kept outside the repository (see :mod:`hidden_spec`)."""

    id: str
    text: str
    tests: tuple[str, ...] = ()
    hidden: tuple[HiddenTest, ...] = ()


class HardGate(NamedTuple):
    """A gate that must pass: ``acceptance``, ``pass_to_pass``, ``tests`` or ``command``."""

    id: str
    kind: str
    run: tuple[str, ...] = ()
    expect_exit: int = 0
    timeout: float = 300.0
    tests: tuple[str, ...] = ()


class MeasuredGate(NamedTuple):
    """A metric compared with a threshold; ``source`` tells the sensor where to look."""

    id: str
    metric: str
    op: str
    threshold: float
    unit: str = ""
    aggregate: str = "last"
    source: Mapping[str, Any] = _EMPTY


class Protect(NamedTuple):
    """Extra protected globs, globs the candidate may change, and whether defaults apply."""

    paths: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    defaults: bool = True


class TamperAllow(NamedTuple):
    """One reward rule turned off for the paths matching ``paths``."""

    rule: str
    paths: tuple[str, ...]


class TamperSettings(NamedTuple):
    """``tamper:``: reward-rule allowances, and whether the referee runs twins of the
    acceptance tests in the main run."""

    allow: tuple[TamperAllow, ...] = ()
    twins_enabled: bool = True
    # every passing acceptance test must be cross-checked by its twins; one that is not makes
    # the verdict an error instead of a line in the ``twins`` check
    twins_required: bool = False

    def allows(self, rule: str, path: str) -> bool:
        return any(a.rule == rule and matches_any(path, a.paths) for a in self.allow)


class Boundaries(NamedTuple):
    """Where a candidate may write (``allow``; empty means anywhere) and may never (``deny``)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


DEFAULT_PROTECTED_BRANCHES: tuple[str, ...] = ("main", "master", "release/*", "production")


class PushSettings(NamedTuple):
    """``push:``: which branches the pre-push hook treats as protected, and whether the
    contract's gates run for every push or only for pushes to those (work in progress on a
    feature branch is not held to "done"). Secrets, force pushes and deletions are checked
    on every push regardless."""

    protected: tuple[str, ...] = DEFAULT_PROTECTED_BRANCHES
    gates: str = "protected"  # protected | always


class StopWhen(NamedTuple):
    """``stop_when:``: the loop's no-progress window, whether an A-B-A-B oscillation stops it,
    and the paths whose touch waits for a person."""

    no_progress: int = 3
    oscillation: bool = True
    paths_touched: tuple[str, ...] = ()


class JudgedSettings(NamedTuple):
    """``judged:``: the matrix's thresholds, and the rows judges score (None: all of the
    matrix's rows)."""

    min_score: float = 6.0
    spread_threshold: float = 3.0
    dissent_threshold: float = 3.0
    rows: tuple[str, ...] | None = None


class ContestSettings(NamedTuple):
    """``contest:``: the task's domain and tags (lessons and routes; no domain means
    ``contract.<id>``), the attempts per seat, how many seats work at once, the prompt's
    lesson budget in characters, and the cheat-propensity probes each seat must have."""

    domain: str | None = None
    tags: tuple[str, ...] = ()
    attempts: int = 3
    parallel: int = 4
    lesson_chars: int = 2000
    probe: int = 0


DEFAULT_VERIFY_WORKFLOW = ".github/workflows/loop-contract-verify.yml"


class GithubSettings(NamedTuple):
    """``github:``: the contest's base branch (None: the repository's default), the verify
    workflow whose runs may speak for a candidate, the paths no candidate may touch there,
    and whether a verdict must come from the sandbox."""

    base: str | None = None
    verify_workflow: str = DEFAULT_VERIFY_WORKFLOW
    protect: tuple[str, ...] = ()
    require_sandbox: bool = True


class BracketSettings(NamedTuple):
    """``bracket:``: how many candidates each round cuts (a number, or ``"halve"``) and how
    many reach the final."""

    cut: int | Literal["halve"] = 2
    final: int = 2


class Budget(NamedTuple):
    iterations: int | None = None
    minutes: float | None = None
    tokens: int | None = None
    usd: float | None = None


class PytestSettings(NamedTuple):
    """Verifier-side pytest settings: extra args, extra allowed plugins, run timeout, and the
    project's test environment (interpreter, ``PYTHONPATH`` inside the tree, variables)."""

    args: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    timeout: float = 1800.0
    python: str | None = None
    reruns: int = 0
    stability_runs: int = 1  # runs of the suite at baseline; 2+ finds flaky pass-to-pass tests
    include_untracked: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = ()
    env: Mapping[str, str] = _EMPTY


class Contract(NamedTuple):
    path: Path
    sha256: str
    version: int
    id: str
    goal: str
    mode: str
    dod: tuple[DodItem, ...]
    hard_gates: tuple[HardGate, ...]
    measured_gates: tuple[MeasuredGate, ...] = ()
    protect: Protect = Protect()
    boundaries: Boundaries = Boundaries()
    constraints: tuple[str, ...] = ()
    budget: Budget = Budget()
    stop_when: StopWhen = StopWhen()
    checkpoints: Mapping[str, Any] = _EMPTY
    push: PushSettings = PushSettings()
    pytest: PytestSettings = PytestSettings()
    tamper: TamperSettings = TamperSettings()
    judged: JudgedSettings = JudgedSettings()
    bracket: BracketSettings = BracketSettings()
    contest: ContestSettings = ContestSettings()
    seats: tuple[Mapping[str, Any], ...] = ()
    github: GithubSettings = GithubSettings()
    egress_allow: tuple[str, ...] | None = None
    isolation: str = "auto"
    on_item_done: tuple[str, ...] = ()
    turn_timeout: float = 1800.0
    review: str | None = None  # the seat whose judge command reviews a verify's diff
    raw: Mapping[str, Any] = _EMPTY

    def acceptance_selectors(self) -> tuple[str, ...]:
        """Every visible selector named by a DoD item, in contract order."""
        return tuple(sel for item in self.dod for sel in item.tests)

    def hidden_tests(self) -> tuple[HiddenTest, ...]:
        return tuple(test for item in self.dod for test in item.hidden)

    def coverage_run_gates(self) -> tuple[MeasuredGate, ...]:
        """The measured gates that read coverage the verifier's own run measures (no report
        ``file`` of the project's): those runs go through ``python -m coverage run``."""
        return tuple(
            gate
            for gate in self.measured_gates
            if gate.metric.startswith("coverage.") and not gate.source.get("file")
        )

    def scored_dod(self) -> tuple[DodItem, ...]:
        """The DoD items as the gates score them: a hidden test's file (its place in the
        scratch tree) is one more selector of its item, so its node ids are acceptance tests
        and a hidden file that ran no test is a missing one."""
        return tuple(
            DodItem(item.id, item.text, (*item.tests, *(h.to for h in item.hidden)))
            if item.hidden
            else item
            for item in self.dod
        )


def load_contract(path: str | Path) -> Contract:
    """Read, validate and build a contract; raise :class:`ContractError` on any problem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ContractError(
            "contract file not found (create one with 'loop-contract init')", file=str(p)
        ) from None
    except OSError as exc:
        raise ContractError(f"cannot read contract: {exc.strerror}", file=str(p)) from None
    return parse_contract(data, p)


def working_copy(root: Path, pinned: Contract) -> Contract | None:
    """The pinned contract's file as it is now in ``root``'s work tree, or None when it cannot
    be read or is invalid. Only for messages that say how the file and the pin differ: the
    rules always come from the pin."""
    try:
        return parse_contract((root / pinned.path).read_bytes(), pinned.path)
    except (OSError, ContractError):
        return None


def parse_contract(data: bytes, path: Path) -> Contract:
    # imported here: jsonschema is slow to load, and parse_validated (the inner run) skips it
    from pytest_loopcontract.contract import schema as contract_schema

    document = contract_schema.validate_document(data, str(path))
    return build_validated(document, path, hashlib.sha256(data).hexdigest())


def parse_validated(data: bytes, path: Path) -> Contract:
    """Build a contract whose exact bytes were validated before (their SHA-256 is pinned in a
    baseline). Skips the schema pass, which costs more than a short test run can spare."""
    document = validated_document(data)
    if document is None:
        return parse_contract(data, path)
    return build_validated(document, path, hashlib.sha256(data).hexdigest())


def validated_document(data: bytes) -> dict[str, Any] | None:
    """The YAML document of bytes validated before, or None when it is not a mapping."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(data, Loader=loader)  # a safe loader (C or Python)
    return document if isinstance(document, dict) else None


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _push(raw: Mapping[str, Any]) -> PushSettings:
    return PushSettings(
        protected=_strings(raw["protected"]) if "protected" in raw else DEFAULT_PROTECTED_BRANCHES,
        gates=str(raw.get("gates", "protected")),
    )


def _stop_when(raw: Mapping[str, Any]) -> StopWhen:
    default = StopWhen()
    return StopWhen(
        no_progress=int(raw.get("no_progress", default.no_progress)),
        oscillation=bool(raw.get("oscillation", default.oscillation)),
        paths_touched=_strings(raw.get("paths_touched")),
    )


def _judged(raw: Mapping[str, Any]) -> JudgedSettings:
    default = JudgedSettings()
    return JudgedSettings(
        min_score=float(raw.get("min_score", default.min_score)),
        spread_threshold=float(raw.get("spread_threshold", default.spread_threshold)),
        dissent_threshold=float(raw.get("dissent_threshold", default.dissent_threshold)),
        rows=_strings(raw["rows"]) if raw.get("rows") else None,
    )


def _contest(raw: Mapping[str, Any]) -> ContestSettings:
    """Zero attempts or zero parallel seats mean the default (the schema allows neither)."""
    default = ContestSettings()
    return ContestSettings(
        domain=str(raw["domain"]) if raw.get("domain") else None,
        tags=_strings(raw.get("tags")),
        attempts=int(raw.get("attempts") or default.attempts),
        parallel=int(raw.get("parallel") or default.parallel),
        lesson_chars=int(raw.get("lesson_chars", default.lesson_chars)),
        probe=int(raw.get("probe") or default.probe),
    )


def _github(raw: Mapping[str, Any]) -> GithubSettings:
    default = GithubSettings()
    return GithubSettings(
        base=str(raw["base"]) if raw.get("base") else None,
        verify_workflow=str(raw.get("verify_workflow") or default.verify_workflow),
        protect=_strings(raw.get("protect")),
        require_sandbox=raw.get("require_sandbox", True) is not False,
    )


def _bracket(raw: Mapping[str, Any]) -> BracketSettings:
    """The schema allows a whole number of 1 or more, or ``"halve"``."""
    default = BracketSettings()
    cut = raw.get("cut", default.cut)
    return BracketSettings(
        cut="halve" if cut == "halve" else int(cut),
        final=int(raw.get("final", default.final)),
    )


def build_validated(doc: Mapping[str, Any], path: Path, sha256: str) -> Contract:
    """The typed contract from a document that passed the schema (now or at baseline), one
    section at a time."""
    gates = doc.get("gates") or {}
    return Contract(
        path=path,
        sha256=sha256,
        version=int(doc["version"]),
        id=str(doc["id"]),
        goal=str(doc.get("goal", "")),
        mode=str(doc.get("mode", "fix")),
        dod=_dod(doc.get("dod") or ()),
        hard_gates=_hard_gates(gates.get("hard")),
        measured_gates=_measured_gates(gates.get("measured") or ()),
        protect=_protect(doc.get("protect") or {}),
        boundaries=_boundaries(doc.get("boundaries") or {}),
        constraints=_strings(doc.get("constraints")),
        budget=_budget(doc.get("budget") or {}),
        stop_when=_stop_when(doc.get("stop_when") or {}),
        checkpoints=dict(doc.get("checkpoints") or {}),
        push=_push(doc.get("push") or {}),
        pytest=_pytest_settings(doc.get("pytest") or {}),
        tamper=_tamper(doc.get("tamper") or {}),
        judged=_judged(doc.get("judged") or {}),
        bracket=_bracket(doc.get("bracket") or {}),
        contest=_contest(doc.get("contest") or {}),
        seats=tuple(dict(s) for s in doc.get("seats") or ()),
        github=_github(doc.get("github") or {}),
        egress_allow=_strings(doc["egress"].get("allow")) if "egress" in doc else None,
        isolation=str(doc.get("isolation", "auto")),
        on_item_done=_strings(doc.get("on_item_done")),
        turn_timeout=float(doc.get("turn_timeout", 1800)),
        review=str(doc["review"]["seat"]) if "review" in doc else None,
        raw=dict(doc),
    )


def _dod(items: Iterable[Mapping[str, Any]]) -> tuple[DodItem, ...]:
    return tuple(
        DodItem(
            id=str(item["id"]),
            text=str(item.get("text", "")),
            tests=_strings(item.get("tests")),
            hidden=parse_hidden(item.get("hidden"), _strings(item.get("tests"))),
        )
        for item in items
    )


def _hard_gates(raw: Iterable[Mapping[str, Any]] | None) -> tuple[HardGate, ...]:
    """The hard gates; none given means the default acceptance and no-regressions gates."""
    if raw is None:
        raw = [
            {"id": "acceptance", "kind": "acceptance"},
            {"id": "no-regressions", "kind": "pass_to_pass"},
        ]
    return tuple(
        HardGate(
            id=str(g["id"]),
            kind=str(g["kind"]),
            run=_strings(g.get("run")),
            expect_exit=int(g.get("expect_exit", 0)),
            timeout=float(g.get("timeout", 300)),
            tests=_strings(g.get("tests")),
        )
        for g in raw
    )


def _measured_gates(raw: Iterable[Mapping[str, Any]]) -> tuple[MeasuredGate, ...]:
    return tuple(
        MeasuredGate(
            id=str(g["id"]),
            metric=str(g["metric"]),
            op=str(g["op"]),
            threshold=float(g["threshold"]),
            unit=str(g.get("unit", "")),
            aggregate=str(g.get("aggregate", "last")),
            source=dict(g.get("source") or {}),
        )
        for g in raw
    )


def _protect(raw: Mapping[str, Any] | list[Any]) -> Protect:
    """``protect`` as a mapping, or as a bare list of paths."""
    if isinstance(raw, list):
        raw = {"paths": raw}
    return Protect(
        paths=_strings(raw.get("paths")),
        allow=_strings(raw.get("allow")),
        defaults=bool(raw.get("defaults", True)),
    )


def _boundaries(raw: Mapping[str, Any]) -> Boundaries:
    return Boundaries(allow=_strings(raw.get("allow")), deny=_strings(raw.get("deny")))


def _budget(raw: Mapping[str, Any]) -> Budget:
    return Budget(
        iterations=raw.get("iterations"),
        minutes=raw.get("minutes"),
        tokens=raw.get("tokens"),
        usd=raw.get("usd"),
    )


def _pytest_settings(raw: Mapping[str, Any]) -> PytestSettings:
    return PytestSettings(
        args=_strings(raw.get("args")),
        plugins=_strings(raw.get("plugins")),
        timeout=float(raw.get("timeout", 1800)),
        python=str(raw["python"]) if raw.get("python") else None,
        pythonpath=_strings(raw.get("pythonpath")),
        reruns=int(raw.get("reruns", 0)),
        stability_runs=int(raw.get("stability_runs", 1)),
        include_untracked=_strings(raw.get("include_untracked")),
        env={str(k): str(v) for k, v in dict(raw.get("env") or {}).items()},
    )


def _tamper(raw: Mapping[str, Any]) -> TamperSettings:
    twins = raw.get("twins") or {}
    return TamperSettings(
        allow=tuple(
            TamperAllow(str(a["rule"]), _strings(a.get("paths"))) for a in raw.get("allow") or ()
        ),
        twins_enabled=bool(twins.get("enabled", True)),
        twins_required=bool(twins.get("require", False)),
    )
