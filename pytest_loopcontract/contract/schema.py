"""Parse ``loopcontract.yml`` and check it against the contract JSON Schema.

A contract that is read wrongly is worse than one that is rejected: a misspelt key that is
silently ignored drops a gate, and the agent then passes a contract nobody wrote. So this module
reads YAML through the node tree (it knows the line and column of every key and value), refuses
duplicate keys and odd tags, validates with the reference JSON Schema implementation, and turns
the first problem in document order into one :class:`ContractError` that names file, line,
column and field path in plain words. No YAML or jsonschema exception escapes.

The parts: :mod:`.yaml_reader` reads the bytes and the YAML with every value's place,
:mod:`.schema_messages` words the validator's errors, :mod:`.wording` names paths and values;
this module runs them in order and adds the checks a schema cannot express.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, Final

import jsonschema

from pytest_loopcontract.contract.schema_messages import Problem, explain, sort_key
from pytest_loopcontract.contract.wording import FieldPath, contract_error, render
from pytest_loopcontract.contract.yaml_reader import Places, decode, document_shape_error, parse
from pytest_loopcontract.errors import ContractError

__all__ = ["CONTRACT_SCHEMA", "error_at", "load_schema", "validate_document"]

CONTRACT_SCHEMA: Final = "contract.schema.json"
"""File name of the contract schema inside the package's ``schemas`` folder."""

_ONE_PER_CONTRACT: Final = frozenset({"acceptance", "pass_to_pass"})


def load_schema() -> dict[str, Any]:
    """Return a fresh copy of the contract schema shipped with the package."""
    resource = resources.files("pytest_loopcontract") / "schemas" / CONTRACT_SCHEMA
    schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return schema


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema())


def validate_document(data: bytes, filename: str) -> Mapping[str, Any]:
    """Return the contract in ``data``, or raise :class:`ContractError` for its first problem.

    The returned mapping is plain data (dicts, lists, scalars) that matches the schema and has
    passed the checks a schema cannot express (unique ids, no repeated gate kinds).
    """
    text = decode(data, filename)
    document, nodes = parse(text, filename)
    places = Places(nodes)
    if not isinstance(document, dict):
        raise document_shape_error(document, places, filename)
    problems = [explain(error, places) for error in _validator().iter_errors(document)]
    if not problems:
        problems = _semantic_problems(document, places)
    if problems:
        raise min(problems, key=sort_key).error(filename)
    return document


# --- checks the schema cannot express ---------------------------------------------------------


def _semantic_problems(doc: Mapping[str, Any], places: Places) -> list[Problem]:
    """Ids must be unique (verdicts and lessons refer to them) and some gate must remain."""
    gates = doc.get("gates", {})
    hard = _entries(("gates", "hard"), gates.get("hard", []))
    measured = _entries(("gates", "measured"), gates.get("measured", []))
    once = [(path, gate) for path, gate in hard if gate["kind"] in _ONE_PER_CONTRACT]
    checkpoints = _entries(("checkpoints", "add"), doc.get("checkpoints", {}).get("add", []))
    return [
        *_duplicates(_entries(("dod",), doc.get("dod", [])), "id", "DoD id", places),
        *_duplicates(hard + measured, "id", "gate id", places),
        *_duplicates(once, "kind", "gate kind", places),
        *_duplicates(checkpoints, "id", "checkpoint id", places),
        *_duplicates(_entries(("seats",), doc.get("seats", [])), "name", "seat name", places),
        *_no_gates(gates, places),
        *_bad_regexes(checkpoints, places),
        *_hidden(doc, places),
        *_review_seat(doc, places),
    ]


def _review_seat(doc: Mapping[str, Any], places: Places) -> list[Problem]:
    """``review.seat`` must name a seat of the contract (its judge command reviews)."""
    wanted = (doc.get("review") or {}).get("seat")
    names = [str(seat.get("name")) for seat in doc.get("seats") or ()]
    if wanted is None or wanted in names:
        return []
    path: FieldPath = ("review", "seat")
    mark = places.value_mark(path)
    known = ", ".join(names) or "none"
    message = f"review.seat '{wanted}' names no seat of the contract (seats: {known})"
    return [Problem(message, path, mark, mark.index)]


def _hidden(doc: Mapping[str, Any], places: Places) -> list[Problem]:
    from pytest_loopcontract.contract.hidden import hidden_problems

    out = []
    for path, message in hidden_problems(doc):
        mark = places.value_mark(path)
        out.append(Problem(message, path, mark, mark.index))
    return out


def error_at(data: bytes, filename: str, path: FieldPath, message: str) -> ContractError:
    """A :class:`ContractError` for a problem found after validation (a hidden test file that
    is missing when the baseline reads it), placed at ``path``'s line in ``data``."""
    try:
        _, nodes = parse(decode(data, filename), filename)
        mark = Places(nodes).value_mark(path)
    except (ContractError, KeyError):
        return ContractError(message, file=filename, field_path=render(path))
    return contract_error(message, mark, path, filename)


def _bad_regexes(
    entries: Sequence[tuple[FieldPath, Mapping[str, Any]]], places: Places
) -> list[Problem]:
    """A checkpoint pattern that does not compile would silently never match."""
    problems = []
    for path, item in entries:
        try:
            re.compile(str(item["pattern"]))
        except re.error as exc:
            mark = places.value_mark((*path, "pattern"))
            problems.append(
                Problem(
                    f"not a valid regular expression: {exc}", (*path, "pattern"), mark, mark.index
                )
            )
    return problems


def _entries(
    path: FieldPath, items: Sequence[Mapping[str, Any]]
) -> list[tuple[FieldPath, Mapping[str, Any]]]:
    return [((*path, i), item) for i, item in enumerate(items)]


def _duplicates(
    entries: Sequence[tuple[FieldPath, Mapping[str, Any]]],
    field: str,
    noun: str,
    places: Places,
) -> list[Problem]:
    first: dict[str, FieldPath] = {}
    problems = []
    for path, item in entries:
        value = str(item[field])
        if value not in first:
            first[value] = path
            continue
        earlier = first[value]
        line = places.value_mark((*earlier, field)).line + 1
        mark = places.value_mark((*path, field))
        message = f"duplicate {noun} '{value}' (already used by {render(earlier)} at line {line})"
        problems.append(Problem(message, (*path, field), mark, mark.index))
    return problems


def _no_gates(gates: Mapping[str, Any], places: Places) -> list[Problem]:
    if gates.get("hard") != [] or gates.get("measured"):
        return []
    path: FieldPath = ("gates", "hard")
    mark = places.value_mark(path)
    message = (
        "an empty list leaves no gate, so any change would pass; list a gate, "
        "or remove 'hard' to get the default acceptance and no-regressions gates"
    )
    return [Problem(message, path, mark, mark.index)]
