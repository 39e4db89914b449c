"""Fixtures of the fault harness: a database with the audit trigger, the proxy in front of it,
the ledger provider, a producer and a factory of worker processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.reliability import lease_audit
from tests.reliability.fault_proxy import FaultProxy
from tests.reliability.ledger_provider import LedgerProvider
from tests.reliability.producer import Producer
from tests.reliability.scenario import Scenario, worker_env
from tests.reliability.workers import Workers


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
