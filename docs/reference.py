"""The generated parts of the reference pages, made at build time from the sources of truth.

A reference page holds a marker line, ``<!-- generated: NAME -->``; ``docs/hooks.py`` (an MkDocs
hook) replaces it with ``GENERATORS[NAME]()``. The sources are read, never copied:

* ``contract-schema``: ``pytest_loopcontract/schemas/contract.schema.json``
* ``verdict-schema``: ``pytest_loopcontract/schemas/verdict.schema.json``
* ``cli``: the real parser, ``pytest_loopcontract.cli.parser.build_parser()``
* ``exit-codes``: the ``EXIT_*`` constants of ``pytest_loopcontract.verdict`` (with the meanings
  below, which must name every constant and nothing else) and pytest's own ``pytest.ExitCode``

Each renderer takes its source as an argument (a schema mapping, a parser, a mapping of
constants), so a test can hand it a changed one and see the page change. A source the page
cannot describe (an exit code without a meaning, a ``$ref`` outside the schema, an unknown
marker) raises :class:`DriftError` and the build fails.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from types import ModuleType
from typing import Any, NamedTuple

__all__ = [
    "EXIT_MEANINGS",
    "GENERATORS",
    "DriftError",
    "Field",
    "cli_reference",
    "exit_code_reference",
    "exit_codes",
    "expand",
    "load_schema",
    "schema_fields",
    "schema_reference",
    "table_code_pipes",
]

MARKER = re.compile(r"^<!-- generated: ([a-z0-9-]+) -->[ \t]*$", re.MULTILINE)
HELP_WIDTH = 96  # usage lines are wrapped as on a terminal this wide, whatever the build's is

# What each exit code of verdict.py means. A constant without a line here, or a line without
# a constant, fails the build (DriftError): add the meaning when you add the code.
EXIT_MEANINGS: dict[str, str] = {
    "EXIT_MET": "contract met",
    "EXIT_NOT_MET": (
        "not met yet (continue); also a verdict of `error` (the run could not be measured)"
    ),
    "EXIT_BUDGET": "stopped by budget",
    "EXIT_NO_PROGRESS": "stopped by no progress",
    "EXIT_ITERATION_CAP": "stopped by the iteration cap",
    "EXIT_AWAIT_HUMAN": "waiting on a human checkpoint",
    "EXIT_TAMPER": "tampering found",
    "EXIT_CONTRACT_INVALID": "contract invalid",
    "EXIT_BASELINE": (
        "baseline rule failed (vacuous, broken or stale baseline, or no baseline yet)"
    ),
}


class DriftError(Exception):
    """A source of truth says something its reference page cannot render or explain."""


class Field(NamedTuple):
    """One row of a schema table: a key's dotted path and what the schema says of it."""

    path: str  # ``pytest.timeout``, ``tamper.allow[].rule``
    kind: str  # markdown: the type with its constraints
    required: bool
    default: str  # markdown, "" without a default
    meaning: str  # markdown, "" when the schema says nothing


# ---------------------------------------------------------------------------- markdown text

_ESCAPE = re.compile(r"([\\`*_\[\]|])")


def text(value: str) -> str:
    """Plain text for a markdown table cell: no markup, no HTML, one line."""
    value = _ESCAPE.sub(r"\\\1", " ".join(value.split()))
    return value.replace("<", "&lt;").replace(">", "&gt;")


def code(value: str) -> str:
    """An inline code span that survives backticks (Python-Markdown's tables extension does
    not split a row at a ``|`` inside one)."""
    value = " ".join(value.split())
    fence = "``" if "`" in value else "`"
    pad = " " if fence == "``" or value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _literal(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def table_code_pipes(markdown: str) -> str:
    """Each ``\\|`` inside a code span of a table row made a plain ``|``: GitHub needs the
    backslash there to keep the row whole, Python-Markdown's tables extension never splits a
    row inside a code span and would show the backslash."""
    lines = []
    fenced = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.lstrip().startswith("|"):
            line = _CODE_SPAN.sub(
                lambda m: m.group(1) + m.group(2).replace("\\|", "|") + m.group(1), line
            )
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- JSON Schema


def load_schema(name: str) -> dict[str, Any]:
    """One of the schemas the package ships, as the verifier reads it."""
    source = resources.files("pytest_loopcontract") / "schemas" / f"{name}.schema.json"
    loaded: dict[str, Any] = json.loads(source.read_text("utf-8"))
    return loaded


class _Schema:
    """A schema with its ``$defs``: resolves local references and names the object defs,
    which get a section of their own instead of being spelled out at every use."""

    def __init__(self, root: Mapping[str, Any], anchor: str) -> None:
        self.root = root
        self.anchor = anchor  # prefix of the page's ids, so two schemas never share one
        self.defs: Mapping[str, Any] = root.get("$defs", {})
        self.sections = [name for name, node in self.defs.items() if _has_fields(node)]

    def target(self, node: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
        ref = node.get("$ref")
        if ref is None:
            return None
        name = str(ref).removeprefix("#/$defs/")
        if name == ref or name not in self.defs:
            raise DriftError(f"$ref {ref!r}: only references to this schema's $defs are shown")
        return name, self.defs[name]

    def resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """The node with its reference followed: the referring node's own keys win."""
        found = self.target(node)
        if found is None:
            return node
        own = {key: value for key, value in node.items() if key != "$ref"}
        return {**self.resolve(found[1]), **own}

    def link(self, name: str) -> str:
        return f"[{name}](#{self.anchor}-def-{name.lower()})"


def _has_fields(node: Mapping[str, Any]) -> bool:
    """An object with named keys, directly or as one branch of anyOf/oneOf."""
    if isinstance(node.get("properties"), Mapping) and node.get("type", "object") == "object":
        return True
    return any(_has_fields(b) for b in node.get("anyOf", node.get("oneOf", [])))


def _bounds(node: Mapping[str, Any]) -> list[str]:
    words = []
    if "minimum" in node and "maximum" in node:
        words.append(f"{_literal(node['minimum'])} to {_literal(node['maximum'])}")
    elif "minimum" in node:
        words.append(f"≥ {_literal(node['minimum'])}")
    elif "maximum" in node:
        words.append(f"≤ {_literal(node['maximum'])}")
    if "exclusiveMinimum" in node:
        words.append(f"> {_literal(node['exclusiveMinimum'])}")
    if "exclusiveMaximum" in node:
        words.append(f"< {_literal(node['exclusiveMaximum'])}")
    return words


def _kind(schema: _Schema, node: Mapping[str, Any]) -> str:
    """The type of a node in a few words of markdown, its constraints included."""
    found = schema.target(node)
    if found is not None:
        name, _target = found
        if name in schema.sections:
            return schema.link(name)
        return _kind(schema, schema.resolve(node))
    if "const" in node:
        return code(_literal(node["const"]))
    if "enum" in node:
        values = [code(_literal(v)) for v in node["enum"]]
        return " or ".join(values) if len(values) < 4 else "one of " + ", ".join(values)
    for branches in ("anyOf", "oneOf"):
        if branches in node:
            return " or ".join(_kind(schema, b) for b in node[branches])
    kinds = node.get("type")
    if kinds is None:
        return "mapping" if "properties" in node else "any value"
    if isinstance(kinds, list):
        return " or ".join(_kind(schema, {**node, "type": k}) for k in kinds)
    return _one_kind(schema, node, str(kinds))


def _one_kind(schema: _Schema, node: Mapping[str, Any], kind: str) -> str:
    extras: list[str] = []
    if kind == "array":
        items = node.get("items")
        words = "list of " + (_kind(schema, items) if isinstance(items, Mapping) else "values")
        if node.get("prefixItems"):
            first = node["prefixItems"][0]
            words += " (the first: " + text(first.get("x-expected", _kind(schema, first))) + ")"
        if node.get("uniqueItems"):
            extras.append("unique")
        if "minItems" in node:
            extras.append(f"at least {node['minItems']}")
    elif kind == "object":
        words = "mapping"
        more = node.get("additionalProperties")
        if isinstance(more, Mapping) and not node.get("properties"):
            names = node.get("propertyNames")
            keys = _kind(schema, names) + " → " if isinstance(names, Mapping) else ""
            words = f"mapping of {keys}{_kind(schema, more)}"
        known = node.get("properties", {})
        listed = [k for k in node.get("required", []) if k not in known]
        if listed:
            extras.append("keys " + ", ".join(code(k) for k in listed))
    elif kind == "string":
        words = "string"
        if node.get("minLength", 0) >= 1:
            words = "non-empty string"
        if "maxLength" in node:
            extras.append(f"at most {node['maxLength']} characters")
        if "pattern" in node:
            extras.append("matching " + code(node["pattern"]))
        if isinstance(node.get("not"), Mapping) and "pattern" in node["not"]:
            extras.append("not matching " + code(node["not"]["pattern"]))
    else:
        words = {"integer": "integer", "number": "number", "boolean": "boolean"}.get(kind, kind)
        extras.extend(_bounds(node))
    return words + (f" ({', '.join(extras)})" if extras else "")


def _meaning(schema: _Schema, node: Mapping[str, Any]) -> str:
    """The node's own description, else what its reference says, else the loader's wording
    of a valid value (``x-expected``)."""
    for source in (node, schema.resolve(node)):
        for key in ("description", "x-expected"):
            if isinstance(source.get(key), str):
                return text(source[key])
    return ""


def _children(
    schema: _Schema, node: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(path, node, required) of the keys under a node: an object's properties, those of an
    inline object in a list (``path[].key``) or in a branch of anyOf/oneOf."""
    if schema.target(node) is not None:  # a def: its own section, or a simple type
        return
    props = node.get("properties")
    if isinstance(props, Mapping) and node.get("type", "object") == "object":
        required = set(node.get("required", []))
        for name, child in props.items():
            yield (f"{path}.{name}" if path else name), child, name in required
    items = node.get("items")
    if isinstance(items, Mapping) and node.get("type") == "array":
        yield from _children(schema, items, f"{path}[]")
    for branch in node.get("anyOf", node.get("oneOf", [])):
        yield from _children(schema, branch, path)


def schema_fields(
    root: Mapping[str, Any], node: Mapping[str, Any] | None = None, path: str = ""
) -> list[Field]:
    """Every key under ``node`` (default: the whole schema), depth first, as table rows."""
    schema = _Schema(root, "")
    return list(_fields(schema, root if node is None else node, path))


def _fields(schema: _Schema, node: Mapping[str, Any], path: str) -> Iterator[Field]:
    for child_path, child, required in _children(schema, node, path):
        resolved = schema.resolve(child)
        default = code(_literal(resolved["default"])) if "default" in resolved else ""
        yield Field(child_path, _kind(schema, child), required, default, _meaning(schema, child))
        yield from _fields(schema, child, child_path)


def _rules(node: Mapping[str, Any]) -> list[str]:
    """The conditions of ``allOf: [{if, then, else}]`` in words, from their ``x-when``."""
    rules = []
    for clause in node.get("allOf", []):
        then, other = clause.get("then", {}), clause.get("else", {})
        when = then.get("x-when") or next(
            (v.get("x-when") for v in other.get("properties", {}).values() if "x-when" in v), ""
        )
        needed = [code(k) for k in then.get("required", [])]
        for name, sub in then.get("properties", {}).items():
            needed.extend(code(f"{name}.{k}") for k in sub.get("required", []))
        if needed:
            rules.append(f"{', '.join(needed)} required when {text(when)}")
        banned = [code(k) for k, v in other.get("properties", {}).items() if v.get("not") == {}]
        if banned:
            rules.append(f"{', '.join(banned)} only when {text(when)}")
    return rules


def _field_table(schema: _Schema, node: Mapping[str, Any], path: str, own: bool) -> list[str]:
    """The table of a key (its own row first when ``own``) and of every key under it."""
    rows: list[Field] = []
    if own:  # a top-level key
        resolved = schema.resolve(node)
        default = code(_literal(resolved["default"])) if "default" in resolved else ""
        required = path in schema.root.get("required", [])
        rows.append(Field(path, _kind(schema, node), required, default, _meaning(schema, node)))
    rows.extend(_fields(schema, node, path))
    lines = _table(
        ["key", "type", "required", "default", "meaning"],
        [[code(f.path), f.kind, "yes" if f.required else "", f.default, f.meaning] for f in rows],
    )
    rules = _rules(schema.resolve(node)) if schema.target(node) is None else []
    return lines + ([""] + [f"* {rule}" for rule in rules] if rules else [])


def schema_reference(root: Mapping[str, Any], anchor: str, *, level: int = 3) -> str:
    """A schema as markdown: one section per top-level key (its table holds every key under
    it), one per object definition, then the file itself, folded."""
    schema = _Schema(root, anchor)
    hashes = "#" * level
    out = [f"*{text(str(root.get('title', 'schema')))}*", ""]
    if isinstance(root.get("description"), str):
        out += [text(root["description"]), ""]
    required = root.get("required", [])
    if required:
        out += ["Required at the top level: " + ", ".join(code(k) for k in required) + ".", ""]
    if root.get("additionalProperties") is False:
        out += ["Any other top-level key is an error.", ""]
    for name, node in root.get("properties", {}).items():
        out += [f"{hashes} `{name}` {{ #{anchor}-{name.lower()} }}", ""]
        out += [*_field_table(schema, node, name, own=True), ""]
    if schema.sections:
        out += [f"{hashes} Definitions {{ #{anchor}-definitions }}", ""]
        out += ["Object types the keys above refer to by name.", ""]
    for name in schema.sections:
        node = schema.defs[name]
        out += [f"{hashes}# `{name}` {{ #{anchor}-def-{name.lower()} }}", ""]
        meaning = _meaning(schema, node)
        if meaning:
            out += [meaning, ""]
        branches = node.get("anyOf", node.get("oneOf"))
        if branches:
            kinds = " or ".join(_kind(schema, branch) for branch in branches)
            out += [f"Written as {kinds}; the keys of the mapping:", ""]
        out += [*_field_table(schema, node, "", own=False), ""]
    shown = json.dumps(root, indent=2, ensure_ascii=False)
    out += [f'??? note "The schema file as it ships ({code(str(root.get("$id", "")))})"', ""]
    out += ["    ```json"] + [f"    {line}" for line in shown.splitlines()] + ["    ```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------- the CLI


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command, in ``--help`` order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def _wide(parser: argparse.ArgumentParser) -> None:
    """Usage wrapped at HELP_WIDTH, not at the width of the terminal the build runs in."""

    def formatter(prog: str) -> argparse.HelpFormatter:
        return argparse.HelpFormatter(prog, width=HELP_WIDTH)

    parser.formatter_class = formatter
    for _name, _help, sub in _subcommands(parser):
        _wide(sub)


def _argument(action: argparse.Action) -> tuple[str, str, str, str]:
    """(argument, value, default, help) of one action, as table cells."""
    if action.option_strings:
        name = ", ".join(code(s) for s in action.option_strings)
    else:
        name = code(str(action.metavar or action.dest))
    value = ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        value = "one of " + ", ".join(code(str(c)) for c in action.choices)
    elif action.nargs == argparse.REMAINDER:
        value = "the rest of the command line"
    elif action.option_strings and action.nargs != 0:
        value = code(str(action.metavar or action.dest.upper()))
        if action.nargs in ("*", "+"):
            value += " ..."
    if action.nargs == "?":
        value = (value + " " if value else "") + "(optional)"
    if isinstance(action, argparse._AppendAction):
        value += " (repeatable)"
    default = action.default
    shown = ""
    if default not in (None, False, [], argparse.SUPPRESS) and action.nargs != 0:
        shown = code(_literal(default))
    helped = text(action.help or "")
    if action.required and action.option_strings:
        helped = f"{helped} (required)" if helped else "required"
    return name, value, shown, helped


def _command_section(
    name: str, summary: str, parser: argparse.ArgumentParser, level: int
) -> list[str]:
    anchor = "cmd-" + name.replace(" ", "-")
    out = [f"{'#' * level} `{name}` {{ #{anchor} }}", ""]
    description = parser.description or summary
    if description:
        out += [text(description), ""]
    usage = parser.format_usage().removeprefix("usage: ").rstrip()
    out += ["```text", usage, "```", ""]
    rows = [
        _argument(a)
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    if rows:
        out += [*_table(["argument", "value", "default", "what it does"], rows), ""]
    subs = _subcommands(parser)
    if subs:
        out += ["Actions: " + ", ".join(code(sub) for sub, _h, _p in subs) + ".", ""]
    for sub, help_text, child in subs:
        out += _command_section(f"{name} {sub}", help_text, child, level + 1)
    return out


def cli_reference(parser: argparse.ArgumentParser, *, level: int = 3) -> str:
    """Every sub-command of ``parser`` (and every action under one): its help, its usage as
    ``--help`` prints it, and a table of its arguments."""
    _wide(parser)
    subs = _subcommands(parser)
    if not subs:
        raise DriftError(f"{parser.prog}: no sub-commands to document")
    out = ["```text", parser.format_usage().removeprefix("usage: ").rstrip(), "```", ""]
    if parser.description:
        out += [text(parser.description), ""]
    out += _table(
        ["command", "what it does"],
        [[f"[{code(n)}](#cmd-{n})", text(h)] for n, h, _p in subs],
    )
    out += [""]
    top = [
        _argument(a)
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    if top:
        out += ["Options before the command:", ""]
        out += [*_table(["argument", "value", "default", "what it does"], top), ""]
    for name, help_text, sub in subs:
        out += _command_section(name, help_text, sub, level)
    return "\n".join(out)


# ---------------------------------------------------------------------------- exit codes


def exit_codes(module: ModuleType) -> dict[str, int]:
    """The ``EXIT_*`` integer constants a module defines."""
    return {
        name: value
        for name, value in vars(module).items()
        if name.startswith("EXIT_") and type(value) is int
    }


def exit_code_reference(
    codes: Mapping[str, int],
    meanings: Mapping[str, str] = EXIT_MEANINGS,
    pytest_codes: Mapping[str, int] | None = None,
) -> str:
    """The exit-code table, lowest first; every constant must have a meaning and every
    meaning a constant."""
    unexplained = sorted(set(codes) - set(meanings))
    if unexplained:
        named = ", ".join(f"{n} = {codes[n]}" for n in unexplained)
        raise DriftError(
            f"pytest_loopcontract/verdict.py defines {named} but docs/reference.py's "
            "EXIT_MEANINGS does not say what it means"
        )
    stale = sorted(set(meanings) - set(codes))
    if stale:
        raise DriftError(
            f"docs/reference.py's EXIT_MEANINGS explains {', '.join(stale)}, which "
            "pytest_loopcontract/verdict.py no longer defines"
        )
    shared = {v for v in codes.values() if list(codes.values()).count(v) > 1}
    if shared:
        raise DriftError(f"two exit-code constants share the value(s) {sorted(shared)}")
    rows = [
        [f"**{value}**", code(name), meanings[name]]
        for name, value in sorted(codes.items(), key=lambda item: item[1])
    ]
    out = _table(["code", "constant", "meaning"], rows)
    if pytest_codes:
        out += ["", "pytest's own (`pytest.ExitCode`), which `pytest --loop-contract` keeps:", ""]
        out += _table(
            ["code", "pytest.ExitCode"],
            [[f"**{v}**", code(n)] for n, v in sorted(pytest_codes.items(), key=lambda i: i[1])],
        )
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- the pages


def _contract_schema() -> str:
    return schema_reference(load_schema("contract"), "contract")


def _verdict_schema() -> str:
    return schema_reference(load_schema("verdict"), "verdict")


def _cli() -> str:
    from pytest_loopcontract.cli.parser import build_parser

    return cli_reference(build_parser())


def _exit_codes() -> str:
    import pytest

    from pytest_loopcontract import verdict

    pytest_codes = {member.name: int(member.value) for member in pytest.ExitCode}
    return exit_code_reference(exit_codes(verdict), pytest_codes=pytest_codes)


GENERATORS: dict[str, Callable[[], str]] = {
    "contract-schema": _contract_schema,
    "verdict-schema": _verdict_schema,
    "cli": _cli,
    "exit-codes": _exit_codes,
}


def expand(
    markdown: str, generators: Mapping[str, Callable[[], str]] = GENERATORS
) -> tuple[str, list[str]]:
    """``markdown`` with each marker line replaced by its generator's text, and the names of
    the markers replaced; an unknown marker is a DriftError."""
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in generators:
            known = ", ".join(sorted(generators))
            raise DriftError(f"unknown marker <!-- generated: {name} --> (known: {known})")
        used.append(name)
        return generators[name]().rstrip("\n")

    return MARKER.sub(replace, markdown), used
