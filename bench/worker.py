"""Our worker as the benchmark runs it: the real use case and adapters, and a no-op provider."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from uuid import UUID

import attrs

from adapters.crypto.envelope import EnvelopeSealer
from adapters.crypto.keyring import parse_keyring
from adapters.postgres.dispatch_store import PostgresDispatchStore
from adapters.postgres.pool import open_pool
from adapters.postgres.work_listener import WorkListener
from adapters.system.clock import SystemClock
from adapters.templates.renderer import JinjaRenderer
from application.dispatch_due_messages import DispatchDueMessages, DispatchResult
from application.links import LinkBases
from application.ports import Delivery
from application.provider_breaker import ProviderBreaker
from bench.harness import Setting
from domain.channels import Channel
from domain.retry_policy import RetryPolicy
from entrypoints.observability import build_telemetry, configure_logging, new_registry
from entrypoints.worker.loop import WorkerLoop


@attrs.define
class NoopProvider:
    """Accepts every message at once; remembers when each arrived if asked to (latency)."""

    received: dict[UUID, float] | None = None
    count: int = 0

    @property
    def name(self) -> str:
        """The provider's name in attempts and metrics."""
        return "noop"

    async def send(self, delivery: Delivery) -> str:
        """Accept the delivery; nothing leaves the process."""
        if self.received is not None:
            self.received[delivery.message_id] = time.time()
        self.count += 1
        return ""


@attrs.frozen(kw_only=True)
class WorkerConfig:
    """The worker settings a figure is measured with."""

    batch_size: int = 100
    concurrency: int = 32
    lease: timedelta = timedelta(seconds=60)
    poll_interval: timedelta = timedelta(seconds=1)

    def settings(self) -> dict[str, Setting]:
        """The settings, for the report."""
        return {
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "lease_seconds": self.lease.total_seconds(),
            "telemetry": "structlog JSON to /dev/null + Prometheus registry",
            "renderer": "JinjaRenderer (built-in templates)",
            "sealer": "EnvelopeSealer v1",
            "provider": "no-op",
        }


@attrs.frozen(kw_only=True)
class Worker:
    """One built worker: its use case, store and provider."""

    dispatch: DispatchDueMessages
    store: PostgresDispatchStore
    provider: NoopProvider

    async def drain(self) -> DispatchResult:
        """Run the real worker loop in drain mode: until nothing is due."""
        loop = WorkerLoop(
            dispatch=self.dispatch,
            wait_for_work=self.store.wait_for_work,
            telemetry=self.dispatch.telemetry,
            poll_interval=timedelta(seconds=1),
            drain=True,
        )
        return await loop.run()

    async def take(self, count: int) -> int:
        """Dispatch batches until at least ``count`` messages were claimed; return how many."""
        claimed = 0
        while claimed < count:
            result = await self.dispatch()
            if not result.claimed:
                break
            claimed += result.claimed
        return claimed


@asynccontextmanager
async def running_worker(
    conninfo: str,
    keyring: str,
    config: WorkerConfig,
    *,
    received: dict[UUID, float] | None = None,
) -> AsyncIterator[Worker]:
    """Build the worker on ``conninfo`` as the composition root would; close it afterwards."""
    _quiet_logging()
    pool = await open_pool(conninfo, min_size=2, max_size=2)
    listener = WorkListener(conninfo)
    try:
        store = PostgresDispatchStore(pool, listener)
        renderer = JinjaRenderer()
        renderer.preload()
        provider = NoopProvider(received=received)
        dispatch = DispatchDueMessages(
            store=store,
            sealer=EnvelopeSealer(parse_keyring(keyring)),
            renderer=renderer,
            providers=dict.fromkeys(Channel, provider),
            clock=SystemClock(),
            telemetry=build_telemetry(new_registry()),
            policy=RetryPolicy(),
            breaker=ProviderBreaker(),
            links=LinkBases(),
            owner=f"bench-{os.getpid()}",
            batch_size=config.batch_size,
            concurrency=config.concurrency,
            lease=config.lease,
        )
        yield Worker(dispatch=dispatch, store=store, provider=provider)
    finally:
        await listener.close()
        await pool.close()


_devnull = None


def _quiet_logging() -> None:
    """Production logging (JSON lines, info level), written to /dev/null instead of stderr."""
    global _devnull  # noqa: PLW0603 - one sink per process, opened on first use
    if _devnull is None:
        _devnull = open(os.devnull, "w")  # noqa: SIM115, PTH123 - lives as long as the process
        configure_logging("json", "info", stream=_devnull)
