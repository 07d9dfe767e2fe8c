"""The run result document's own checks: the JSON Schema, then names that point nowhere.

Why beside the renderers: every report trusts that the document it reads is whole, so a
caller (the engine after writing ``result.json``, the action before publishing, the tests)
validates it here first. The schema ships in the package
(``schemas/contest_result.schema.json``); the reference check catches what a schema cannot
say, such as a winner that is not a seat of the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from pytest_loopcontract.contest.report.view import Result

__all__ = ["validate_result"]


@cache
def _schema() -> dict[str, Any]:
    text = (
        resources.files("pytest_loopcontract")
        .joinpath("schemas/contest_result.schema.json")
        .read_text("utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def validate_result(document: Mapping[str, Any]) -> list[str]:
    """Problems with a run result document (empty when valid): JSON Schema errors first, then,
    for a document the schema accepts, names that point nowhere (a candidate, cell, round,
    winner or decision naming a seat the document does not list, a seat listed twice)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.path)))
    ]
    return errors or _reference_errors(document)


def _reference_errors(doc: Result) -> list[str]:
    names = [str(s["name"]) for s in doc["seats"]]
    known = set(names)
    errors = [f"seats: {name!r} is listed twice" for name in sorted(known) if names.count(name) > 1]

    def check(path: str, name: object) -> None:
        if name is not None and name not in known:
            errors.append(f"{path}: {name!r} is not a seat of this run")

    for i, cand in enumerate(doc["candidates"]):
        check(f"candidates/{i}/seat", cand["seat"])
        for j, other in enumerate(cand["same_tree_as"]):
            check(f"candidates/{i}/same_tree_as/{j}", other)
    matrix = doc["matrix"]
    if matrix is not None:
        for i, judge in enumerate(matrix["judges"]):
            check(f"matrix/judges/{i}/seat", judge["seat"])
        for i, cell in enumerate(matrix["cells"]):
            check(f"matrix/cells/{i}/judge", cell["judge"])
            check(f"matrix/cells/{i}/candidate", cell["candidate"])
        for label, score in matrix["candidates"].items():
            check(f"matrix/candidates/{label}", label)
            for i, dissent in enumerate(score["dissents"]):
                check(f"matrix/candidates/{label}/dissents/{i}/judge", dissent["judge"])
    bracket = doc["bracket"]
    if bracket is not None:
        for i, rnd in enumerate(bracket["rounds"]):
            for key in ("field_in", "field_out", "eliminated"):
                for j, name in enumerate(rnd[key]):
                    check(f"bracket/rounds/{i}/{key}/{j}", name)
        for j, name in enumerate(bracket["finalists"]):
            check(f"bracket/finalists/{j}", name)
        check("bracket/proposed_winner", bracket["proposed_winner"])
    check("winner", doc["winner"])
    if doc["decision"] is not None:
        check("decision/seat", doc["decision"]["seat"])
    return errors
