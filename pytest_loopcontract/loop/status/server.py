"""``loop-contract status --serve``: one read-only page and ``/status.json`` over HTTP.

Standard library only (:class:`http.server.ThreadingHTTPServer`). Nothing it serves changes
anything: ``GET`` and ``HEAD`` only, every other method answers 405 with ``Allow``; the status
is computed fresh from the history on each request by the caller's ``collect`` (the one status
computation), so a torn or very long history shows exactly what ``status --json`` shows. It
listens on 127.0.0.1 unless told otherwise, and refuses requests whose ``Host`` is not the
address it serves (a web page elsewhere cannot reach it by DNS rebinding). Responses carry a
Content-Security-Policy that allows only the page's own script and style.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_loopcontract.loop.status.assets import PAGE_CSS, PAGE_HTML, PAGE_JS
from pytest_loopcontract.loop.status.page import page_document

__all__ = ["make_server"]

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_STATIC = {
    "/": ("text/html; charset=utf-8", PAGE_HTML),
    "/index.html": ("text/html; charset=utf-8", PAGE_HTML),
    "/status.css": ("text/css; charset=utf-8", PAGE_CSS),
    "/status.js": ("text/javascript; charset=utf-8", PAGE_JS),
}


def _handler(collect: Callable[[], dict[str, Any]], hosts: frozenset[str]) -> type:
    """The request handler class, closed over what it serves."""

    class StatusHandler(BaseHTTPRequestHandler):
        server_version = "loop-contract-status"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a page that polls every two seconds would flood the terminal."""

        def _send(
            self, code: int, ctype: str, body: bytes, extra: dict[str, str] | None = None
        ) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Security-Policy", _CSP)
            self.send_header("Referrer-Policy", "no-referrer")
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _answer(self) -> None:
            if self.headers.get("Host", "") not in hosts:
                self._send(HTTPStatus.MISDIRECTED_REQUEST, "text/plain", b"unknown Host\n")
                return
            path = self.path.split("?", 1)[0]
            if path == "/status.json":
                try:
                    body = json.dumps(page_document(collect()), default=str).encode("utf-8")
                except Exception as exc:  # the page says why; the server stays up
                    message = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
                    self._send(500, "application/json", message.encode("utf-8"))
                    return
                self._send(200, "application/json; charset=utf-8", body)
                return
            static = _STATIC.get(path)
            if static is None:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")
                return
            self._send(200, static[0], static[1].encode("utf-8"))

        def do_GET(self) -> None:
            self._answer()

        def do_HEAD(self) -> None:
            self._answer()

        def _refuse(self) -> None:
            body = b"read-only: only GET and HEAD\n"
            self._send(405, "text/plain; charset=utf-8", body, {"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse

    return StatusHandler


def make_server(
    collect: Callable[[], dict[str, Any]], host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (0: any free port; read ``server_address``)."""
    server = ThreadingHTTPServer((host, port), _handler(collect, frozenset()))
    bound = server.server_address[1]
    names = (
        {host, "127.0.0.1", "localhost", "[::1]"} if host in ("127.0.0.1", "localhost") else {host}
    )
    server.RequestHandlerClass = _handler(collect, frozenset(f"{n}:{bound}" for n in names))
    server.daemon_threads = True
    return server
