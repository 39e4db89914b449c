"""A flood of half-sent requests on one listener cannot stall the others (issue 28, low).

The attack: 1,100 connections that each sent half a request held every file descriptor the
process had (the shipped unit's limit was 1,024): all three listeners stopped answering, and
every failed accept wrote an error line (56 MB in 25 s). Now each listener holds at most a
capped number of connections (lowered to fit the file limit), a connection beyond it is
closed at once, and both the refusals and any failed accept are logged at a bounded rate.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.security.served import OUTBOXCTL, serve_environment, wait_until_ready

pytestmark = pytest.mark.integration

FILE_LIMIT = 256  # a small limit for the process, so the flood needs few connections
FLOOD = 400


def _small_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def _serve(environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``outboxctl serve`` under the small file limit, its output to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(OUTBOXCTL), "serve"],
            env=environment,
            stdout=out,
            stderr=out,
            preexec_fn=_small_file_limit,  # noqa: PLW1509 - only sets a limit, no threads
        )


def _open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def _flood(port: int) -> list[socket.socket]:
    held = []
    for _ in range(FLOOD):
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=2)
            conn.sendall(b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        except OSError:
            continue
        held.append(conn)
    return held


async def test_a_flood_on_the_public_listener_leaves_the_admin_listener_answering(
    database_url: str, tmp_path: Path
) -> None:
    environment = serve_environment(
        database_url, tmp_path, OUTBOX_HTTP_REQUEST_TIMEOUT_SECONDS="60"
    )
    log = tmp_path / "serve.log"
    process = _serve(environment, log)
    public = f"http://127.0.0.1:{environment['OUTBOX_HTTP_PORT']}"
    admin = f"http://127.0.0.1:{environment['OUTBOX_ADMIN_PORT']}"
    try:
        await wait_until_ready(public)
        held = await asyncio.to_thread(_flood, int(environment["OUTBOX_HTTP_PORT"]))
        try:
            await asyncio.sleep(1)
            open_files = await asyncio.to_thread(_open_files, process.pid)
            async with httpx.AsyncClient(timeout=5) as client:
                during = (await client.get(f"{admin}/healthz")).status_code
        finally:
            for conn in held:
                conn.close()
        await asyncio.sleep(1)
        async with httpx.AsyncClient(timeout=5) as client:
            after = (await client.get(f"{public}/healthz")).status_code
    finally:
        process.terminate()
        process.wait(timeout=30)

    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    # Without the cap the flood held all 256 (and every accept after it failed).
    assert open_files < FILE_LIMIT // 2
    assert 200 == during
    assert 200 == after
    assert 1 <= sum("http.connections_capped" in line for line in lines) <= 2
    # The event loop accepts up to a backlog of connections per turn and closes a refused
    # one a turn later, so a fast enough flood can briefly run the process out of files: the
    # accept is then retried a second later, and said once, not once per try.
    assert sum("http.accept_failed" in line for line in lines) <= 1
