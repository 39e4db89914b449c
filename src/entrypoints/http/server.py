"""Serving the app with uvicorn in the caller's event loop; SIGINT/SIGTERM end it cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from types import FrameType

import uvicorn
from litestar import Litestar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    """uvicorn's server, minus re-raising the stop signal after a graceful shutdown.

    uvicorn re-raises it so the process dies of the signal; an ``outboxctl`` command
    instead returns and exits 0, like ``outboxctl worker``. A second SIGINT forces exit.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self._stop) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)

    def _stop(self, sig: int, _frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


async def serve(
    app: Litestar,
    *,
    host: str,
    port: int,
    listener: socket.socket | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` (or an already bound ``listener``) until told to stop.

    Without ``stop``, SIGINT or SIGTERM ends it; with ``stop``, the caller owns the signals
    (``outboxctl up`` stops its worker first) and setting the event ends it. Either way open
    requests are finished first.
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
    )
    if stop is None:
        await _Server(config).serve(sockets=[listener] if listener else None)
        return
    server = _OwnedServer(config)

    async def stop_when_told() -> None:
        await stop.wait()
        server.should_exit = True

    watcher = asyncio.create_task(stop_when_told())
    try:
        await server.serve(sockets=[listener] if listener else None)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 picks a free port); OSError if it is taken."""
    return socket.create_server((host, port), reuse_port=False)


class _OwnedServer(uvicorn.Server):
    """uvicorn's server with its signal handling left to the process that embeds it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
