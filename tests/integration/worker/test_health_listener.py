"""The worker's listener: /metrics in the Prometheus client's own format, /healthz, /readyz.

Run as the real ``outboxctl worker`` process, on loopback (OUTBOX_WORKER_METRICS_HOST).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import httpx
import pytest
from prometheus_client.exposition import choose_encoder

from outbox.entrypoints.settings.lanes import LANES
from tests.integration.providers.network import free_port
from tests.outboxctl import outboxctl_environment

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))


def _worker(environment: dict[str, str]) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [OUTBOXCTL, "worker"],
        env={
            **outboxctl_environment({}),
            **environment,
            "OUTBOX_WORKER_METRICS_HOST": "127.0.0.1",
            "OUTBOX_WORKER_METRICS_PORT": str(port),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/healthz")
                break
            except httpx.TransportError:
                assert process.poll() is None, "the worker exited"
                assert time.monotonic() < deadline, "the worker's listener never answered"
                time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        assert 0 == process.wait(timeout=30)


@pytest.fixture
def worker(worker_env: dict[str, str]) -> Iterator[str]:
    yield from _worker(worker_env)


def _ready_within(url: str, seconds: float = 20) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while (answer := httpx.get(url)).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def test_a_running_worker_is_healthy_and_ready_and_names_its_lanes(worker: str) -> None:
    assert {"status": "ok", "lanes": list(LANES)} == httpx.get(f"{worker}/healthz").json()
    ready = _ready_within(f"{worker}/readyz")

    assert 200 == ready.status_code
    assert {"status": "ready", "lanes": list(LANES)} == ready.json()


def test_metrics_carry_the_prometheus_clients_own_content_type(worker: str) -> None:
    answer = httpx.get(f"{worker}/metrics")

    assert 200 == answer.status_code
    # What the client library itself answers that Accept header with, byte for byte.
    assert choose_encoder(answer.request.headers["accept"])[1] == answer.headers["content-type"]
    parsed = Message()
    parsed["content-type"] = answer.headers["content-type"]
    assert "text/plain" == parsed.get_content_type()
    assert ["utf-8"] == [v for k, v in parsed.get_params()[1:] if k == "charset"]
    assert 1 == len(answer.headers.get_list("content-type"))
    assert b"outbox_" in answer.content


def test_readyz_names_pending_migrations_and_says_what_to_do(
    worker_env: dict[str, str], empty_database_url: str
) -> None:
    """A long-running worker started before its migration Job: alive, not ready, retrying."""
    environment = {**worker_env, "OUTBOX_DATABASE_URL": empty_database_url}
    environment.pop("OUTBOX_WORKER_DB_ROLE")  # the empty database's server has the roles,
    # but the unmigrated database has no schema to grant: act as the migrator's login
    for base in _worker(environment):
        answer = httpx.get(f"{base}/readyz")

        assert 503 == answer.status_code
        assert {"status": "migrations_pending", "hint": "run `outboxctl db migrate`"}.items() <= (
            answer.json().items()
        )
        assert "0001_roles_and_schemas" == answer.json()["pendingMigrations"][0]
