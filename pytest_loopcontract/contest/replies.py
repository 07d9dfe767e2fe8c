"""Judge replies: untrusted text in, validated matrix cells out.

A judge is a model run by another vendor, and its stdout is data we did not write. This module
turns that text into :class:`~pytest_loopcontract.contest.matrix_model.Cell` objects the matrix can
trust, and nothing else gets through.

Why it works this way:

* **Tolerant of wrapping, strict about content.** Models like to wrap JSON in a fenced block or
  a sentence; :func:`extract_json` accepts the whole text, a fenced block, or the outermost
  ``{...}``. What is inside must be real JSON: no ``NaN``/``Infinity``, no duplicate keys (which
  would let two readers see two different replies), and a size cap.
* **A cell at a time.** One out-of-range score must not cost the other thirty-one cells, so every
  cell is checked on its own against the reply schema; a bad cell is discarded whole, with its
  reason, and the rest still count. Only a reply that is not an object with a ``scores`` list
  is an ``error``, which earns the judge one repair request.
* **Labels, not names.** A judge only ever saw labels (``A``, ``B``...). A label resolves to a
  seat through the map the packet was built with; an unknown label is discarded, and a label
  that would resolve to the judge itself or its own family is a programming error, raised.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pytest_loopcontract.contest.matrix_model import ROWS, Cell, family_key
from pytest_loopcontract.errors import LoopContractError
from pytest_loopcontract.fsio import StrictJSONError, loads_strict

__all__ = [
    "MAX_REPLY_BYTES",
    "DiscardedCell",
    "ParsedReply",
    "ReplyError",
    "extract_json",
    "parse_reply",
    "reply_schema",
    "validate_reply",
]

MAX_REPLY_BYTES = 256 * 1024
"""A reply longer than this is refused unread: a judge has no business printing more."""

_RAW_CHARS = 500
"""How much of a discarded cell is kept, for the record."""

_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)
_PACKAGE = __name__.split(".", 1)[0]


class ReplyError(LoopContractError):
    """The reply text holds no usable JSON document."""


@dataclass(frozen=True)
class DiscardedCell:
    """A cell of a reply that did not count: its position in ``scores``, why, and (the first
    500 characters of) what the judge wrote, as JSON."""

    index: int
    reason: str
    raw: str


@dataclass(frozen=True)
class ParsedReply:
    """A parsed reply. ``error`` is set (and ``cells``/``discarded`` are empty) when the reply as
    a whole is unusable: not JSON, or not an object with a ``scores`` list."""

    cells: tuple[Cell, ...]
    discarded: tuple[DiscardedCell, ...]
    error: str | None


# --------------------------------------------------------------------------------------------
# the schema


@cache
def _schema_text() -> str:
    return resources.files(_PACKAGE).joinpath("schemas/judge_reply.schema.json").read_text("utf-8")


def reply_schema() -> dict[str, Any]:
    """The JSON Schema of a judge reply (a fresh copy: callers may embed or edit it)."""
    loaded: dict[str, Any] = json.loads(_schema_text())
    return loaded


@cache
def _cell_schema() -> dict[str, Any]:
    cell: dict[str, Any] = copy.deepcopy(reply_schema()["$defs"]["cell"])
    # Rows are checked against the rows the packet asked for, with a clearer reason.
    cell["properties"]["row"] = {"type": "string"}
    return cell


def validate_reply(document: object) -> list[str]:
    """Schema errors of a whole reply document (empty when valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(reply_schema())
    return [_error_text(e) for e in _sorted_errors(validator.iter_errors(document))]


# --------------------------------------------------------------------------------------------
# extraction


def extract_json(text: str) -> object:
    """The JSON document in a judge's reply.

    Tried in order: the whole text; each fenced block (```` ```json ```` or a bare ```` ``` ````);
    the outermost ``{...}`` (first ``{`` to last ``}``). ``NaN``, ``Infinity``, numbers that
    overflow to infinity and duplicate object keys are refused, as is a reply over
    :data:`MAX_REPLY_BYTES`. Raises :class:`ReplyError`.
    """
    if not isinstance(text, str):
        raise ReplyError(f"the reply is {type(text).__name__}, not text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_REPLY_BYTES:
        raise ReplyError(f"the reply is {size} bytes, over the {MAX_REPLY_BYTES}-byte limit")
    stripped = text.strip()
    if not stripped:
        raise ReplyError("the reply is empty")

    attempts = [stripped]
    attempts += [m.group(1).strip() for m in _FENCE_RE.finditer(text)]
    first, last = stripped.find("{"), stripped.rfind("}")
    if 0 <= first < last:
        attempts.append(stripped[first : last + 1])

    first_error: str | None = None
    for candidate in attempts:
        try:
            return loads_strict(candidate)
        except StrictJSONError as exc:  # real JSON, but refused: no other slice will do
            raise ReplyError(str(exc)) from None
        except (ValueError, RecursionError) as exc:
            if first_error is None:
                first_error = _json_error(exc)
    raise ReplyError(f"no JSON document found ({first_error})")


def _json_error(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)[:200]


# --------------------------------------------------------------------------------------------
# parsing


def parse_reply(
    text: str,
    *,
    labels: Mapping[str, str],
    judge_seat: str,
    judge_family: str,
    rows: Sequence[str] = ROWS,
    seat_families: Mapping[str, str] | None = None,
) -> ParsedReply:
    """Validate a judge's reply and turn its cells into matrix cells.

    ``labels`` maps label -> seat, exactly as the packet was built; ``seat_families`` (seat ->
    family), when given, is used to assert that no label resolves to the judge's own family.
    Each cell is checked on its own: a missing field, a score outside 0-10, a confidence
    outside 0-1, a boolean or string where a number belongs, an empty or multi-line rationale,
    an unknown label or row, and every copy of a (label, row) pair given more than once are
    discarded with a reason. A reply that is not JSON, or not an object with a ``scores``
    list, sets ``error`` and yields no cells.
    """
    _check_labels(labels, judge_seat, judge_family, seat_families)
    wanted_rows = tuple(rows)
    unknown_rows = [row for row in wanted_rows if row not in ROWS]
    if unknown_rows or not wanted_rows:
        raise ValueError(f"rows must be a non-empty subset of {', '.join(ROWS)}")
    scores = _scores_list(text)
    if isinstance(scores, str):
        return ParsedReply((), (), scores)
    valid, discarded = _valid_items(scores, labels, wanted_rows)
    counts = Counter((item["candidate"], item["row"]) for _, item in valid)
    cells: list[Cell] = []
    for index, item in valid:
        label, row = item["candidate"], item["row"]
        if counts[label, row] > 1:
            reason = f"duplicate: candidate {label!r} row {row!r} scored {counts[label, row]} times"
            discarded.append(DiscardedCell(index, reason, _raw(item)))
            continue
        cells.append(
            Cell(
                seat=judge_seat,
                family=judge_family,
                candidate=labels[label],
                row=row,
                score=float(item["score"]),
                confidence=float(item["confidence"]),
                evidence=item["evidence"],
                rationale=item["rationale"],
            )
        )
    discarded.sort(key=lambda d: d.index)
    return ParsedReply(tuple(cells), tuple(discarded), None)


def _scores_list(text: str) -> list[Any] | str:
    """The reply's ``scores`` list, or the sentence that says why there is none."""
    try:
        document = extract_json(text)
    except ReplyError as exc:
        return str(exc)
    if not isinstance(document, dict):
        return f"the reply is a JSON {_json_type(document)}, not an object"
    if "scores" not in document:
        return 'the reply object has no "scores" list'
    scores = document["scores"]
    if not isinstance(scores, list):
        return f'"scores" is a JSON {_json_type(scores)}, not a list'
    return scores


def _valid_items(
    scores: Sequence[Any], labels: Mapping[str, str], rows: Sequence[str]
) -> tuple[list[tuple[int, dict[str, Any]]], list[DiscardedCell]]:
    """Each item checked on its own: the valid ones with their index, the others discarded."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_cell_schema())
    discarded: list[DiscardedCell] = []
    valid: list[tuple[int, dict[str, Any]]] = []
    for index, item in enumerate(scores):
        reason = _cell_problem(item, validator, labels, rows)
        if reason is not None:
            discarded.append(DiscardedCell(index, reason, _raw(item)))
        else:
            valid.append((index, item))
    return valid, discarded


def _check_labels(
    labels: Mapping[str, str],
    judge_seat: str,
    judge_family: str,
    seat_families: Mapping[str, str] | None,
) -> None:
    seats = list(labels.values())
    if len(set(seats)) != len(seats):
        raise ValueError("two labels resolve to the same seat")
    own = family_key(judge_family)
    for label, seat in labels.items():
        if seat == judge_seat:
            raise ValueError(f"label {label!r} resolves to the judge {judge_seat!r} itself")
        if seat_families is not None:
            family = seat_families.get(seat)
            if family is None:
                raise ValueError(f"label {label!r} resolves to {seat!r}, whose family is unknown")
            if family_key(family) == own:
                raise ValueError(
                    f"label {label!r} resolves to {seat!r}, of the judge's own family {own!r}"
                )


def _cell_problem(
    item: object, validator: Any, labels: Mapping[str, str], rows: Sequence[str]
) -> str | None:
    errors = _sorted_errors(validator.iter_errors(item))
    if errors:
        return "; ".join(_error_text(e) for e in errors[:3])
    assert isinstance(item, dict)  # the schema says "object"
    # jsonschema treats booleans as non-numbers already; say so plainly if that ever changes.
    for key in ("score", "confidence"):
        if isinstance(item[key], bool):
            return f"{key}: a boolean is not a number"
    if item["candidate"] not in labels:
        return f"unknown candidate label {item['candidate']!r}"
    if item["row"] not in rows:
        return f"unknown row {item['row']!r}; rows are {', '.join(rows)}"
    return None


def _sorted_errors(errors: Iterable[Any]) -> list[Any]:
    return sorted(errors, key=lambda e: ([str(p) for p in e.absolute_path], e.validator))


def _error_text(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "<cell>"
    message = str(error.message)
    if error.validator == "not" and "rationale" in where:
        message = "must be a single line"
    elif error.validator == "pattern":
        message = "must not be blank"
    return f"{where}: {_shorten(message, 200)}"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _raw(item: object) -> str:
    try:
        text = json.dumps(item, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):  # pragma: no cover - parsed JSON always serialises
        text = repr(item)
    return _shorten(text, _RAW_CHARS)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
