"""Loopback addresses that fail in known ways: a closed port and a port that never accepts."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
from collections.abc import Iterator


def closed_port() -> int:
    """A loopback port nobody listens on (connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def free_port() -> int:
    """A loopback port free right now, for servers that cannot bind port 0 themselves.

    Taken below the kernel's ephemeral range, so no outgoing connection (a test's database
    client, say) can take it between now and the server's bind, and from a slice of that
    range of this test process's own (pytest-xdist runs several), never the same one twice.
    """
    with _HANDING_OUT:
        return next(_PORTS)


def _ports_of_this_process() -> Iterator[int]:
    low, high = _UNEPHEMERAL
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    slices = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    width = (high - low) // slices
    start = low + width * (int(worker) % slices if worker.isdigit() else 0)
    for port in itertools.cycle(range(start, start + width)):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        yield port


# Below Linux's default ephemeral range (32768-60999) and above the well-known services.
_UNEPHEMERAL = (20000, 32000)
_PORTS = _ports_of_this_process()
_HANDING_OUT = threading.Lock()


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
