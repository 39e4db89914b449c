"""A real Prometheus scrapes a real API and a real worker, and promtool accepts both outputs.

Debian's ``prometheus`` package gives both programs (``.ci/run`` installs it); without it
these tests skip, naming the package. The server is started here on a free loopback port
with a generated configuration and its own storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from outbox.adapters.crypto.keyring import generate_key, key_line
from tests.integration.providers.network import free_port
from tests.os_programs import require_program
from tests.outboxctl import outboxctl_environment

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))
WITHIN = 60.0  # seconds any one wait may take before the test fails, naming what it saw


@pytest.fixture(scope="session")
def prometheus_program() -> str:
    """Debian's prometheus, looked for before any database or process is started."""
    return require_program("prometheus", "prometheus")


@pytest.fixture(scope="session")
def promtool() -> str:
    """Debian's promtool (same package), looked for before anything is started."""
    return require_program("promtool", "prometheus")


@contextlib.contextmanager
def _running(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    """``argv`` running, its output in ``log``; stopped with SIGTERM, which must exit 0."""
    with log.open("wb") as output:
        process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout=30)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    assert 0 == code, log.read_text(encoding="utf-8", errors="replace")[-2000:]


@pytest.fixture
def environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    """A development configuration on the test database, the roles as in production."""
    return {
        **outboxctl_environment({}),
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_API_DB_ROLE": "identity_service",
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_SEAL_KEYS": key_line(generate_key("scrape")),
        "OUTBOX_DATA_DIR": str(tmp_path / "data"),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_HTTP_PORT": str(free_port()),
        "OUTBOX_ADMIN_PORT": str(free_port()),
        "OUTBOX_WEBHOOK_PORT": str(free_port()),
        "OUTBOX_WORKER_METRICS_PORT": str(free_port()),
        "OUTBOX_WORKER_POLL_SECONDS": "0.2",
    }


@pytest.fixture
def targets(environment: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """``outboxctl serve`` and ``outboxctl worker`` running: job name → its /metrics address."""
    with (
        _running([OUTBOXCTL, "serve"], tmp_path / "api.log", environment),
        _running([OUTBOXCTL, "worker"], tmp_path / "worker.log", environment),
    ):
        yield {
            # /metrics is on the admin listener, never on the public port.
            "outbox-api": f"127.0.0.1:{environment['OUTBOX_ADMIN_PORT']}",
            "outbox-worker": f"127.0.0.1:{environment['OUTBOX_WORKER_METRICS_PORT']}",
        }


@pytest.fixture
async def prometheus(
    prometheus_program: str, targets: dict[str, str], tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """A Prometheus server scraping ``targets`` every second; a client of its HTTP API."""
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                "scrape_configs": [
                    {"job_name": job, "static_configs": [{"targets": [address]}]}
                    for job, address in targets.items()
                ],
            }
        ),
        encoding="utf-8",
    )
    address = f"127.0.0.1:{free_port()}"
    argv = [
        prometheus_program,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address={address}",
    ]
    with _running(argv, tmp_path / "prometheus.log"):
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=5) as client:
            yield client


async def _poll(what: str, probe: Any) -> Any:
    """``await probe()`` until it returns something truthy; fail after WITHIN seconds."""
    deadline = time.monotonic() + WITHIN
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await probe()
        except httpx.TransportError as error:
            last = type(error).__name__
        else:
            if last:
                return last
        await asyncio.sleep(0.2)
    pytest.fail(f"{what}: still {last!r} after {WITHIN} s")


def _media_type(header: str) -> tuple[str, dict[str, str]]:
    """A Content-Type read as strictly as Go's ``mime.ParseMediaType``, which Prometheus 3
    uses: a parameter named twice is an error, and Prometheus 3 then refuses the scrape
    (Debian's Prometheus 2 still falls back to the text format, so this checks it here)."""
    media_type, *parameters = (part.strip() for part in header.split(";"))
    parsed: dict[str, str] = {}
    for parameter in parameters:
        name, separator, value = parameter.partition("=")
        assert separator, f"{header!r}: a parameter without a value"
        assert name.lower() not in parsed, f"{header!r}: {name} given twice"
        parsed[name.lower()] = value.strip('"')
    return media_type.lower(), parsed


async def _sign_up(environment: dict[str, str]) -> None:
    """One request that makes the worker send, so the attempt counters carry samples."""
    public = f"http://127.0.0.1:{environment['OUTBOX_HTTP_PORT']}"
    async with httpx.AsyncClient(base_url=public, timeout=10) as client:

        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await _poll("the API's /readyz", ready)
        account = {"identifier": "scrape@example.com"}
        assert 201 == (await client.post("/sign-ups", json=account)).status_code


async def test_prometheus_scrapes_the_api_and_the_worker(
    prometheus_program: str,
    environment: dict[str, str],
    targets: dict[str, str],
    prometheus: httpx.AsyncClient,
) -> None:
    await _sign_up(environment)

    async def both_up() -> dict[str, str] | None:
        answer = (await prometheus.get("/api/v1/targets")).json()
        health = {
            t["labels"]["job"]: (t["health"], t["lastError"])
            for t in answer["data"]["activeTargets"]
        }
        states = {job: state for job, (state, _) in health.items()}
        return health if {"outbox-api": "up", "outbox-worker": "up"} == states else None

    await _poll("both targets up", both_up)

    async def published() -> list[Any]:
        query = {"query": 'outbox_attempts_total{outcome="published"}'}
        result: list[Any] = (await prometheus.get("/api/v1/query", params=query)).json()["data"][
            "result"
        ]
        return result

    # Prometheus parsed the samples themselves: the worker's send is in its database.
    (series,) = await _poll("the worker's published attempt in Prometheus", published)
    assert "outbox-worker" == series["metric"]["job"]


async def test_promtool_accepts_both_metrics_outputs(
    promtool: str, environment: dict[str, str], targets: dict[str, str]
) -> None:
    await _sign_up(environment)
    for job, address in targets.items():
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as client:

            async def metrics(client: httpx.AsyncClient = client) -> httpx.Response | None:
                response = await client.get("/metrics")
                return response if response.status_code == 200 else None

            response = await _poll(f"{job} /metrics", metrics)
        media_type, parameters = _media_type(response.headers["content-type"])
        assert ("text/plain", "utf-8") == (media_type, parameters.get("charset")), job
        assert parameters.get("version") in {"0.0.4", "1.0.0"}, job
        check = await asyncio.to_thread(
            subprocess.run,
            [promtool, "check", "metrics"],
            input=response.content,
            capture_output=True,
            check=False,
        )
        assert (0, b"") == (check.returncode, check.stdout + check.stderr), json.dumps(
            {"job": job, "content_type": response.headers.get("content-type")}
        )
