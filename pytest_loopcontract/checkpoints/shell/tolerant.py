"""A forgiving reading of shell text the lexer found malformed (unbalanced quotes): the
normaliser reads such input both ways, so a filter cannot be slipped by breaking the quoting."""

from __future__ import annotations

import re

from pytest_loopcontract.checkpoints.model import Command
from pytest_loopcontract.checkpoints.shell.programs import program_name
from pytest_loopcontract.checkpoints.shell.vocabulary import ASSIGN_WORD_RE, TOLERANT_SKIP

__all__ = ["tolerant_commands"]

TOLERANT_SPLIT_RE = re.compile(r"&&|\|\||[;|&\n()`{}<>]|\$\(")


def tolerant_commands(text: str) -> list[Command]:
    """A forgiving reading of text the lexer found malformed: split on operators, drop quotes."""
    out: list[Command] = []
    for segment in TOLERANT_SPLIT_RE.split(text):
        words = segment.replace("'", " ").replace('"', " ").replace("\\", "").split()
        while words and (ASSIGN_WORD_RE.match(words[0]) or program_name(words[0]) in TOLERANT_SKIP):
            words = words[1:]
        if words:
            out.append(Command((program_name(words[0]), *words[1:]), segment.strip()))
    return out
