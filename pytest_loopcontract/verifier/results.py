"""What one pytest run produced, in a shape that survives a trip through JSON.

The plugin writes this (the "raw results") inside the process under test; the isolated launcher
reads it back and cross-checks it. Keeping it a plain data model lets both sides share one
definition without either trusting the other's code paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

__all__ = ["CapabilityUse", "RecordedMetric", "RunResults", "TestRecord"]

# Outcomes, from best to worst as far as an acceptance test is concerned.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected", "missing")


class TestRecord(NamedTuple):
    """One test's final outcome; ``when`` names the phase that decided it.

    A named tuple: a run holds one per test through the verdict's making (``sys.getsizeof``:
    80 bytes each, against 352 for an instance and its ``__dict__``), and the in-process run
    loads this module before its first test (see :mod:`pytest_loopcontract.contract.model`)."""

    nodeid: str
    outcome: str
    duration: float = 0.0
    when: str = "call"
    message: str = ""


TestRecord.__test__ = False  # type: ignore[attr-defined]  # not a pytest test class


class RecordedMetric(NamedTuple):
    """A value a test recorded through the ``loop_metric`` fixture."""

    nodeid: str
    name: str
    value: float


class CapabilityUse(NamedTuple):
    """A governed capability that code of the candidate used in the run (``inner/policy.py``):
    ``severity`` tamper (it was denied) or evidence."""

    kind: str
    severity: str
    path: str
    line: int
    detail: str


@dataclass
class RunResults:
    nonce: str = ""
    tests: list[TestRecord] = field(default_factory=list)
    metrics: list[RecordedMetric] = field(default_factory=list)
    collect_errors: list[dict[str, str]] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    dod_marks: dict[str, list[str]] = field(default_factory=dict)
    egress: list[dict[str, Any]] = field(default_factory=list)
    doctests: dict[str, str] = field(default_factory=dict)  # nodeid -> digest of examples
    outside_imports: list[dict[str, str]] = field(default_factory=list)
    module_origins: dict[str, str] = field(default_factory=dict)  # module -> file in the tree
    runtime_patches: list[dict[str, str]] = field(default_factory=list)  # {object, during}
    # the referee's items (:mod:`tamper.twins`): (node id, what it stands for, kind); None when
    # the run carried no referee section at all
    referee_items: list[tuple[str, str, str]] | None = None
    referee_errors: list[str] = field(default_factory=list)
    # names of an acceptance test's module bound otherwise than its pinned source binds them:
    # (what it stands for, the name, what it is bound to instead, when it was seen)
    referee_rebound: list[tuple[str, str, str, str]] = field(default_factory=list)
    capability_uses: list[CapabilityUse] = field(default_factory=list)
    # at baseline: the (file, capability) pairs the project's own code used
    capability_profile: list[tuple[str, str]] = field(default_factory=list)
    pytest_exitstatus: int | None = None
    testsfailed: int = 0
    testscollected: int = 0
    duration: float = 0.0

    def outcomes(self) -> dict[str, str]:
        return {t.nodeid: t.outcome for t in self.tests}

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)  # the named tuples below would stay tuples (JSON arrays)
        data["tests"] = [t._asdict() for t in self.tests]
        data["metrics"] = [m._asdict() for m in self.metrics]
        items, errors = data.pop("referee_items"), data.pop("referee_errors")
        rebound = data.pop("referee_rebound")
        data.pop("capability_uses")
        data["policy"] = [
            *(u._asdict() for u in self.capability_uses),
            *({"profile": list(p)} for p in data.pop("capability_profile")),
        ]
        if items is not None:
            data["referee"] = {
                "items": [list(i) for i in items],
                "errors": errors,
                "rebound": [list(r) for r in rebound],
            }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResults:
        """Rebuild from untrusted JSON; raise ``ValueError`` on anything malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("raw results are not an object")
        try:
            tests = [_record(t) for t in _seq(data.get("tests"))]
            metrics = [
                RecordedMetric(str(m["nodeid"]), str(m["name"]), float(m["value"]))
                for m in _seq(data.get("metrics"))
            ]
            return cls(
                nonce=str(data.get("nonce", "")),
                tests=tests,
                metrics=metrics,
                collect_errors=[
                    {str(k): str(v) for k, v in dict(e).items()}
                    for e in _seq(data.get("collect_errors"))
                ],
                deselected=[str(d) for d in _seq(data.get("deselected"))],
                collected=[str(c) for c in _seq(data.get("collected"))],
                plugins=[str(p) for p in _seq(data.get("plugins"))],
                dod_marks={
                    str(k): [str(n) for n in _seq(v)]
                    for k, v in dict(data.get("dod_marks") or {}).items()
                },
                egress=[dict(e) for e in _seq(data.get("egress")) if isinstance(e, Mapping)],
                doctests={str(k): str(v) for k, v in dict(data.get("doctests") or {}).items()},
                outside_imports=[
                    {str(k): str(v) for k, v in dict(e).items()}
                    for e in _seq(data.get("outside_imports"))
                    if isinstance(e, Mapping)
                ],
                module_origins={
                    str(k): str(v) for k, v in dict(data.get("module_origins") or {}).items()
                },
                runtime_patches=[
                    {str(k): str(v) for k, v in dict(e).items()}
                    for e in _seq(data.get("runtime_patches"))
                    if isinstance(e, Mapping)
                ],
                referee_items=_referee_items(data.get("referee")),
                referee_errors=[
                    str(e) for e in _seq(dict(data.get("referee") or {}).get("errors"))
                ],
                referee_rebound=_rebound(data.get("referee")),
                capability_uses=[
                    CapabilityUse(
                        str(e["kind"]),
                        str(e["severity"]),
                        str(e["path"]),
                        int(e["line"]),
                        str(e.get("detail", "")),
                    )
                    for e in _seq(data.get("policy"))
                    if isinstance(e, Mapping) and "profile" not in e
                ],
                capability_profile=sorted(
                    {
                        (str(e["profile"][0]), str(e["profile"][1]))
                        for e in _seq(data.get("policy"))
                        if isinstance(e, Mapping) and "profile" in e
                    }
                ),
                pytest_exitstatus=(
                    None
                    if data.get("pytest_exitstatus") is None
                    else int(data["pytest_exitstatus"])
                ),
                testsfailed=int(data.get("testsfailed", 0)),
                testscollected=int(data.get("testscollected", 0)),
                duration=float(data.get("duration", 0.0)),
            )
        except (TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f"malformed raw results: {exc}") from exc


def _referee_items(section: Any) -> list[tuple[str, str, str]] | None:
    if section is None:
        return None
    items = []
    for entry in _seq(dict(section).get("items")):
        nodeid, of, kind = _seq(entry)
        items.append((str(nodeid), str(of), str(kind)))
    return items


def _rebound(section: Any) -> list[tuple[str, str, str, str]]:
    out = []
    for entry in _seq(dict(section or {}).get("rebound")):
        of, name, instead, when = _seq(entry)
        out.append((str(of), str(name), str(instead), str(when)))
    return out


def _seq(value: Any) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError("expected a list in raw results")
    return value


def _record(item: Any) -> TestRecord:
    """One test record of raw results, its fields read in order (no dict of the known keys
    built per test to pass on as ``TestRecord(**...)``)."""
    if not isinstance(item, Mapping):
        raise ValueError("test record is not an object")
    return TestRecord(
        str(item["nodeid"]),
        str(item["outcome"]),
        float(item.get("duration", 0.0)),
        item.get("when", "call"),
        item.get("message", ""),
    )
