"""Scripted model servers: local HTTP servers that play the model for the real agent CLIs.

Why: presets, hooks and budget readers were written from documentation; the real programs
(Claude Code from the npm registry, ...) can run on these machines when something answers their
API calls. A scripted server answers with a fixed script of turns, each a list of content
blocks (text, or a tool call such as writing a file or running a command), with usage figures,
and logs every request body, so a test can say exactly what the CLI asked and what it did.

``AnthropicServer`` speaks the Messages API as Claude Code uses it: ``POST /v1/messages`` with
``stream: true``, answered as server-sent events (``message_start``, ``content_block_start``,
``content_block_delta`` with ``text_delta`` or ``input_json_delta``, ``content_block_stop``,
``message_delta`` with the stop reason and usage, ``message_stop``). A request that offers no
tools (the CLI's short side requests, such as a session title) gets a one-line text answer and
does not consume a turn. A turn whose blocks hold a tool call stops with ``tool_use``; the CLI
runs the tool and calls again with its result, which is the next turn's request. Past the end
of the script every request gets a final ``end_turn`` text.

Usage::

    with AnthropicServer([
        [tool("Write", file_path="calc.py", content="...")],
        [text("done")],
    ]) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-test"}
        ...
        server.requests   # every request body (parsed JSON), in order
        server.status     # per turn: an HTTP status to answer instead (401, 429)
        server.fail_with  # one status for every agent request (a key that is never accepted)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AnthropicServer", "Block", "text", "tool"]


@dataclass(frozen=True)
class Block:
    """One content block of a scripted turn: text, or a tool call (name and input)."""

    kind: str  # "text" | "tool_use"
    text: str = ""
    name: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)


def text(value: str) -> Block:
    return Block("text", text=value)


def tool(name: str, **arguments: Any) -> Block:
    return Block("tool_use", name=name, input=arguments)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(body)
            owner.headers.append({k.lower(): v for k, v in self.headers.items()})
        if not self.path.split("?", 1)[0].endswith("/v1/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        owner.answer(self, body)

    def _json(self, status: int, document: Mapping[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: AnthropicServer


class AnthropicServer:
    """The Messages API, scripted (see the module docstring)."""

    def __init__(
        self,
        turns: Sequence[Sequence[Block]],
        *,
        usage: tuple[int, int] = (1000, 100),
        model: str = "claude-scripted",
    ) -> None:
        self.turns = [list(turn) for turn in turns]
        self.usage = usage
        self.model = model
        self.status: dict[int, int] = {}
        self.fail_with: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.turns_served = 0
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def agent_requests(self) -> list[dict[str, Any]]:
        """The requests that offered tools: the agent's own turns."""
        return [r for r in self.requests if r.get("tools")]

    def answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        if not body.get("tools"):
            self._stream(handler, [text("Scripted session")], "end_turn")
            return
        with self.lock:
            index = self.turns_served
            self.turns_served += 1
        failure = self.fail_with if self.fail_with is not None else self.status.get(index)
        if failure is not None:
            kind = {401: "authentication_error", 429: "rate_limit_error"}.get(failure, "api_error")
            handler._json(failure, {"type": "error", "error": {"type": kind, "message": kind}})
            return
        blocks = self.turns[index] if index < len(self.turns) else [text("Done.")]
        stop = "tool_use" if any(b.kind == "tool_use" for b in blocks) else "end_turn"
        self._stream(handler, blocks, stop, turn=index)

    def _stream(
        self, handler: _Handler, blocks: Sequence[Block], stop: str, *, turn: int = -1
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        prompt_tokens, output_tokens = self.usage
        message: dict[str, Any] = {
            "id": f"msg_scripted_{turn + 1}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": message})]
        for index, block in enumerate(blocks):
            events += _block_events(index, block, turn)
        events.append(
            (
                "message_delta",
                {
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
            )
        )
        events.append(("message_stop", {}))
        for name, data in events:
            payload = json.dumps({"type": name, **data})
            handler.wfile.write(f"event: {name}\ndata: {payload}\n\n".encode())
        handler.wfile.flush()


def _block_events(index: int, block: Block, turn: int) -> list[tuple[str, dict[str, Any]]]:
    start: dict[str, Any]
    if block.kind == "text":
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block.text}
    else:
        start = {"type": "tool_use", "id": f"toolu_{turn + 1}_{index}", "name": block.name,
                 "input": {}}  # fmt: skip
        delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(block.input))}
    return [
        ("content_block_start", {"index": index, "content_block": start}),
        ("content_block_delta", {"index": index, "delta": delta}),
        ("content_block_stop", {"index": index}),
    ]
