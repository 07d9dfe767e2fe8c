"""The pluggy plugin manager: built-ins plus whatever the ``loopcontract`` entry points add."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import pluggy

from . import hookspecs

__all__ = ["metric_sources", "plugin_manager"]


class _Builtins:
    """The built-in metric sources, registered through the public hook like any plugin."""

    @hookspecs.hookimpl
    def loopcontract_metric_sources(self) -> Mapping[str, Callable[..., Any]]:
        from .sensors import BUILTIN_SOURCES

        return BUILTIN_SOURCES


@cache
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(_Builtins(), "builtins")
    pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    return pm


def metric_sources() -> dict[str, Callable[..., Any]]:
    """Merged sources by prefix; pluggy calls later-registered plugins first, so reverse."""
    merged: dict[str, Callable[..., Any]] = {}
    for mapping in reversed(plugin_manager().hook.loopcontract_metric_sources()):
        merged.update(mapping)
    return merged
