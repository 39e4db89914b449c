"""The worker's readiness: each check, in order, names itself and what to do."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from outbox.application.ports import ReadinessReport
from outbox.entrypoints.worker.health import WorkerReadiness
from tests.fakes.identity import StaticReadiness


async def _readyz(
    report: ReadinessReport | None = None,
    *,
    listening: bool = True,
    suspended: frozenset[str] = frozenset(),
) -> tuple[int, Mapping[str, object]]:
    """Ask as the listener does: from another thread, the check running on this loop."""
    readiness = WorkerReadiness(
        probe=StaticReadiness(report or ReadinessReport(database_reachable=True)),
        listening={"security": lambda: True, "events": lambda: listening},
        providers=lambda: frozenset({"smtp", "brevo"}),
        suspended=lambda: suspended,
        loop=asyncio.get_running_loop(),
    )
    return await asyncio.to_thread(readiness.readyz)


async def test_ready_when_every_check_passes_and_the_answer_names_the_lanes() -> None:
    assert (200, {"status": "ready", "lanes": ["security", "events"]}) == await _readyz()


async def test_a_missing_role_is_named() -> None:
    report = ReadinessReport(database_reachable=True, missing_role="outbox_worker")
    status, body = await _readyz(report)

    assert 503 == status
    assert {"status": "role_missing", "missingRole": "outbox_worker"}.items() <= body.items()


async def test_a_down_listen_connection_of_any_lane_makes_the_worker_unready() -> None:
    status, body = await _readyz(listening=False)

    assert (503, "listener_down") == (status, body["status"])
    assert "the LISTEN connection of the events lane is reconnecting" == body["hint"]


async def test_unready_only_when_every_provider_in_use_is_suspended() -> None:
    assert 200 == (await _readyz(suspended=frozenset({"smtp"})))[0]
    status, body = await _readyz(suspended=frozenset({"smtp", "brevo"}))
    assert (503, "providers_suspended") == (status, body["status"])


async def test_the_database_check_comes_first() -> None:
    report = ReadinessReport(database_reachable=False, error_code="57P01")
    status, body = await _readyz(report, listening=False)

    assert (503, "database_unreachable") == (status, body["status"])
