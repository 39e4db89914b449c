"""Our worker as the benchmark runs it: the real use case and adapters, and a no-op provider."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from uuid import UUID

import attrs

from bench.harness import Setting
from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.application.delivery.batch import BatchTally
from outbox.application.delivery.dispatch_due_messages import DispatchDueMessages
from outbox.application.delivery.ports import Delivery
from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.worker import WorkerServices, worker_services
from outbox.entrypoints.observability import configure_logging
from outbox.entrypoints.settings.tree import Settings, load_settings
from outbox.entrypoints.worker.loop import WorkerLoop


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


NO_RESERVED_SLOT = "no-reserved-slot"  # bench.worker_process serve: run without the slot


@attrs.frozen(kw_only=True)
class WorkerConfig:
    """The worker settings a figure is measured with."""

    batch_size: int = 100
    concurrency: int = 32
    lanes: int = 2  # batches in flight: the product default, OUTBOX_WORKER_PARALLEL_BATCHES
    lease: timedelta = timedelta(seconds=60)
    poll_interval: timedelta = timedelta(seconds=1)
    # The slot that claims high priority only, beside the lanes (``outboxctl worker`` has it).
    reserved_slot: bool = True

    def process_flags(self) -> list[str]:
        """The flags ``bench.worker_process serve`` takes after LANES for these settings."""
        return [] if self.reserved_slot else [NO_RESERVED_SLOT]

    def settings(self) -> dict[str, Setting]:
        """The settings, for the report."""
        return {
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "lanes": self.lanes,
            "reserved_slot": self.reserved_slot,
            "lease_seconds": self.lease.total_seconds(),
            "composition": "bootstrap.worker.worker_services, role outbox_worker",
            "telemetry": "structlog JSON (info) to /dev/null + Prometheus registry",
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
    lanes: int
    # What ``outboxctl worker`` composes them from, to run its security loop as it does.
    services: WorkerServices
    settings: Settings

    async def drain(self) -> BatchTally:
        """Run the real worker loop in drain mode: until nothing is due."""
        loop = WorkerLoop(
            totals=BatchTally(),
            dispatch=self.dispatch,
            wait_for_work=self.store.wait_for_work,
            telemetry=self.dispatch.telemetry,
            poll_interval=timedelta(seconds=1),
            drain=True,
            parallel_batches=self.lanes,
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
    """The worker exactly as ``outboxctl worker`` composes it, with the no-op provider."""
    quiet_logging()
    settings = load_settings(
        {
            "OUTBOX_DATABASE_URL": conninfo,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",  # the privileges production gives it
            "OUTBOX_SEAL_KEYS": keyring,
            "OUTBOX_WORKER_BATCH_SIZE": str(config.batch_size),
            "OUTBOX_WORKER_CONCURRENCY": str(config.concurrency),
            "OUTBOX_WORKER_PARALLEL_BATCHES": str(config.lanes),
            "OUTBOX_WORKER_LEASE_SECONDS": str(config.lease.total_seconds()),
            "OUTBOX_DATA_DIR": tempfile.gettempdir(),
        }
    )
    provider = NoopProvider(received=received)
    async with worker_services(settings, providers=dict.fromkeys(Channel, provider)) as services:
        if not isinstance(services.store, PostgresDispatchStore):
            raise TypeError("the worker is not running on PostgreSQL")
        yield Worker(
            dispatch=services.dispatch,
            store=services.store,
            provider=provider,
            lanes=settings.worker.security.parallel_batches,
            services=services,
            settings=settings,
        )


_devnull = None


def quiet_logging() -> None:
    """Production logging (JSON lines, info level), written to /dev/null instead of stderr."""
    global _devnull  # noqa: PLW0603 - one sink per process, opened on first use
    if _devnull is None:
        _devnull = open(os.devnull, "w")  # noqa: SIM115, PTH123 - lives as long as the process
        configure_logging("json", "info", stream=_devnull)
