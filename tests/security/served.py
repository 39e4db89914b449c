"""``outboxctl serve`` as a real process on free ports, for attacks that need the real server.

uvicorn's own behaviour (proxy headers, connection timeouts, the socket's listeners) only
exists in the real process, so these tests talk to it over TCP like any outsider.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import httpx

from tests.outboxctl import outboxctl_environment

OUTBOXCTL = Path(sys.executable).parent / "outboxctl"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@attrs.frozen
class Served:
    """Where the public and the admin listener of a running ``outboxctl serve`` are."""

    public: str
    admin: str
    public_port: int
    admin_port: int


def serve_environment(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """A development configuration on the test database, roles as in production."""
    keep = outboxctl_environment({})
    return {
        **keep,
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_API_DB_ROLE": "identity_service",
        "OUTBOX_ADMIN_DB_ROLE": "staff_service",
        "OUTBOX_DATA_DIR": str(data_dir),
        "OUTBOX_HTTP_PORT": str(free_port()),
        "OUTBOX_ADMIN_PORT": str(free_port()),
        "OUTBOX_WEBHOOK_PORT": str(free_port()),
        "OUTBOX_LOG_FORMAT": "json",
        **extra,
    }


@contextmanager
def running_serve(environment: dict[str, str]) -> Iterator[Served]:
    """``outboxctl serve`` until the block ends; then SIGTERM, which must exit 0."""
    process = subprocess.Popen(
        [str(OUTBOXCTL), "serve"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    public_port = int(environment["OUTBOX_HTTP_PORT"])
    admin_port = int(environment["OUTBOX_ADMIN_PORT"])
    try:
        yield Served(
            public=f"http://127.0.0.1:{public_port}",
            admin=f"http://127.0.0.1:{admin_port}",
            public_port=public_port,
            admin_port=admin_port,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        assert 0 == process.wait(timeout=20)


async def wait_until_ready(base_url: str) -> None:
    """Poll ``/readyz`` until it answers 200 (the process and its database are up)."""
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as client:
        for _ in range(300):
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{base_url} did not become ready")
