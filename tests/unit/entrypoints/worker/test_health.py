"""The worker's readiness: each check, in order, names itself and what to do."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from application.ports import ReadinessReport
from entrypoints.worker.health import WorkerReadiness
from tests.fakes.identity import StaticReadiness


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The worker's event loop, running on its own thread as the listener sees it."""
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join(timeout=5)
    running.close()


def _readiness(
    loop: asyncio.AbstractEventLoop,
    report: ReadinessReport | None = None,
    *,
    listening: bool = True,
    suspended: frozenset[str] = frozenset(),
) -> WorkerReadiness:
    return WorkerReadiness(
        probe=StaticReadiness(report or ReadinessReport(database_reachable=True)),
        listening=lambda: listening,
        providers=lambda: frozenset({"smtp", "brevo"}),
        suspended=lambda: suspended,
        loop=loop,
    )


def test_ready_when_every_check_passes(loop: asyncio.AbstractEventLoop) -> None:
    assert (200, {"status": "ready"}) == _readiness(loop).readyz()


def test_a_missing_role_is_named(loop: asyncio.AbstractEventLoop) -> None:
    report = ReadinessReport(database_reachable=True, missing_role="outbox_worker")
    status, body = _readiness(loop, report).readyz()

    assert 503 == status
    assert {"status": "role_missing", "missingRole": "outbox_worker"}.items() <= body.items()


def test_a_down_listen_connection_makes_the_worker_unready(
    loop: asyncio.AbstractEventLoop,
) -> None:
    status, body = _readiness(loop, listening=False).readyz()

    assert (503, "listener_down") == (status, body["status"])


def test_unready_only_when_every_provider_in_use_is_suspended(
    loop: asyncio.AbstractEventLoop,
) -> None:
    assert 200 == _readiness(loop, suspended=frozenset({"smtp"})).readyz()[0]
    status, body = _readiness(loop, suspended=frozenset({"smtp", "brevo"})).readyz()
    assert (503, "providers_suspended") == (status, body["status"])


def test_the_database_check_comes_first(loop: asyncio.AbstractEventLoop) -> None:
    report = ReadinessReport(database_reachable=False, error_code="57P01")
    status, body = _readiness(loop, report, listening=False).readyz()

    assert (503, "database_unreachable") == (status, body["status"])
