"""The README walk-through, literally: `outboxctl serve` + `outboxctl worker --drain` + HTTP."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.outboxctl import outboxctl_environment

pytestmark = pytest.mark.integration

OUTBOXCTL = Path(sys.executable).parent / "outboxctl"
ACCOUNT = {"identifier": "alice@example.com", "password": "correct horse battery"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    """A development configuration on the test database (roles as in production)."""
    keep = outboxctl_environment({})
    return {
        **keep,
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_API_DB_ROLE": "identity_service",
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_HTTP_PORT": str(_free_port()),
        "OUTBOX_ADMIN_PORT": str(_free_port()),
        "OUTBOX_WEBHOOK_PORT": str(_free_port()),
        "OUTBOX_LOG_FORMAT": "json",
    }


@pytest.fixture
def served(environment: dict[str, str]) -> Iterator[str]:
    """``outboxctl serve`` running; its base URL. Stopped with SIGTERM, which must exit 0."""
    process = subprocess.Popen(
        [str(OUTBOXCTL), "serve"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    yield f"http://127.0.0.1:{environment['OUTBOX_HTTP_PORT']}"
    process.send_signal(signal.SIGTERM)
    assert 0 == process.wait(timeout=20)


async def _ready(client: httpx.AsyncClient) -> None:
    for _ in range(200):
        try:
            if (await client.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("outboxctl serve did not become ready")


async def _code_from_the_console(environment: dict[str, str]) -> str:
    worker = await asyncio.create_subprocess_exec(
        str(OUTBOXCTL),
        "worker",
        "--drain",
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    output, _ = await asyncio.wait_for(worker.communicate(), timeout=60)
    assert 0 == worker.returncode
    [code] = re.findall(r"code is (\d{6})", output.decode())
    return code


async def test_a_newcomer_signs_up_confirms_signs_in_and_steps_up(
    served: str, environment: dict[str, str]
) -> None:
    async with httpx.AsyncClient(base_url=served, timeout=10) as client:
        await _ready(client)

        sign_up = {"identifier": ACCOUNT["identifier"]}
        assert 201 == (await client.post("/sign-ups", json=sign_up)).status_code
        code = await _code_from_the_console(environment)
        confirmation = {**ACCOUNT, "code": code}
        assert 204 == (await client.post("/sign-ups/confirmations", json=confirmation)).status_code
        token = (await client.post("/sessions", json=ACCOUNT)).json()["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        assert 201 == (await client.post("/step-ups", headers=bearer)).status_code
        code = await _code_from_the_console(environment)
        elevated = await client.post("/step-ups/confirmations", json={"code": code}, headers=bearer)

        assert 201 == elevated.status_code
        assert "elevationToken" in elevated.json()
    admin = f"http://127.0.0.1:{environment['OUTBOX_ADMIN_PORT']}"
    async with httpx.AsyncClient(base_url=admin, timeout=10) as client:
        assert b"# HELP" in (await client.get("/metrics")).content
