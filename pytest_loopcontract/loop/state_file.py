"""The ``state.json`` cache of the loop state, and when to trust it.

Why a cache that is checked: folding a long history on every ``status`` costs time, but a
cache can be lost, corrupted, left stale or edited. ``state.json`` records the seq and hash of
the last record it folded; it is used only when those match the history's last record, and
otherwise rebuilt from the history (:func:`pytest_loopcontract.loop.state.reduce`) and saved.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_loopcontract.chain import ZERO_HASH
from pytest_loopcontract.fsio import write_bytes_atomic
from pytest_loopcontract.history import History
from pytest_loopcontract.loop.state import STATE_SCHEMA, reduce
from pytest_loopcontract.statedir import StateDir

__all__ = ["load_state", "save_state"]


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float made None: strict JSON for any reader (``jq``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


def save_state(state_dir: str | os.PathLike[str], state: Mapping[str, Any]) -> None:
    """Write ``state.json`` by write-then-rename: a crash leaves the old one or the new one.

    Strict JSON: a non-finite number (only a hand-edited history can hold one, say ``1e400``)
    is written as null.
    """
    path = StateDir(state_dir).state
    try:
        text = json.dumps(state, indent=2, allow_nan=False)
    except ValueError:
        text = json.dumps(_json_safe(state), indent=2, allow_nan=False)
    write_bytes_atomic(path, (text + "\n").encode("utf-8"))


def _read_state_file(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, f"{path.name} is missing"
    except (OSError, ValueError) as exc:
        return None, f"{path.name} is unreadable ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or doc.get("schema") != STATE_SCHEMA:
        return None, f"{path.name} is not a schema-{STATE_SCHEMA} state document"
    return doc, ""


def load_state(
    state_dir: str | os.PathLike[str], history: History | None = None
) -> tuple[dict[str, Any], bool, str]:
    """The current state, ``rebuilt`` (True when it came from the history) and a note saying why.

    ``state.json`` is used only when its ``last_seq`` and ``last_hash`` match the history's last
    record; otherwise (missing, corrupt, stale, ahead, or the last line edited) the state is
    rebuilt from the history and saved again.
    """
    folder = Path(state_dir)
    name = StateDir(folder).state.name
    history = history if history is not None else History(folder)
    if not folder.is_dir():
        return reduce(()), True, f"no state folder at {folder}: nothing recorded yet"
    last, torn = history.tail()
    last_seq = last.seq if last is not None else 0
    last_hash = last.digest if last is not None else ZERO_HASH
    doc, problem = _read_state_file(StateDir(folder).state)
    torn_note = f"; {torn.message}" if torn is not None else ""
    if doc is not None:
        seq, digest = doc.get("last_seq"), doc.get("last_hash")
        if seq == last_seq and digest == last_hash:
            return doc, False, f"{name} is current (seq {last_seq}){torn_note}"
        if not isinstance(seq, int):
            problem = f"{name} has no last_seq"
        elif seq < last_seq:
            problem = f"{name} is stale (seq {seq}, history at seq {last_seq})"
        elif seq > last_seq:
            problem = (
                f"{name} is ahead of the history (seq {seq}, history at seq {last_seq}): "
                "records were removed from the end of the history"
            )
        else:
            problem = (
                f"the history's last record (seq {seq}) is not the one {name} "
                "recorded: it was edited"
            )
    found = history.read()
    state = reduce(found.records)
    notes = [problem, f"rebuilt from {len(found.records)} history record(s)"]
    notes.extend(found.messages())
    try:
        save_state(folder, state)
    except OSError as exc:
        notes.append(f"could not save {name}: {exc}")
    return state, True, "; ".join(notes)
