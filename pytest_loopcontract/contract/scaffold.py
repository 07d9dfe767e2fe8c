"""Write a first ``loopcontract.yml`` for ``loop-contract init``.

The scaffold is hand-written text rather than ``yaml.dump`` output because its comments are the
documentation a human reads while deciding what "done" means. Every value that comes from the
user (ids included: YAML 1.1 reads ``yes`` or ``1.0`` as non-text) is emitted as a double-quoted
scalar with escapes, so quotes, colons and ``#`` in a checklist item cannot change the structure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

from pytest_loopcontract.contract.schema import load_schema

__all__ = ["parse_checklist", "render_contract", "slugify"]

_ID_MAX: Final = 40
_CHECKBOX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX]\]\s+(?P<text>.*?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")

_HEADER: Final = """\
# loopcontract.yml: what "done" means for this task.
# The agent never decides that it is done: `loop-contract verify` measures this file and
# writes a verdict. Check it with `loop-contract check`.
version: 1
id: {id}
goal: {goal}  # one sentence: the outcome, not the method
mode: fix  # fix: acceptance tests fail before the change; improve: all pass, something improves
"""

_DOD_EMPTY: Final = """
# Definition of Done: one item per thing that must be true. An item is met when its tests
# pass: list node ids or globs under `tests`, or mark tests with @pytest.mark.dod("<item id>").
dod: []
#  - id: parser-accepts-empty-input
#    text: "The parser accepts an empty file"
#    tests: ["tests/test_parser.py::test_empty_file"]
"""

_DOD_HEADER: Final = """
# Definition of Done, from the checklist. An item is met when its tests pass: list node ids or
# globs under `tests`, or mark tests with @pytest.mark.dod("<item id>").
dod:
"""

_DOD_ITEM: Final = """\
  - id: {quoted_id}
    text: {text}
    tests: []  # node ids or globs, or mark the tests @pytest.mark.dod("{id}")
"""

_REST: Final = """
gates:
  hard:
    - id: acceptance
      kind: acceptance  # every DoD test passes
    - id: no-regressions
      kind: pass_to_pass  # tests that passed before the change still pass
  # measured:
  #   - id: coverage
  #     metric: coverage.percent
  #     op: ">="  # quote comparisons: > and ! mean something else in YAML
  #     threshold: 80

# Test files, conftest.py, test configuration and CI files are protected by default.
# protect:
#   paths: ["fixtures/**"]

# boundaries:
#   deny: ["migrations/**"]

# Stop an unattended loop before it runs away.
budget:
  iterations: 10
  minutes: 60
stop_when:
  no_progress: 3  # stop after this many iterations in a row without progress
"""


def parse_checklist(text: str) -> list[str]:
    """Return the text of every markdown task-list item (``- [ ] ...``, ``* [x] ...``).

    Nested and numbered items count; everything else, including examples inside fenced code
    blocks, is ignored. Ticked items are kept: the plan says they must be true, and the
    contract is what checks it.
    """
    items: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if opened and fence in (None, opened.group(1)):
            fence = None if fence else opened.group(1)
            continue
        match = None if fence else _CHECKBOX.match(line)
        if match and match.group("text"):
            items.append(match.group("text"))
    return items


def render_contract(contract_id: str, goal: str = "", checklist: str | None = None) -> str:
    """Return a commented ``loopcontract.yml`` that passes validation as written.

    With a markdown ``checklist`` each task-list item becomes a DoD item whose ``tests`` list is
    left empty for a human to fill in (or to tie tests to it with the ``dod`` marker).
    Raises :class:`ValueError` for an id the schema would reject or a checklist without items.
    """
    id_pattern = load_schema()["$defs"]["id"]["pattern"]
    if not re.fullmatch(id_pattern, contract_id):
        raise ValueError(
            f"contract id {contract_id!r} must use letters, digits, '.', '_' and '-' "
            f"and start with a letter or digit (for example {slugify(contract_id) or 'contract'!r})"
        )
    text = _HEADER.format(id=_quote(contract_id), goal=_quote(goal))
    if checklist is None:
        return text + _DOD_EMPTY + _REST
    items = parse_checklist(checklist)
    if not items:
        raise ValueError("the checklist has no task-list items (lines such as '- [ ] text')")
    rendered = (
        _DOD_ITEM.format(id=item_id, quoted_id=_quote(item_id), text=_quote(item))
        for item_id, item in zip(_unique_ids(items), items, strict=True)
    )
    return text + _DOD_HEADER + "".join(rendered) + _REST


def slugify(text: str, max_length: int = _ID_MAX) -> str:
    """Lower-case ASCII words joined by '-', cut at a word boundary; '' when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(slug) <= max_length:
        return slug
    cut = slug[: max_length + 1]
    return (cut.rsplit("-", 1)[0] if "-" in cut else slug[:max_length]).strip("-")


def _unique_ids(texts: Sequence[str]) -> Iterable[str]:
    """One id per text; repeats get ``-2``, ``-3`` and texts without ASCII words ``item-N``."""
    used: set[str] = set()
    for number, text in enumerate(texts, start=1):
        base = slugify(text) or f"item-{number}"
        candidate, suffix = base, 1
        while candidate in used:
            suffix += 1
            tail = f"-{suffix}"
            candidate = slugify(base, _ID_MAX - len(tail)) + tail
        used.add(candidate)
        yield candidate


def _quote(text: str) -> str:
    """A YAML double-quoted scalar; anything not plainly printable is escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(_escape(ord(char)))
    return '"' + "".join(out) + '"'


def _escape(code: int) -> str:
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
