"""Grouping: tokens to simple commands, each with the pipeline that feeds it.

``a | b && c`` is three simple commands; ``b`` knows ``a`` pipes into it (``curl … | sh`` is
judged on that), ``c`` starts a new pipeline. Subshell parentheses only separate. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_loopcontract.checkpoints.shell.lexer import Token

__all__ = ["RawCommand", "group_commands"]


@dataclass(slots=True)
class RawCommand:
    """A simple command as tokens, before its words are expanded and its wrappers stripped."""

    words: list[Token]
    redirects: list[tuple[Token, Token | None]]
    upstream: list[RawCommand]
    piped: bool = False
    final: tuple[str, ...] = ()

    def span(self) -> tuple[int, int]:
        """Where the command sits in its source text (tokens come in source order)."""
        starts: list[int] = []
        ends: list[int] = []
        if self.words:
            starts.append(self.words[0].start)
            ends.append(self.words[-1].end)
        if self.redirects:
            starts.append(self.redirects[0][0].start)
            op, target = self.redirects[-1]
            ends.append((target or op).end)
        return min(starts), max(ends)


def group_commands(toks: list[Token]) -> list[RawCommand]:
    """The simple commands of a token stream, each knowing the commands piping into it."""
    raws: list[RawCommand] = []
    words: list[Token] = []
    redirs: list[tuple[Token, Token | None]] = []
    pipeline: list[RawCommand] = []
    pipe_pending = False
    want: Token | None = None

    def flush() -> None:
        nonlocal words, redirs, pipeline, pipe_pending
        if not words and not redirs:
            return
        raw = RawCommand(words, redirs, list(pipeline) if pipe_pending else [])
        if pipe_pending and pipeline:
            pipeline[-1].piped = True
            pipeline = [*pipeline, raw]
        else:
            pipeline = [raw]
        pipe_pending = False
        raws.append(raw)
        words, redirs = [], []

    for tok in toks:
        if tok.kind == "w":
            if want is not None:
                redirs.append((want, tok))
                want = None
            else:
                words.append(tok)
            continue
        if want is not None:
            redirs.append((want, None))
            want = None
        if tok.kind == "r":
            want = tok
            continue
        flush()
        if tok.text in ("|", "|&"):
            pipe_pending = True
        elif tok.text not in ("(", ")"):
            pipeline, pipe_pending = [], False
    if want is not None:
        redirs.append((want, None))
    flush()
    return raws
