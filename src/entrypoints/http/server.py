"""Serving the app with uvicorn in the caller's event loop; SIGINT/SIGTERM end it cleanly."""

from __future__ import annotations

import contextlib
import signal
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


async def serve(app: Litestar, *, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` until SIGINT or SIGTERM, then finish open requests."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
    )
    await _Server(config).serve()
