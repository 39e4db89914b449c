"""Fixtures of the fault harness: a database with the audit trigger, the proxy in front of it,
the ledger provider, a producer and a factory of worker processes; for the tenant events,
the recording target, an events producer and events workers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.reliability import lease_audit
from tests.reliability.event_ledger import EventLedger
from tests.reliability.event_producer import EventProducer
from tests.reliability.event_scenario import EVENT_WORKER, EventScenario, event_worker_env
from tests.reliability.fault_proxy import FaultProxy
from tests.reliability.ledger_provider import LedgerProvider
from tests.reliability.producer import Producer
from tests.reliability.profile import MODE
from tests.reliability.scenario import Scenario, worker_env
from tests.reliability.workers import Workers

# Scenario 11 (the NATS relay through broker faults) takes about a minute even short: it runs
# under ``python -m tests.reliability`` only, never in the default test run.
collect_ignore = [] if MODE == "long" else ["test_relay_faults.py"]


@pytest.fixture
def ledger() -> Iterator[LedgerProvider]:
    """The recording provider, serving until the test ends."""
    provider = LedgerProvider()
    provider.start()
    yield provider
    provider.stop()


@pytest.fixture
def audited_url(database_url: str) -> str:
    """The test database with the lease audit trigger installed."""
    lease_audit.install(database_url)
    return database_url


@pytest.fixture
def proxy(audited_url: str) -> Iterator[FaultProxy]:
    """A fault proxy in front of the test database's server."""
    fault_proxy = FaultProxy.for_url(audited_url)
    fault_proxy.start()
    yield fault_proxy
    fault_proxy.stop()


@pytest.fixture
async def scenario(
    audited_url: str, proxy: FaultProxy, ledger: LedgerProvider, tmp_path: Path
) -> AsyncIterator[Scenario]:
    """Workers that reach the database through the proxy and deliver to the ledger."""
    workers = Workers(
        directory=tmp_path,
        env=worker_env(proxy.url(audited_url), tmp_path / "data"),
        provider_env=ledger.worker_env,
    )
    world = Scenario(
        url=audited_url,
        proxy=proxy,
        ledger=ledger,
        producer=Producer(audited_url, ledger),
        workers=workers,
    )
    try:
        yield world
    finally:
        proxy.resume()
        await workers.stop_all(within=15)


@pytest.fixture
def event_ledger() -> Iterator[EventLedger]:
    """The recording publication target, serving until the test ends."""
    ledger = EventLedger()
    ledger.start()
    yield ledger
    ledger.stop()


@pytest.fixture
async def event_scenario(
    audited_url: str, event_ledger: EventLedger, tmp_path: Path
) -> AsyncIterator[EventScenario]:
    """Events workers on the test database (directly) that publish to the recording target."""
    workers = Workers(
        directory=tmp_path,
        env=worker_env(audited_url, tmp_path / "data"),
        provider_env=event_worker_env(event_ledger),
        command=EVENT_WORKER,
    )
    producer = EventProducer(audited_url)
    producer.setup()
    world = EventScenario(url=audited_url, ledger=event_ledger, producer=producer, workers=workers)
    try:
        yield world
    finally:
        await workers.stop_all(within=15)
