"""Read a contract's bytes and YAML into plain data, knowing where every value sits.

``yaml.safe_load`` would keep the last of two equal keys and accept tags such as ``!!set``; this
reader goes through the node tree instead, refuses both, caps alias expansion and depth, and
words every PyYAML error with its line, column and field path (even a syntax error names the
field being read). No YAML exception escapes: each becomes one :class:`ContractError`.
"""

from __future__ import annotations

import codecs
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml
from yaml.error import Mark
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    MappingStartEvent,
    ScalarEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from pytest_loopcontract.contract.wording import (
    ROOT_LABEL,
    FieldPath,
    contract_error,
    describe,
    render,
)
from pytest_loopcontract.errors import ContractError

__all__ = ["Places", "decode", "document_shape_error", "parse"]

_MAX_VALUES: Final = 100_000  # stops alias "billion laughs" expansion
_MAX_DEPTH: Final = 64
_YAML_TAG: Final = "tag:yaml.org,2002:"
_MAP_TAG: Final = _YAML_TAG + "map"
_SEQ_TAG: Final = _YAML_TAG + "seq"
_MERGE_TAG: Final = _YAML_TAG + "merge"
_SPECIAL_VALUE = re.compile(r"(?:^|[:-])\s+([!&*|>%@`])")


def decode(data: bytes, filename: str) -> str:
    """Decode UTF-8 (with or without a BOM) and point at the first byte that is not UTF-8."""
    body = data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = body[: exc.start].decode("utf-8")
        line_start = before.rfind("\n") + 1
        raise ContractError(
            f"the file is not UTF-8 text (byte 0x{body[exc.start]:02x} cannot be read); "
            "save it as UTF-8",
            file=filename,
            line=before.count("\n") + 1,
            column=len(before) - line_start + 1,
            field_path=render(_path_at(before, len(before))),
        ) from None


def parse(text: str, filename: str) -> tuple[Any, dict[FieldPath, tuple[Node | None, Node]]]:
    """Compose the YAML into nodes, then build plain data while recording every node's place."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:  # the reader rejects control characters up front
        raise _yaml_error(exc, text, filename) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, {}
        builder = _Builder(loader, text, filename)
        return builder.build(root, ()), builder.nodes
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, filename) from None
    except RecursionError:
        raise ContractError(
            "the YAML is nested too deeply to read",
            file=filename,
            line=1,
            column=1,
            field_path=ROOT_LABEL,
        ) from None
    finally:
        loader.dispose()


class _Builder:
    """Turns composed nodes into plain data; rejects what ``yaml.safe_load`` would let slip.

    ``safe_load`` keeps the last of two equal keys and accepts tags such as ``!!set``; both hide
    what the author meant, so both are errors here.
    """

    def __init__(self, loader: yaml.SafeLoader, text: str, filename: str) -> None:
        self.loader = loader
        self.text = text
        self.filename = filename
        self.nodes: dict[FieldPath, tuple[Node | None, Node]] = {}
        self._open: set[int] = set()

    def build(self, node: Node, path: FieldPath, key_node: Node | None = None) -> Any:
        self.nodes[path] = (key_node, node)
        if len(self.nodes) > _MAX_VALUES:
            raise self._error(
                "the contract has too many values (are aliases expanding?)", node, path
            )
        if len(path) > _MAX_DEPTH:
            raise self._error("the contract is nested too deeply", node, path)
        if id(node) in self._open:
            raise self._error("an alias refers to a value that contains it", node, path)
        self._open.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                self._expect_tag(node, _SEQ_TAG, path)
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            return self._scalar(node, path)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: MappingNode, path: FieldPath) -> dict[str, Any]:
        self._expect_tag(node, _MAP_TAG, path)
        self._reject_duplicate_keys(node, path)
        try:
            self.loader.flatten_mapping(node)  # resolves "<<: *anchor" merges in place
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc, self.text, self.filename, path) from None
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            result[key] = self.build(value_node, (*path, key), key_node)
        return result

    def _reject_duplicate_keys(self, node: MappingNode, path: FieldPath) -> None:
        seen: dict[str, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self._key(key_node, path)
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise self._error(
                    f"duplicate key '{key}' (first given at line {first})", key_node, (*path, key)
                )
            seen[key] = key_node

    def _key(self, key_node: Node, path: FieldPath) -> str:
        if isinstance(key_node, ScalarNode):
            key = self._scalar(key_node, path)
            if isinstance(key, str):
                return key
            got = describe(key)
        else:
            got = "a mapping" if isinstance(key_node, MappingNode) else "a list"
        raise self._error(f"keys must be text, got {got}; put the key in quotes", key_node, path)

    def _scalar(self, node: Node, path: FieldPath) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc, self.text, self.filename, path) from None
        if isinstance(value, float) and math.isnan(value):
            raise self._error("NaN (.nan) cannot be compared; use a number", node, path)
        return value

    def _expect_tag(self, node: Node, tag: str, path: FieldPath) -> None:
        if node.tag != tag:
            shown = node.tag.replace(_YAML_TAG, "!!")
            raise self._error(f"unsupported YAML tag '{shown}'; remove it", node, path)

    def _error(self, message: str, node: Node, path: FieldPath) -> ContractError:
        return contract_error(message, node.start_mark, path, self.filename)


def _yaml_error(
    exc: yaml.YAMLError, text: str, filename: str, path: FieldPath | None = None
) -> ContractError:
    """Word a PyYAML error; ``path`` is found from the parse events when not already known."""
    if isinstance(exc, yaml.MarkedYAMLError) and (mark := exc.problem_mark or exc.context_mark):
        index, line, column = mark.index, mark.line, mark.column
        message, readable = "invalid YAML: " + _yaml_problem(exc), text
    elif isinstance(exc, ReaderError):
        # A control character stops the reader before parsing starts, so the field is found by
        # parsing only the text before it.
        index = int(exc.position)
        readable = text[:index]
        line, column = readable.count("\n"), index - (readable.rfind("\n") + 1)
        message = f"invalid character U+{exc.character:04X}; YAML does not allow control characters"
    else:  # PyYAML gives every error it raises a position; stay safe if one ever has none
        index = line = column = 0
        message, readable = f"invalid YAML: {exc}", ""
    return ContractError(
        message + _yaml_hint(text, line),
        file=filename,
        line=line + 1,
        column=column + 1,
        field_path=render(_path_at(readable, index) if path is None else path),
    )


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML splits a message into context and problem; join them into one sentence."""
    problem, context = (exc.problem or "").strip(), (exc.context or "").strip()
    if not (problem and context):
        return problem or context or "cannot parse"
    if context.startswith("while") and exc.context_mark:
        return f"{problem} ({context} started at line {exc.context_mark.line + 1})"
    return f"{context}, {problem}"


def _yaml_hint(text: str, line_number: int) -> str:
    """Explain the YAML traps contracts hit most: tabs, and values such as ``>=`` or ``*.py``."""
    lines = text.splitlines()
    line = lines[line_number] if line_number < len(lines) else ""
    if "\t" in line:
        return "; indent with spaces, not tabs"
    special = _SPECIAL_VALUE.search(line)
    if special:
        return (
            f"; a value starting with '{special.group(1)}' means something special in YAML, "
            "so put it in quotes"
        )
    return ""


@dataclass
class _Frame:
    """One open mapping or sequence while following parse events."""

    path: FieldPath
    is_mapping: bool
    done: int = 0  # children finished so far; in a mapping keys and values alternate
    key: str = "?"

    def child(self) -> FieldPath:
        if not self.is_mapping:
            return (*self.path, self.done)
        return (*self.path, self.key) if self.done % 2 else self.path


def _path_at(text: str, index: int) -> FieldPath:
    """Field path of the value being read at ``index``, so even syntax errors name a field."""
    stack: list[_Frame] = []
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if event.end_mark is not None and event.end_mark.index >= index:
                break  # this node contains the problem: it is the one being read
            _follow(stack, event)
    except yaml.YAMLError:
        pass
    return stack[-1].child() if stack else ()


def _follow(stack: list[_Frame], event: Event) -> None:
    if isinstance(event, CollectionEndEvent):
        stack.pop()
        if stack:
            stack[-1].done += 1
        return
    if not isinstance(event, (ScalarEvent, AliasEvent, CollectionStartEvent)):
        return  # stream and document events
    parent = stack[-1] if stack else None
    if parent and parent.is_mapping and parent.done % 2 == 0:
        parent.key = event.value if isinstance(event, ScalarEvent) else "?"
    if isinstance(event, CollectionStartEvent):
        stack.append(_Frame(parent.child() if parent else (), isinstance(event, MappingStartEvent)))
    elif parent:
        parent.done += 1


def document_shape_error(document: Any, places: Places, filename: str) -> ContractError:
    if document is None:
        mark = places.value_mark(()) if places.has(()) else None
        return ContractError(
            "the contract is empty; create one with 'loop-contract init'",
            file=filename,
            line=mark.line + 1 if mark else 1,
            column=mark.column + 1 if mark else 1,
            field_path=ROOT_LABEL,
        )
    return contract_error(
        f"the contract must be a mapping (version, id, goal, ...), got {describe(document)}",
        places.value_mark(()),
        (),
        filename,
    )


class Places:
    """Where each field path sits in the file."""

    def __init__(self, nodes: Mapping[FieldPath, tuple[Node | None, Node]]) -> None:
        self._nodes = nodes

    def has(self, path: FieldPath) -> bool:
        return path in self._nodes

    def key_mark(self, path: FieldPath) -> Mark:
        """The key's position, or the value's for list items and the document itself."""
        key, value = self._nodes[path]
        mark: Mark = (key or value).start_mark
        return mark

    def value_mark(self, path: FieldPath) -> Mark:
        mark: Mark = self._nodes[path][1].start_mark
        return mark

    def end(self, path: FieldPath) -> int:
        index: int = self._nodes[path][1].end_mark.index
        return index
