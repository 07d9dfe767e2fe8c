"""Turn the JSON Schema validator's errors into one sentence each, placed at the field.

One explainer per schema keyword (``type``, ``enum``, ``required``, ``additionalProperties``,
...); the schema's own ``x-expected`` and ``x-when`` notes give the wording where a type name
would not help. Each explanation is a :class:`Problem` with a sort position, so the first
problem in document order is the one reported.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema.exceptions import ValidationError
from yaml.error import Mark

from pytest_loopcontract.contract.wording import (
    FieldPath,
    contract_error,
    describe,
    render,
    show,
    suggestion,
)
from pytest_loopcontract.contract.yaml_reader import Places
from pytest_loopcontract.errors import ContractError

__all__ = ["Problem", "explain", "sort_key"]

_TYPE_WORDS: Final = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "nothing",
}


@dataclass(frozen=True)
class Problem:
    """One finding, with a sort position that may differ from where it is reported.

    A missing key is reported at its mapping but sorted at the mapping's end, so that an unknown
    key inside the mapping (often the same key, misspelt) is reported first.
    """

    message: str
    path: FieldPath
    mark: Mark
    order: int
    conditional: bool = False  # caused by another field's value; report plain errors first

    def error(self, filename: str) -> ContractError:
        return contract_error(self.message, self.mark, self.path, filename)


def sort_key(problem: Problem) -> tuple[int, bool, str, str]:
    return (problem.order, problem.conditional, render(problem.path), problem.message)


def explain(error: ValidationError, places: Places) -> Problem:
    explain = _EXPLAINERS.get(str(error.validator), _explain_other)
    return explain(error, places)


def _instance(error: ValidationError) -> Any:
    """The failing value (the stubs allow an "unset" sentinel that validation never leaves)."""
    value: Any = error.instance
    return value


def _rule(error: ValidationError) -> Any:
    """The failing keyword's value in the schema, e.g. the list of a ``required``."""
    value: Any = error.validator_value
    return value


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    return error.schema if isinstance(error.schema, Mapping) else {}


def _expected(schema: Mapping[str, Any]) -> str:
    """Plain words for what a schema accepts: its ``x-expected`` note, else its type."""
    if "x-expected" in schema:
        return str(schema["x-expected"])
    types = schema.get("type", [])
    names = [types] if isinstance(types, str) else list(types)
    return " or ".join(_TYPE_WORDS.get(name, name) for name in names) or "a valid value"


def _at_value(error: ValidationError, places: Places, message: str) -> Problem:
    path = tuple(error.absolute_path)
    mark = places.value_mark(path)
    return Problem(message, path, mark, mark.index)


def _explain_type(error: ValidationError, places: Places) -> Problem:
    value, wanted = _instance(error), _rule(error)
    message = f"expected {_expected(_schema_of(error))}, got {describe(value)}"
    wants_text = "string" in ([wanted] if isinstance(wanted, str) else wanted)
    if wants_text and isinstance(value, (bool, int, float, datetime.date)):
        message += "; put it in quotes to make it text"
    return _at_value(error, places, message)


def _explain_enum(error: ValidationError, places: Places) -> Problem:
    value, choices = _instance(error), list(_rule(error))
    expected = _schema_of(error).get("x-expected") or "one of " + ", ".join(map(show, choices))
    message = f"expected {expected}, got {show(value)}" + suggestion(value, choices)
    return _at_value(error, places, message)


def _explain_const(error: ValidationError, places: Places) -> Problem:
    expected = _schema_of(error).get("x-expected") or show(_rule(error))
    return _at_value(error, places, f"expected {expected}, got {show(_instance(error))}")


def _explain_pattern(error: ValidationError, places: Places) -> Problem:
    """Patterns carry an ``x-expected`` wording and ``examples`` to suggest near misses from."""
    value, schema = _instance(error), _schema_of(error)
    expected = schema.get("x-expected") or f"text matching {_rule(error)}"
    message = f"expected {expected}, got {show(value)}"
    return _at_value(error, places, message + suggestion(value, schema.get("examples", [])))


def _explain_bound(error: ValidationError, places: Places) -> Problem:
    words = {"minimum": "at least", "exclusiveMinimum": "more than", "maximum": "at most"}
    bound = f"{words[str(error.validator)]} {_rule(error)}"
    return _at_value(error, places, f"must be {bound}, got {_instance(error)}")


def _explain_min_items(error: ValidationError, places: Places) -> Problem:
    count = int(_rule(error))
    wanted = "must not be an empty list" if count == 1 else f"must list at least {count} items"
    return _at_value(error, places, wanted)


def _explain_min_length(error: ValidationError, places: Places) -> Problem:
    return _at_value(error, places, "must not be empty")


def _explain_unique(error: ValidationError, places: Places) -> Problem:
    items = list(_instance(error))
    index = next(i for i, item in enumerate(items) if item in items[:i])
    path = (*error.absolute_path, index)
    mark = places.value_mark(path)
    return Problem(f"{show(items[index])} is listed twice", path, mark, mark.index)


def _explain_not(error: ValidationError, places: Places) -> Problem:
    """Only ``{"not": {}}`` under an ``else`` branch: a key that the object's kind forbids."""
    path = tuple(error.absolute_path)
    when = _schema_of(error).get("x-when")
    detail = f"is only allowed when {when}" if when else "is not allowed here"
    mark = places.key_mark(path)
    return Problem(f"key '{path[-1]}' {detail}", path, mark, places.end(path[:-1]), True)


def _explain_required(error: ValidationError, places: Places) -> Problem:
    path = tuple(error.absolute_path)
    # jsonschema yields one error per missing key without naming it; report the first in order.
    missing = next(str(key) for key in _rule(error) if key not in _instance(error))
    when = _schema_of(error).get("x-when")
    message = f"missing required key '{missing}'" + (f" (needed when {when})" if when else "")
    return Problem(message, (*path, missing), places.key_mark(path), places.end(path), bool(when))


def _explain_unknown_key(error: ValidationError, places: Places) -> Problem:
    path = tuple(error.absolute_path)
    allowed = [str(key) for key in _schema_of(error).get("properties", {})]
    unknown = [key for key in _instance(error) if key not in allowed]
    key = min(unknown, key=lambda k: places.key_mark((*path, k)).index)
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "allowed keys: " + ", ".join(allowed)
    mark = places.key_mark((*path, key))
    return Problem(f"unknown key '{key}'; {hint}", (*path, key), mark, mark.index)


def _explain_any_of(error: ValidationError, places: Places) -> Problem:
    """Explain the branch that fits the value's type; if none fits, list what would."""
    depth = len(error.absolute_path)
    wrong_type = {
        sub.relative_schema_path[0]
        for sub in error.context
        if sub.validator == "type" and len(sub.absolute_path) == depth
    }
    fitting = [sub for sub in error.context if sub.relative_schema_path[0] not in wrong_type]
    if fitting:
        return min((explain(sub, places) for sub in fitting), key=sort_key)
    message = f"expected {_expected(_schema_of(error))}, got {describe(_instance(error))}"
    return _at_value(error, places, message)


def _explain_other(error: ValidationError, places: Places) -> Problem:
    return _at_value(error, places, error.message)


_EXPLAINERS: Final[dict[str, Callable[[ValidationError, Places], Problem]]] = {
    "type": _explain_type,
    "enum": _explain_enum,
    "const": _explain_const,
    "pattern": _explain_pattern,
    "minimum": _explain_bound,
    "exclusiveMinimum": _explain_bound,
    "maximum": _explain_bound,
    "minItems": _explain_min_items,
    "minLength": _explain_min_length,
    "uniqueItems": _explain_unique,
    "not": _explain_not,
    "required": _explain_required,
    "additionalProperties": _explain_unknown_key,
    "anyOf": _explain_any_of,
}
