"""Scripted model servers: local HTTP servers that play the model for the real agent CLIs.

Why: presets, hooks and budget readers were written from documentation; the real programs
(Claude Code, Codex and Gemini CLI from the npm registry) can run on these machines when
something answers their API calls. A scripted server answers with a fixed script of turns, each
a list of content blocks (text, or a tool call such as writing a file or running a command),
with usage figures, and logs every request body, so a test can say exactly what the CLI asked
and what it did.

One :class:`ScriptedServer` holds the script, the log and the failure knobs; a dialect per
vendor says which requests are the agent's turns and how a turn is written on the wire:

* :class:`AnthropicServer` - the Messages API as Claude Code uses it: ``POST /v1/messages``
  with ``stream: true``, answered as server-sent events (``message_start``,
  ``content_block_*``, ``message_delta`` with the stop reason and usage, ``message_stop``).
* :class:`ResponsesServer` - the OpenAI Responses API as Codex uses it: ``POST
  /v1/responses``, answered as events (``response.created``, ``response.output_item.done``
  per message or ``function_call``, ``response.completed`` with usage).
* :class:`ChatCompletionsServer` - the Chat Completions API as Aider uses it: ``POST
  /v1/chat/completions``, the reply's text as the message's ``content``.
* :class:`GeminiServer` - the Gemini API as Gemini CLI uses it:
  ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` answered as ``data:`` chunks of
  ``candidates`` and ``usageMetadata``; its side calls (``:generateContent``, ``:countTokens``)
  get a short JSON answer.

A request that offers no tools (a CLI's side request, such as a session title) gets a one-line
text answer and does not consume a turn. A turn whose blocks hold a tool call asks the CLI to run
it; the CLI calls again with the result, which is the next turn's request. Past the end of the
script every request gets a final text. A script may also be a function of the request body
and the turn's index (a judge's reply depends on the packet it was given).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "AnthropicServer",
    "Block",
    "ChatCompletionsServer",
    "GeminiServer",
    "ResponsesServer",
    "ScriptedServer",
    "text",
    "tool",
]

Event = tuple[str, dict[str, Any]]
Responder = Callable[[Mapping[str, Any], int], Sequence["Block"]]
"""A script written as a function: the request body and the turn's index give its blocks."""


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

    def do_GET(self) -> None:
        self.server.owner.log(self, {})
        self.json(404, {"error": {"code": 404, "message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        owner.log(self, body)
        owner.answer(self, body)

    def json(self, status: int, document: Mapping[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def events(self, events: Sequence[Event], *, named: bool = True) -> None:
        """Server-sent events; ``named`` writes an ``event:`` line and a ``type`` field."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for name, data in events:
            if named:
                payload = json.dumps({"type": name, **data})
                self.wfile.write(f"event: {name}\ndata: {payload}\n\n".encode())
            else:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedServer


class ScriptedServer:
    """The script, the request log and the failure knobs; a subclass is one vendor's dialect."""

    def __init__(
        self,
        turns: Sequence[Sequence[Block]] | Responder,
        *,
        usage: tuple[int, int] = (1000, 100),
        model: str = "scripted",
    ) -> None:
        self.responder = turns if callable(turns) else None
        self.turns = [] if callable(turns) else [list(turn) for turn in turns]
        self.usage = usage
        self.model = model
        self.status: dict[int, int] = {}
        self.fail_with: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
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

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def log(self, handler: _Handler, body: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(body)
            self.paths.append(handler.path)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})

    @property
    def agent_requests(self) -> list[dict[str, Any]]:
        """The requests that offered tools: the agent's own turns."""
        return [r for r in self.requests if r.get("tools")]

    def answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        if not self.is_turn(handler.path, body):
            self.side_answer(handler, body)
            return
        with self.lock:
            index = self.turns_served
            self.turns_served += 1
        failure = self.fail_with if self.fail_with is not None else self.status.get(index)
        if failure is not None:
            handler.json(failure, self.error_document(failure))
            return
        if self.responder is not None:
            blocks = list(self.responder(body, index))
        else:
            blocks = self.turns[index] if index < len(self.turns) else [text("Done.")]
        self.write_turn(handler, blocks, index)

    # The dialect: which request is a turn, and how answers look on the wire.
    def is_turn(self, path: str, body: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def side_answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def error_document(self, status: int) -> dict[str, Any]:
        raise NotImplementedError

    def write_turn(self, handler: _Handler, blocks: Sequence[Block], turn: int) -> None:
        raise NotImplementedError


class AnthropicServer(ScriptedServer):
    """The Messages API, scripted (see the module docstring)."""

    def __enter__(self) -> AnthropicServer:
        super().__enter__()
        return self

    def is_turn(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.split("?", 1)[0].endswith("/v1/messages") and bool(body.get("tools"))

    def side_answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        if not handler.path.split("?", 1)[0].endswith("/v1/messages"):
            handler.json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        handler.events(self._message([text("Scripted session")], "end_turn", -1))

    def error_document(self, status: int) -> dict[str, Any]:
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": kind}}

    def write_turn(self, handler: _Handler, blocks: Sequence[Block], turn: int) -> None:
        stop = "tool_use" if any(b.kind == "tool_use" for b in blocks) else "end_turn"
        handler.events(self._message(blocks, stop, turn))

    def _message(self, blocks: Sequence[Block], stop: str, turn: int) -> list[Event]:
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
        events: list[Event] = [("message_start", {"message": message})]
        for index, block in enumerate(blocks):
            events += _anthropic_block(index, block, turn)
        delta = {"stop_reason": stop, "stop_sequence": None}
        usage = {"output_tokens": output_tokens}
        events.append(("message_delta", {"delta": delta, "usage": usage}))
        events.append(("message_stop", {}))
        return events


def _anthropic_block(index: int, block: Block, turn: int) -> list[Event]:
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


class ResponsesServer(ScriptedServer):
    """The OpenAI Responses API, scripted: a text block is an assistant ``message`` item, a
    tool block a ``function_call`` item whose ``arguments`` is the input as a JSON string
    (Codex 0.171 offers ``exec_command`` with ``cmd`` as its shell)."""

    def __enter__(self) -> ResponsesServer:
        super().__enter__()
        return self

    def is_turn(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.split("?", 1)[0].endswith("/responses") and bool(body.get("tools"))

    def side_answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        if not handler.path.split("?", 1)[0].endswith("/responses"):
            handler.json(404, self.error_document(404))
            return
        handler.events(self._response([text("Scripted session")], -1))

    def error_document(self, status: int) -> dict[str, Any]:
        return _openai_error(status)

    def write_turn(self, handler: _Handler, blocks: Sequence[Block], turn: int) -> None:
        handler.events(self._response(blocks, turn))

    def _response(self, blocks: Sequence[Block], turn: int) -> list[Event]:
        response_id = f"resp_scripted_{turn + 1}"
        events: list[Event] = [("response.created", {"response": {"id": response_id}})]
        for index, block in enumerate(blocks):
            item = _responses_item(block, f"{turn + 1}_{index}")
            events.append(("response.output_item.done", {"output_index": index, "item": item}))
        prompt_tokens, output_tokens = self.usage
        usage = {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + output_tokens,
        }
        completed = {"id": response_id, "status": "completed", "usage": usage}
        events.append(("response.completed", {"response": completed}))
        return events


def _openai_error(status: int) -> dict[str, Any]:
    """An error body as OpenAI's APIs word it (both the Responses and Chat Completions)."""
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    message = {401: "Incorrect API key provided", 429: "Rate limit reached"}.get(
        status, "The server had an error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _responses_item(block: Block, suffix: str) -> dict[str, Any]:
    if block.kind == "text":
        content = [{"type": "output_text", "text": block.text, "annotations": []}]
        return {"type": "message", "id": f"msg_{suffix}", "role": "assistant",
                "status": "completed", "content": content}  # fmt: skip
    return {
        "type": "function_call",
        "id": f"fc_{suffix}",
        "call_id": f"call_{suffix}",
        "name": block.name,
        "arguments": json.dumps(dict(block.input)),
        "status": "completed",
    }


class GeminiServer(ScriptedServer):
    """The Gemini API, scripted: a text block is a ``text`` part, a tool block a
    ``functionCall`` part; usage is ``usageMetadata`` on the last chunk."""

    def __enter__(self) -> GeminiServer:
        super().__enter__()
        return self

    def is_turn(self, path: str, body: Mapping[str, Any]) -> bool:
        return ":streamGenerateContent" in path and bool(body.get("tools"))

    def side_answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        path = handler.path
        if ":countTokens" in path:
            handler.json(200, {"totalTokens": 10})
        elif ":streamGenerateContent" in path:
            handler.events([("", self._chunk([text("Scripted session")], -1))], named=False)
        elif ":generateContent" in path:
            handler.json(200, self._chunk([text(self.side_text)], -1))
        else:
            handler.json(404, self.error_document(404))

    side_text = json.dumps(
        {
            "complexity_reasoning": "scripted",
            "complexity_score": 10,
            "reasoning": "scripted",
            "next_speaker": "user",
        }
    )
    """The text of a side ``:generateContent`` answer: Gemini CLI asks for JSON there (its
    model router wants a complexity score, its next-speaker check a speaker), and retries an
    answer that is not, counting every try in its usage."""

    def error_document(self, status: int) -> dict[str, Any]:
        kind = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED"}.get(status, "INTERNAL")  # fmt: skip
        message = {
            401: "API key not valid. Please pass a valid API key.",
            429: "Resource has been exhausted (e.g. check quota).",
        }.get(status, kind)
        error: dict[str, Any] = {"code": status, "message": message, "status": kind}
        if status == 429:  # the daily quota, as Google words it: no retry helps today
            violation = {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            }
            kind_of = "type.googleapis.com/google.rpc.QuotaFailure"
            error["details"] = [{"@type": kind_of, "violations": [violation]}]
        return {"error": error}

    def write_turn(self, handler: _Handler, blocks: Sequence[Block], turn: int) -> None:
        handler.events([("", self._chunk(blocks, turn))], named=False)

    def _chunk(self, blocks: Sequence[Block], turn: int) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if block.kind == "text":
                parts.append({"text": block.text})
            else:
                parts.append({"functionCall": {"name": block.name, "args": dict(block.input)}})
        prompt_tokens, output_tokens = self.usage
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                     "index": 0}  # fmt: skip
        usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                 "totalTokenCount": prompt_tokens + output_tokens}  # fmt: skip
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": self.model,
                "responseId": f"scripted-{turn + 1}"}  # fmt: skip


class ChatCompletionsServer(ScriptedServer):
    """The OpenAI Chat Completions API, scripted, as Aider (through LiteLLM) uses it: every
    ``POST .../chat/completions`` is a turn whose text blocks are the reply's ``content``
    (Aider edits files through the text it gets back, not through tool calls); answered as one
    JSON object, or as ``data:`` chunks ending in ``[DONE]`` when the request streams."""

    def __enter__(self) -> ChatCompletionsServer:
        super().__enter__()
        return self

    def is_turn(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.split("?", 1)[0].endswith("/chat/completions")

    def side_answer(self, handler: _Handler, body: Mapping[str, Any]) -> None:
        handler.json(404, self.error_document(404))

    def error_document(self, status: int) -> dict[str, Any]:
        return _openai_error(status)

    def write_turn(self, handler: _Handler, blocks: Sequence[Block], turn: int) -> None:
        content = "".join(block.text for block in blocks if block.kind == "text")
        prompt_tokens, output_tokens = self.usage
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": output_tokens,
                 "total_tokens": prompt_tokens + output_tokens}  # fmt: skip
        head = {"id": f"chatcmpl-scripted-{turn + 1}", "created": 1796400000, "model": self.model}
        body = self.requests[-1] if self.requests else {}
        if not body.get("stream"):
            message = {"role": "assistant", "content": content}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            handler.json(200, {**head, "object": "chat.completion", "choices": [choice],
                               "usage": usage})  # fmt: skip
            return
        chunk = {**head, "object": "chat.completion.chunk"}
        delta = {"index": 0, "delta": {"role": "assistant", "content": content},
                 "finish_reason": None}  # fmt: skip
        done = {"index": 0, "delta": {}, "finish_reason": "stop"}
        handler.events(
            [("", {**chunk, "choices": [delta]}), ("", {**chunk, "choices": [done],
                                                         "usage": usage})],
            named=False,
        )  # fmt: skip
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
