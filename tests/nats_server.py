"""A private ``nats-server -js`` on a free loopback port with a temporary store, for tests.

Like the PostgreSQL fixtures, the tests never depend on a server left running by hand. The
binary comes from Debian's ``nats-server`` package (``.ci/run`` installs it).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

BINARY = "/usr/sbin/nats-server"
INSTALL_HINT = "nats-server is missing: install it: apt-get install nats-server"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def nats_binary() -> str:
    """The server's path; raises RuntimeError saying how to install it when it is missing."""
    found = BINARY if Path(BINARY).exists() else shutil.which("nats-server")
    if found is None:
        raise RuntimeError(INSTALL_HINT)
    return found


class NatsServer:
    """One nats-server with JetStream; ``stop`` and ``start`` keep its port and its store."""

    def __init__(self, store: Path, *, port: int | None = None) -> None:
        self.binary = nats_binary()
        self.store = store
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``nats://127.0.0.1:<port>``."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the process is up."""
        return self._process is not None and self._process.poll() is None

    def start(self, *, timeout: float = 10.0) -> None:
        """Start the server and wait until it accepts connections."""
        self._process = subprocess.Popen(
            [self.binary, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.store)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"nats-server did not listen on {self.port} within {timeout} s")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL)."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
