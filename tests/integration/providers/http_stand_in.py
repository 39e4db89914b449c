"""A real HTTP/1.1 server on 127.0.0.1 playing an HTTP API: scripted replies, recorded requests."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class Reply:
    """What the server answers: a status, headers and a JSON (or raw) body.

    ``delay`` waits before answering (a slow provider); ``hang_up`` closes the
    connection after reading the request without answering at all.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    delay: float = 0.0
    hang_up: bool = False


@attrs.frozen(kw_only=True)
class Received:
    """A request the server read."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: Any


Behaviour = Callable[[Received], Reply]


class HttpStandIn:
    """Answers each request with the next scripted reply, else with ``behaviour``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.script: deque[Reply] = deque()
        self.received: list[Received] = []
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def then(self, *replies: Reply) -> None:
        """Queue the replies for the next requests, in order."""
        self.script.extend(replies)

    def start(self) -> None:
        """Start serving in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Cut short any delayed reply, stop serving and close the socket."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def answer(self, request: Received) -> Reply:
        """Record ``request`` and choose its reply."""
        self.received.append(request)
        return self.script.popleft() if self.script else self.behaviour(request)

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        self._closing.wait(seconds)


def _handler_for(stand_in: HttpStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self._serve()

        def do_GET(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Keep test output clean."""

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            request = Received(
                method=self.command,
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
            )
            reply = stand_in.answer(request)
            if reply.delay:
                stand_in.wait(reply.delay)
            if reply.hang_up:
                self.close_connection = True
                return
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body)
            data = payload.encode() if isinstance(payload, str) else payload
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
