"""Where a test lives: its file, its class path and name, and the line a failure points at.

Pure: from the node id and the failure message the verdict carries (pytest's long report,
whose ``path:line: Error`` lines name the place). Reports that annotate code need a file and a
line; a wrong line is worse than none, so a line is given only when the message names the
test's own file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["TestPlace", "test_place"]

_LINE_OF = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<line>\d+):", re.MULTILINE)


@dataclass(frozen=True)
class TestPlace:
    """``file`` relative to the repository; ``classname`` as pytest's own JUnit writer spells
    it (module path dotted, then the classes); ``name`` the function with its parameters."""

    __test__ = False  # a data class, not a test pytest should collect

    file: str
    classname: str
    name: str
    line: int | None


def test_place(nodeid: str, message: str = "") -> TestPlace:
    """The place of the test ``nodeid`` (``path::Class::name[param]``)."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::") if rest else []
    name = parts[-1] if parts else path
    module = path[:-3] if path.endswith(".py") else path
    classname = ".".join([module.replace("/", "."), *parts[:-1]])
    return TestPlace(path, classname, name, _failure_line(path, message))


def _failure_line(path: str, message: str) -> int | None:
    """The last ``path:line:`` in ``message`` naming the test's own file (the frame closest to
    the failing assertion that is still the test's), or None."""
    lines = [int(m["line"]) for m in _LINE_OF.finditer(message) if m["path"] == path]
    return lines[-1] if lines and lines[-1] > 0 else None
