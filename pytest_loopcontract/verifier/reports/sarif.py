"""The verdict as SARIF 2.1.0: what code scanning shows as annotations on a pull request.

One rule per finding code: ``tamper/<code>`` for the verifier's tamper findings (reward hacks
in the diff, changed referee files, shadowed modules, ...) and ``checkpoint/<pattern>`` for
checkpoint evidence (secrets in the diff, dangerous commands in scripts), which the verdict
names by request id and the history records with file and line. A result without a known
place points at the contract file, since code scanning needs a location for every result.
The run's ``properties`` carry the verdict. Pure: verdict and evidence in, document out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_loopcontract.verdict import VerdictView

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "Evidence", "sarif_log"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
INFORMATION_URI = "https://pypi.org/project/pytest-loopcontract/"

# A pending checkpoint waits on a person (a warning); a denied one must be undone (an error).
_HINT = re.compile(r"\s*\[[^\]]*\]$")
_CHECKPOINT_LEVEL = {"checkpoint_pending": "warning", "checkpoint_denied": "error"}


@dataclass(frozen=True)
class Evidence:
    """One match behind a checkpoint reason: ``reason`` is ``checkpoint_pending`` or
    ``checkpoint_denied``, ``request`` its id (``cp-…``), ``pattern`` the checkpoint id."""

    reason: str
    request: str
    pattern: str
    message: str
    path: str = ""
    line: int | None = None


@dataclass
class _Rules:
    """The rules seen so far, in first-seen order, each once (``ruleIndex`` points here)."""

    rules: list[dict[str, Any]]
    index: dict[str, int]

    def of(self, rule_id: str, description: str, level: str, tags: Sequence[str]) -> int:
        if rule_id not in self.index:
            self.index[rule_id] = len(self.rules)
            self.rules.append(
                {
                    "id": rule_id,
                    "name": _camel(rule_id),
                    "shortDescription": {"text": description[:1000] or rule_id},
                    "defaultConfiguration": {"level": level},
                    "properties": {"tags": list(tags)},
                }
            )
        return self.index[rule_id]


def _camel(rule_id: str) -> str:
    words = rule_id.replace("/", "_").replace("-", "_").split("_")
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def _location(path: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"}}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _result(
    rules: _Rules, rule: tuple[str, str, str, Sequence[str]], message: str, path: str, line: Any
) -> dict[str, Any]:
    rule_id, description, level, tags = rule
    return {
        "ruleId": rule_id,
        "ruleIndex": rules.of(rule_id, description, level, tags),
        "level": level,
        "message": {"text": message or description or rule_id},
        "locations": [_location(path, line if isinstance(line, int) else None)],
    }


def _tamper_results(view: VerdictView, rules: _Rules, fallback: str) -> list[dict[str, Any]]:
    out = []
    for finding in view.findings():
        code = str(finding.get("code", "finding"))
        level = "note" if finding.get("allowed") else "error"
        allowed = " (allowed by the contract)" if finding.get("allowed") else ""
        rule = (f"tamper/{code}", f"tamper finding: {code}", level, ["tamper", "security"])
        message = f"{finding.get('message', '')}{allowed}"
        path = str(finding.get("path") or fallback)
        out.append(_result(rules, rule, message, path, finding.get("line")))
    return out


def _checkpoint_results(
    view: VerdictView, evidence: Sequence[Evidence], rules: _Rules, fallback: str
) -> list[dict[str, Any]]:
    """Results for each checkpoint reason: its evidence where the history has it, else the
    reason itself at the contract file."""
    out = []
    by_request: dict[str, list[Evidence]] = {}
    for item in evidence:
        by_request.setdefault(item.request, []).append(item)
    for reason in view.reasons():
        code = str(reason.get("code", ""))
        if code not in _CHECKPOINT_LEVEL:
            continue
        message = str(reason.get("message", ""))
        request = message.split(":", 1)[0]
        level = _CHECKPOINT_LEVEL[code]
        found = by_request.get(request) or []
        for item in found:
            why = _HINT.sub("", item.message)  # the rule says why; the result says what
            rule = (f"checkpoint/{item.pattern}", why, level, ["checkpoint"])
            text = f"{item.message} ({request}, {code})"
            out.append(_result(rules, rule, text, item.path or fallback, item.line))
        if not found:
            rule = (f"checkpoint/{code}", "a checkpoint needs a person", level, ["checkpoint"])
            out.append(_result(rules, rule, message, fallback, None))
    return out


def _run_properties(document: Mapping[str, Any]) -> dict[str, Any]:
    contract = document.get("contract") or {}
    environment = document.get("environment") or {}
    return {
        "verdict": document.get("verdict"),
        "exitCode": document.get("exit_code"),
        "contract": {k: contract.get(k) for k in ("id", "path", "sha256")},
        "trust": document.get("trust"),
        "isolation": document.get("isolation"),
        "commit": environment.get("commit"),
        "reasons": [dict(r) for r in VerdictView(document).reasons()],
        "summary": dict(document.get("summary") or {}),
    }


def sarif_log(document: Mapping[str, Any], evidence: Sequence[Evidence] = ()) -> dict[str, Any]:
    """The SARIF log of a verdict; ``evidence`` are the history's matches behind its
    checkpoint reasons (file, line, checkpoint id)."""
    view = VerdictView(document)
    contract = document.get("contract") or {}
    fallback = str(contract.get("path") or "loopcontract.yml")
    rules = _Rules([], {})
    results = _tamper_results(view, rules, fallback)
    results += _checkpoint_results(view, evidence, rules, fallback)
    tool = document.get("tool") or {}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "pytest-loopcontract",
                "version": str(tool.get("version") or "0"),
                "informationUri": INFORMATION_URI,
                "rules": rules.rules,
            }
        },
        "automationDetails": {"id": f"loop-contract/{contract.get('id') or 'contract'}/"},
        "results": results,
        "properties": _run_properties(document),
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
