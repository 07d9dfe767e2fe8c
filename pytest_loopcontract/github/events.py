"""Reading GitHub event payloads and contest names out of branches and labels.

Why it is built this way:

* **Branch names and labels are attacker text.** Anyone who can open a pull request chooses its
  head branch and (on their fork) its labels. A name becomes a contest id and a seat, which end
  up in file paths, artifact names, comment markers and commit-status descriptions, so parsing
  is strict: ``loop-contract/<id>/<seat>`` with both parts matching
  ``^[A-Za-z0-9][A-Za-z0-9._-]*$`` (at most 100 characters), exactly three segments, ASCII only.
  Anything else is simply not a candidate: no normalising, no guessing.
* **Pure.** No I/O except :func:`load_event`, which reads the file GitHub hands the runner
  (``$GITHUB_EVENT_PATH``) and checks it is one JSON object of sane size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BRANCH_PREFIX",
    "LABEL_PREFIX",
    "MAX_EVENT_BYTES",
    "MAX_ID_LENGTH",
    "ContestRef",
    "contest_of_branch",
    "contest_of_labels",
    "contest_of_pull",
    "is_valid_id",
    "label_names",
    "load_event",
]

BRANCH_PREFIX = "loop-contract"
LABEL_PREFIX = "loop-contract:"
MAX_ID_LENGTH = 100
# GitHub caps webhook payloads at 25 MB; anything larger is not an event file.
MAX_EVENT_BYTES = 25 * 1024 * 1024
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class ContestRef:
    """A pull request's place in a contest: which contract, which seat."""

    contract_id: str
    seat: str


def is_valid_id(text: object) -> bool:
    """True for a contest id or seat name the action accepts (see module docstring)."""
    return (
        isinstance(text, str) and 0 < len(text) <= MAX_ID_LENGTH and _ID.fullmatch(text) is not None
    )


def contest_of_branch(branch: object) -> ContestRef | None:
    """``loop-contract/<id>/<seat>`` -> ``ContestRef(id, seat)``; anything else None."""
    if not isinstance(branch, str):
        return None
    parts = branch.split("/")
    if len(parts) != 3 or parts[0] != BRANCH_PREFIX:
        return None
    contract_id, seat = parts[1], parts[2]
    if not (is_valid_id(contract_id) and is_valid_id(seat)):
        return None
    return ContestRef(contract_id, seat)


def label_names(labels: Iterable[object]) -> list[str]:
    """Label names from strings, webhook/REST label dicts or PyGithub ``Label`` objects."""
    names: list[str] = []
    for label in labels:
        if isinstance(label, str):
            name: object = label
        elif isinstance(label, Mapping):
            name = label.get("name")
        else:
            name = getattr(label, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


def contest_of_labels(labels: Iterable[object], author: object) -> ContestRef | None:
    """The contest named by a ``loop-contract:<id>`` label, with the author's login as seat.

    None when no such label is present, when labels name two different contests (ambiguous),
    or when the id or the login is not a valid name (``dependabot[bot]`` is not a seat)."""
    ids = {
        name[len(LABEL_PREFIX) :] for name in label_names(labels) if name.startswith(LABEL_PREFIX)
    }
    if len(ids) != 1:
        return None
    (contract_id,) = ids
    if not (is_valid_id(contract_id) and is_valid_id(author)):
        return None
    assert isinstance(author, str)
    return ContestRef(contract_id, author)


def contest_of_pull(
    head_ref: object,
    labels: Iterable[object],
    author: object,
    contract_id: str | None = None,
) -> ContestRef | None:
    """The pull request's contest: its branch first, else its label.

    With ``contract_id`` the question is "is it a candidate of *this* contest": the branch
    must name it, or a ``loop-contract:<contract_id>`` label must be present (the seat is then
    the branch's seat if the branch names another contest's seat, else the author's login)."""
    names = label_names(labels)
    by_branch = contest_of_branch(head_ref)
    if contract_id is None:
        return by_branch or contest_of_labels(names, author)
    if not is_valid_id(contract_id):
        raise ValueError(f"invalid contract id {contract_id!r}")
    if by_branch is not None and by_branch.contract_id == contract_id:
        return by_branch
    if f"{LABEL_PREFIX}{contract_id}" not in names:
        return None
    if by_branch is not None:
        return ContestRef(contract_id, by_branch.seat)
    if not is_valid_id(author):
        return None
    assert isinstance(author, str)
    return ContestRef(contract_id, author)


def load_event(path: str | Path) -> dict[str, Any]:
    """The event payload GitHub wrote for this run, as a dict.

    Raises ``ValueError`` when the file is larger than :data:`MAX_EVENT_BYTES`, is not JSON,
    or is not one JSON object."""
    file = Path(path)
    size = file.stat().st_size
    if size > MAX_EVENT_BYTES:
        raise ValueError(f"event file {file} is {size} bytes, over {MAX_EVENT_BYTES}")
    try:
        data = json.loads(file.read_bytes())
    except ValueError as exc:
        raise ValueError(f"event file {file} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"event file {file} is not a JSON object")
    return data
