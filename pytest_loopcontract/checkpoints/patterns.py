"""The pattern set a scan uses: the built-in table minus what a contract disables, plus its own.

A contract's ``checkpoints`` block says ``disable: [ids]`` and ``add: [{id, kind, pattern,
message}]``; plugins contribute patterns through the ``loopcontract_checkpoint_patterns`` hook
(see :mod:`pytest_loopcontract.checkpoints.gate`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_loopcontract.checkpoints.model import KINDS, Pattern
from pytest_loopcontract.checkpoints.table import DEFAULTS

__all__ = ["default_patterns", "patterns_from_contract"]


def default_patterns() -> tuple[Pattern, ...]:
    """The built-in checkpoints; every id is stable and can be named in ``disable``."""
    return DEFAULTS


def patterns_from_contract(
    checkpoints: Mapping[str, Any] | None, extra: Iterable[Pattern] = ()
) -> tuple[Pattern, ...]:
    """Defaults and plugin patterns minus the contract's ``disable``, plus its ``add``.

    ``disable`` applies to built-in and plugin ids alike (unknown ids are ignored: the safe
    direction is to keep checking). Added patterns are regexes; an invalid one raises
    :class:`ValueError` naming its id, because a checkpoint that silently never matches is
    worse than a contract that does not load.
    """
    checkpoints = checkpoints or {}
    disabled = frozenset(checkpoints.get("disable") or ())
    kept = [p for p in (*DEFAULTS, *extra) if p.id not in disabled]
    kept.extend(_contract_pattern(entry) for entry in checkpoints.get("add") or ())
    return tuple(kept)


def _contract_pattern(entry: Mapping[str, Any]) -> Pattern:
    """One entry of the contract's checkpoints.add as a regex pattern (ValueError names it)."""
    pid = str(entry.get("id") or "")
    if not pid:
        raise ValueError("checkpoint without an id in checkpoints.add")
    kind = entry.get("kind", "command")
    if kind not in KINDS:
        raise ValueError(f"checkpoint {pid!r}: kind must be one of {', '.join(KINDS)}")
    source = entry.get("pattern")
    if not isinstance(source, str) or not source:
        raise ValueError(f"checkpoint {pid!r}: 'pattern' must be a non-empty regular expression")
    try:
        regex = re.compile(source)
    except re.error as exc:
        raise ValueError(
            f"checkpoint {pid!r}: invalid regular expression {source!r}: {exc}"
        ) from exc
    message = entry.get("message") or f"The contract's checkpoint {pid!r} needs a person."
    return Pattern(pid, kind, str(message), regex=regex, origin="contract")
