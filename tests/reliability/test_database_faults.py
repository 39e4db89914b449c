"""Scenario 4: the database goes away under running workers, in every way we can make it.

A private embedded PostgreSQL (never the machine's server) is restarted cleanly and
crashed (immediate shutdown, crash recovery), the workers' backends are killed with
``pg_terminate_backend``, and the proxy between workers and database resets, freezes and
black-holes their connections, while a producer keeps committing. The same worker
processes must come back every time without being restarted, and no acknowledged enqueue
may be lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.reliability import lease_audit
from tests.reliability.fault_proxy import FaultProxy
from tests.reliability.ledger_provider import LedgerProvider
from tests.reliability.private_postgres import PrivatePostgres
from tests.reliability.producer import APPLICATION_NAME, MIXED, Producer
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario, worker_env
from tests.reliability.workers import Workers

pytestmark = pytest.mark.integration

TERMINATE = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND backend_type = 'client backend' AND application_name <> %s
"""
PUBLISHED = "SELECT count(*) FROM outbox.messages WHERE state = 'published'"
LEASED = "SELECT count(*) FROM outbox.messages WHERE state = 'leased'"
FREEZE = 1.5  # seconds a stalled or black-holed network stays broken


@pytest.fixture
async def private(
    ledger: LedgerProvider, tmp_path: Path
) -> AsyncIterator[tuple[Scenario, PrivatePostgres]]:
    """A scenario whose database lives on a private server the test may restart."""
    server = PrivatePostgres()
    try:
        url = await server.create()
        lease_audit.install(url)
        proxy = FaultProxy.for_url(url)
        proxy.start()
        workers = Workers(
            directory=tmp_path,
            env=worker_env(proxy.url(url), tmp_path / "data"),
            provider_env=ledger.worker_env,
        )
        world = Scenario(
            url=url, proxy=proxy, ledger=ledger, producer=Producer(url, ledger), workers=workers
        )
        try:
            yield world, server
        finally:
            proxy.resume()
            await workers.stop_all(within=15)
            proxy.stop()
    finally:
        server.stop()


async def _produce(producer: Producer, stop: asyncio.Event) -> None:
    """Commit ten messages every tenth of a second until told to stop; failures are noted."""
    kinds = itertools.cycle(MIXED)
    while not stop.is_set():
        batch = [producer.build(next(kinds)) for _ in range(10)]
        try:
            await producer.commit(batch)
        except Exception:  # noqa: BLE001 - the outage is the point; the batch is "unknown"
            await asyncio.sleep(0.2)
        else:
            await asyncio.sleep(0.1)


async def test_workers_ride_out_restarts_crashes_killed_backends_and_a_broken_network(
    private: tuple[Scenario, PrivatePostgres],
) -> None:
    scenario, server = private
    await scenario.workers.start_many(
        2, "--batch-size", "20", "--concurrency", "10", OUTBOX_WORKER_LEASE_SECONDS="2"
    )
    first = list(scenario.workers.started)
    stop = asyncio.Event()
    producing = asyncio.create_task(_produce(scenario.producer, stop))

    async def restart(*, crash: bool) -> None:
        await asyncio.to_thread(server.restart, crash=crash)

    async def terminate() -> None:
        scenario.scalar(TERMINATE, APPLICATION_NAME)

    async def reset() -> None:
        scenario.proxy.reset()

    async def freeze(start: Callable[[], None]) -> None:
        start()
        await asyncio.sleep(FREEZE)
        scenario.proxy.resume()

    faults: list[tuple[str, Callable[[], Awaitable[None]]]] = []
    faults += [("restart", lambda: restart(crash=False))] * (PROFILE.database_restarts // 2)
    faults += [("crash", lambda: restart(crash=True))] * (PROFILE.database_restarts - len(faults))
    faults += [("terminate", terminate)] * PROFILE.backend_terminations
    proxy_faults = [
        ("reset", reset),
        ("stall", lambda: freeze(scenario.proxy.stall)),
        ("drop", lambda: freeze(scenario.proxy.drop)),
    ]
    faults += list(itertools.islice(itertools.cycle(proxy_faults), PROFILE.proxy_faults))
    done: dict[str, int] = {}
    in_flight = 0
    try:
        for name, fault in faults:
            published = scenario.scalar(PUBLISHED)
            # Recovered: something new was delivered since the last fault.
            await scenario.until(
                lambda published=published: scenario.scalar(PUBLISHED) > published,
                within=60,
                what=f"deliveries before {name}",
            )
            before = scenario.scalar(LEASED)
            await fault()
            # In flight at the fault: leased just before it, or still leased (unrecorded) just
            # after it, whichever is more; only these can have reached the provider unrecorded.
            in_flight += max(before, scenario.scalar(LEASED))
            done[name] = done.get(name, 0) + 1
            await asyncio.sleep(PROFILE.fault_seconds / len(faults))
        published = scenario.scalar(PUBLISHED)
        await scenario.until(
            lambda: scenario.scalar(PUBLISHED) > published, within=60, what="recovery"
        )
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await producing
    await scenario.settle()

    alive = [worker.alive for worker in first]
    outages = scenario.workers.count_events("worker.database_unavailable")
    recoveries = scenario.workers.count_events("worker.database_recovered")
    verdict = await scenario.finish(
        "4 database restarts, crashes, killed backends, network faults",
        faults=done,
        unacknowledged_enqueues=len(scenario.producer.unknown),
        enqueue_errors=dict(scenario.producer.errors),
        in_flight_at_faults=in_flight,
        outages_seen=outages,
        recoveries_seen=recoveries,
    )

    assert [True, True] == alive  # the same two processes throughout
    assert first == scenario.workers.started
    assert outages > 0
    assert recoveries > 0
    assert verdict.duplicated <= in_flight
    assert len(scenario.producer.acknowledged) == verdict.enqueued > 0
