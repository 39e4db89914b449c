"""Loopback addresses that fail in known ways: a closed port and a port that never accepts."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def closed_port() -> int:
    """A loopback port nobody listens on (connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def free_port() -> int:
    """A loopback port free right now, for servers that cannot bind port 0 themselves."""
    return closed_port()


@contextlib.contextmanager
def black_hole() -> Iterator[int]:
    """A port whose accept queue is full, so a new connection attempt times out.

    The listener has a backlog of 0 and never accepts; a few connections fill its
    queue and the kernel then drops further SYNs, which is what an unreachable or
    overloaded host looks like to a client.
    """
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        for _ in range(3):
            filler = stack.enter_context(socket.socket())
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        yield port
