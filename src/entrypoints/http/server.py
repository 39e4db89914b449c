"""Serving apps with uvicorn in the caller's event loop; SIGINT/SIGTERM end them cleanly.

One process may serve several listeners (the public API and the admin listener): each is
its own uvicorn server on its own socket, started and stopped together.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import h11
import structlog
import uvicorn
from litestar import Litestar
from uvicorn.protocols.http.h11_impl import H11Protocol

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A request (its line, headers and body) must arrive within this many seconds of the
# connection opening or of the previous response, else the connection is closed.
DEFAULT_REQUEST_TIMEOUT = 10.0
KEEP_ALIVE_SECONDS = 5
# Open connections one listener holds at most; a connection beyond it is closed at once, so a
# flood of half-sent requests on one listener cannot take the file descriptors the others,
# the database pools and the log need. Lowered to fit the process's file limit.
DEFAULT_MAX_CONNECTIONS = 1000
# How many pending connections one listener accepts in one go (asyncio accepts up to the
# backlog per wake-up, before any of them can be refused): a burst's descriptors exist for a
# moment beyond the cap.
ACCEPT_BACKLOG = 128
# File descriptors kept for everything but the listeners' connections (pools, logs, NATS),
# and for one accept burst.
RESERVED_FILES = 64 + ACCEPT_BACKLOG
# Refused connections and failed accepts are logged at most once per this many seconds each,
# with how many there were: a flood must not become a flood of log lines.
LOG_EVERY_SECONDS = 10.0
ACCEPT_FAILURE = "socket.accept() out of system resource"


@attrs.frozen(kw_only=True)
class Listener:
    """An app and the bound socket it is served on."""

    app: Litestar
    socket: socket.socket = attrs.field(eq=False)

    @property
    def address(self) -> tuple[str, int]:
        """The host and port the socket is bound to."""
        host, port = self.socket.getsockname()[:2]
        return str(host), int(port)


@attrs.frozen(kw_only=True)
class ServerOptions:
    """How every listener of a process treats its clients."""

    # Peers (addresses or networks) whose X-Forwarded-For / X-Forwarded-Proto uvicorn
    # believes; none by default, so the client address is always the TCP peer.
    trusted_proxies: tuple[str, ...] = ()
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # per listener, before the file limit


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 picks a free port); OSError if it is taken."""
    return socket.create_server((host, port), reuse_port=False)


async def serve(
    listeners: Sequence[Listener],
    *,
    options: ServerOptions | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve every listener until told to stop; open requests are finished first.

    Without ``stop``, SIGINT or SIGTERM ends it (a second SIGINT forces the exit); with
    ``stop``, the caller owns the signals (``outboxctl up`` stops its worker first) and
    setting the event ends it. If one server fails, the others are stopped too.
    """
    options = options or ServerOptions()
    cap = connection_cap(options.max_connections, len(listeners))
    servers = [
        _OwnedServer(_config(listener.app, options, cap, _listener_name(listener)))
        for listener in listeners
    ]
    bound_accept_failures(asyncio.get_running_loop())
    if stop is not None:
        await _serve_until(stop, servers, listeners)
        return
    with _stop_on_signals(servers) as signalled:
        await _serve_until(signalled, servers, listeners)


async def _serve_until(
    stop: asyncio.Event, servers: Sequence[uvicorn.Server], listeners: Sequence[Listener]
) -> None:
    tasks = [
        asyncio.create_task(server.serve(sockets=[listener.socket]), name="http")
        for server, listener in zip(servers, listeners, strict=True)
    ]
    waiter = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for server in servers:
            server.should_exit = True
        waiter.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(waiter, return_exceptions=True)
    for result in results:
        if isinstance(result, Exception):
            raise result


def connection_cap(wanted: int, listeners: int) -> int:
    """The connections each of ``listeners`` may hold: ``wanted``, lowered so that all of them
    together stay under the process's file limit (raised to its hard limit first)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            soft = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        except (ValueError, OSError):
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    fits = max(16, (soft - RESERVED_FILES) // max(1, listeners))
    return min(wanted, fits)


def _listener_name(listener: Listener) -> str:
    host, port = listener.address
    return f"{host}:{port}"


class _Throttled:
    """Counts an event and logs it at most once per LOG_EVERY_SECONDS, with the count."""

    def __init__(self, event: str, **fields: str) -> None:
        self._event = event
        self._fields = fields
        self._count = 0
        self._logged_at = -LOG_EVERY_SECONDS

    def note(self) -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_SECONDS:
            structlog.get_logger().warning(
                self._event, logger="outbox", count=self._count, **self._fields
            )
            self._count, self._logged_at = 0, now


def bound_accept_failures(loop: asyncio.AbstractEventLoop) -> None:
    """Log a failed accept (out of file descriptors) at a bounded rate, not once per try."""
    previous = loop.get_exception_handler()
    if getattr(previous, "bounded_accepts", False):
        return
    failures = _Throttled("http.accept_failed", hint="raise LimitNOFILE or lower the cap")

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_FAILURE:
            failures.note()
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handle.bounded_accepts = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handle)


def _config(app: Litestar, options: ServerOptions, cap: int, name: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
        proxy_headers=bool(options.trusted_proxies),
        forwarded_allow_ips=list(options.trusted_proxies),
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        backlog=ACCEPT_BACKLOG,
        http=_deadline_protocol(options.request_timeout, cap, name),
    )


@contextlib.contextmanager
def _stop_on_signals(servers: Sequence[uvicorn.Server]) -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM; a second SIGINT forces every server to exit."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop  # signals reach only the main thread; the embedding thread stops us
        return

    def handle(sig: signal.Signals) -> None:
        if stop.is_set() and sig == signal.SIGINT:
            for server in servers:
                server.force_exit = True
        stop.set()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, handle, sig)
    try:
        yield stop
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


class _OwnedServer(uvicorn.Server):
    """uvicorn's server with its signal handling left to the process that embeds it.

    uvicorn would re-raise the stop signal after a graceful shutdown, so the process dies
    of it; an ``outboxctl`` command instead returns and exits 0, like ``outboxctl worker``.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _deadline_protocol(seconds: float, cap: int, name: str) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a deadline for receiving each whole request, and at most
    ``cap`` open connections on the listener.

    uvicorn only times out an idle keep-alive connection, and every byte received resets
    that; a client trickling its headers or body would hold the connection for ever. A
    connection beyond the cap is closed before anything is read from it.
    """
    refused = _Throttled("http.connections_capped", listener=name, cap=str(cap))

    class DeadlineH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _refused = False

        def connection_made(self, transport: Any) -> None:
            if len(self.connections) >= cap:
                self._refused = True
                transport.abort()
                refused.note()
                return
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is over)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if (
                self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
                and not self.transport.is_closing()
            ):
                self.transport.close()

    return DeadlineH11Protocol
