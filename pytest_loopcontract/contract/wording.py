"""Plain words for a contract's values and places: the field path as a reader writes it
(``gates.measured[0].op``), a value as its author wrote it, a near-miss suggestion, and the
:class:`ContractError` placed at a YAML mark. Shared by the YAML reader and the schema's
explanations, so every contract error is worded one way."""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Sequence
from typing import Final

from yaml.error import Mark

from pytest_loopcontract.errors import ContractError

__all__ = ["ROOT_LABEL", "FieldPath", "contract_error", "describe", "render", "show", "suggestion"]

FieldPath = tuple[str | int, ...]

ROOT_LABEL: Final = "(document)"


def contract_error(message: str, mark: Mark, path: FieldPath, filename: str) -> ContractError:
    return ContractError(
        message, file=filename, line=mark.line + 1, column=mark.column + 1, field_path=render(path)
    )


def render(path: FieldPath) -> str:
    """``("gates", "measured", 0, "op")`` -> ``gates.measured[0].op``."""
    if not path:
        return ROOT_LABEL
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def describe(value: object) -> str:
    """Name a YAML value the way its author wrote it, including YAML's surprises (yes -> true)."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {show(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return f"a {type(value).__name__} value"


def show(value: object) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return describe(value)


def suggestion(value: object, choices: Sequence[object]) -> str:
    """``; did you mean 'x'?`` for a near miss, including swapped characters such as ``=>``."""
    if not isinstance(value, str):
        return ""
    words = [choice for choice in choices if isinstance(choice, str)]
    close = [word for word in words if sorted(word) == sorted(value)]
    close = close or difflib.get_close_matches(value, words, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""
