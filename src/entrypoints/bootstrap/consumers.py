"""``outboxctl consume``: the consumers a process runs, wired from settings.

A consumer runs with its module's database role (docs/sql-api.md, "Consumers"): the identity
module's consumers run as the API's role, ``identity_service`` (the embedded server's pools
``SET ROLE`` to it; a configured ``OUTBOX_DATABASE_URL`` names a login granted it, mapped to
the identity module and a member of ``events_consumer``). ``shipped_consumers`` is the
registry of the handlers this package ships; another process builds its own registry and
calls ``run_consumers`` with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

import attrs
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.consumer_store import (
    PostgresConsumerAdmin,
    PostgresConsumerLag,
    PostgresConsumerStore,
)
from outbox.adapters.postgres.identity_transactions import PostgresUnitOfWork
from outbox.adapters.postgres.notification_recipients import PostgresNotificationScope
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.work_listener import CONSUMERS_CHANNEL, WorkListener
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.events.consumer_handlers import ConsumerHandler, ConsumerRegistry
from outbox.application.events.consumer_ports import ConsumerAdmin, DeliveredEvent
from outbox.application.events.observe_consumer_lag import ObserveConsumerLag
from outbox.application.events.process_deliveries import ProcessDeliveries, ProcessingResult
from outbox.application.identity.account_notification_consumer import (
    CONSUMER as ACCOUNT_NOTIFICATIONS_CONSUMER,
)
from outbox.application.identity.account_notification_consumer import (
    EVENT_TYPES as ACCOUNT_NOTIFICATION_EVENT_TYPES,
)
from outbox.application.identity.account_notification_consumer import (
    VERSIONS as ACCOUNT_NOTIFICATION_VERSIONS,
)
from outbox.application.identity.account_notification_consumer import SendAccountNotifications
from outbox.application.identity.security_notice_consumer import CONSUMER as NOTICES_CONSUMER
from outbox.application.identity.security_notice_consumer import EVENT_TYPES as NOTICE_EVENT_TYPES
from outbox.application.identity.security_notice_consumer import VERSIONS as NOTICE_VERSIONS
from outbox.application.identity.security_notice_consumer import SendSecurityNotices
from outbox.application.identity.security_notices import SecurityNotices
from outbox.application.notifications.request_notification import RequestNotification
from outbox.application.ports import Clock, Ids, Telemetry
from outbox.domain.notifications.catalogue import CATALOGUE
from outbox.entrypoints.bootstrap.database import (
    IDENTITY_ROLE,
    DatabaseAccess,
    api_role,
    check_job_role,
    database_pool,
    resolve_consumers_database_url,
)
from outbox.entrypoints.bootstrap.parts import ProcessParts, build_process_parts, retry_policy
from outbox.entrypoints.bootstrap.worker import worker_owner
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import WorkerLoop, add_counts
from outbox.entrypoints.worker.schedule import Every

DEFAULT_BATCH_SIZE = 50
DEFAULT_CONCURRENCY = 4


def shipped_consumers(*, clock: Clock | None = None, ids: Ids | None = None) -> ConsumerRegistry:
    """The consumers this package ships, with their handlers: ``identity.security_notices``
    (docs/identity.md) and ``identity.account_notifications`` (docs/notifications.md), whose
    messages are written through the delivery's own connection."""
    registry = ConsumerRegistry()
    ids = ids or Uuid7Ids()
    send = SendSecurityNotices(notices=SecurityNotices(ids=ids), clock=clock or SystemClock())
    welcome = SendAccountNotifications(request=RequestNotification(catalogue=CATALOGUE, ids=ids))

    async def security_notices(event: DeliveredEvent, conn: AsyncConnection) -> None:
        await send(PostgresUnitOfWork(conn), event)

    registry.add(
        ConsumerHandler(
            consumer=NOTICES_CONSUMER,
            event_types=NOTICE_EVENT_TYPES,
            min_version=NOTICE_VERSIONS[0],
            max_version=NOTICE_VERSIONS[1],
            handle=security_notices,
        )
    )

    async def account_notifications(event: DeliveredEvent, conn: AsyncConnection) -> None:
        await welcome(PostgresNotificationScope(conn), event)

    registry.add(
        ConsumerHandler(
            consumer=ACCOUNT_NOTIFICATIONS_CONSUMER,
            event_types=ACCOUNT_NOTIFICATION_EVENT_TYPES,
            min_version=ACCOUNT_NOTIFICATION_VERSIONS[0],
            max_version=ACCOUNT_NOTIFICATION_VERSIONS[1],
            handle=account_notifications,
        )
    )
    return registry


class UnknownConsumer(ValueError):
    """A consumer was asked for that no registered handler serves."""


def choose(registry: ConsumerRegistry, asked: Sequence[str]) -> tuple[str, ...]:
    """The consumers to run: ``asked`` (each must have a handler), or every registered one."""
    unknown = sorted(set(asked) - set(registry.consumers))
    if unknown:
        known = ", ".join(registry.consumers) or "none"
        raise UnknownConsumer(f"no handler runs {', '.join(unknown)} (registered: {known})")
    return tuple(dict.fromkeys(asked)) or registry.consumers


def consumer_role(settings: Settings) -> str:
    """The role the shipped consumers run as: the identity module's, the API's role
    (``SET ROLE identity_service`` when no API role is configured: a configured login is a
    member of it, and the claim takes the module from the current role)."""
    return api_role(settings) or IDENTITY_ROLE


@contextlib.asynccontextmanager
async def consumer_pool(
    settings: Settings, *, max_size: int, url: str | None = None, role: str | None = None
) -> AsyncIterator[AsyncConnectionPool[AsyncConnection]]:
    """A pool for consumers on ``url`` (default: the API's). Its sessions ``SET ROLE`` to
    ``role``, else to the API's configured role, else to none: the store acts as
    ``consumer_role`` per transaction (``SET LOCAL ROLE``), so that several pools sharing a
    transaction-mode PgBouncer's server connection never leave their role on one another's
    sessions. Closed on exit."""
    database_url = (
        url
        if url is not None
        else await asyncio.to_thread(resolve_consumers_database_url, settings)
    )
    pool = await open_pool(
        database_url,
        min_size=1,
        max_size=max_size,
        prepared_statements=settings.database.prepared_statements,
        role=role if role is not None else api_role(settings),
        connect_timeout=settings.database.connect_timeout.total_seconds(),
    )
    try:
        await check_job_role(
            pool,
            process="the consumers",
            job=role if role is not None else consumer_role(settings),
            strict=not settings.is_development,
        )
        yield pool
    finally:
        await pool.close()


def consumer_runner(
    settings: Settings,
    parts: ProcessParts,
    *,
    pool: AsyncConnectionPool[AsyncConnection],
    registry: ConsumerRegistry,
    owner: str,
    lease: timedelta | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    concurrency: int = DEFAULT_CONCURRENCY,
    act_as: str | None = None,
) -> ProcessDeliveries:
    """The runner use case over ``pool``; retries follow OUTBOX_RETRY_SCHEDULE_SECONDS."""
    worker = settings.worker
    return ProcessDeliveries(
        store=PostgresConsumerStore(pool, act_as=act_as or consumer_role(settings)),
        registry=registry,
        clock=parts.clock,
        telemetry=parts.telemetry,
        owner=owner,
        retry_policy=retry_policy(settings),
        batch_size=batch_size,
        lease=lease or worker.lease,
        concurrency=concurrency,
    )


@attrs.define(kw_only=True)
class ConsumerTurn:
    """One batch of each consumer in turn: the dispatch of the worker's loop (``WorkerLoop``)
    for the consumers, in the worker's lane and in ``outboxctl consume`` alike; ``totals``
    keeps each consumer's sums.

    A consumer refused (not granted, not registered yet) is said once and skipped, so the
    worker's other lanes keep running and a GRANT needs no restart; with ``strict`` (a
    process that runs only these consumers) the refusal is raised instead: it is
    misconfigured.
    """

    process: ProcessDeliveries
    consumers: tuple[str, ...]
    telemetry: Telemetry
    strict: bool = False
    totals: dict[str, ProcessingResult] = attrs.field(factory=dict)
    refused: set[str] = attrs.field(factory=set)  # consumers it was refused for, said once

    async def __call__(self) -> ProcessingResult:
        """One batch of each consumer; the turn's sums."""
        total = ProcessingResult()
        for consumer in self.consumers:
            try:
                batch = await self.process(consumer)
            except (PermissionDenied, InvalidRequest) as error:
                if self.strict:
                    raise
                if consumer not in self.refused:
                    self.refused.add(consumer)
                    self.telemetry.event(
                        "consumer.refused",
                        level="error",
                        consumer=consumer,
                        error_class=type(error).__name__,
                    )
                continue
            self.totals[consumer] = add_counts(self.totals.get(consumer, ProcessingResult()), batch)
            total = add_counts(total, batch)
        return total


async def run_consumers(
    settings: Settings,
    *,
    registry: ConsumerRegistry,
    consumers: Sequence[str] = (),
    drain: bool = False,
    role: str | None = None,
    url: str | None = None,
    lease: timedelta | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    concurrency: int = DEFAULT_CONCURRENCY,
    handle_signals: bool = True,
    telemetry: Telemetry | None = None,
) -> dict[str, ProcessingResult]:
    """Run ``consumers`` (default: every one ``registry`` serves) until SIGTERM/SIGINT, or,
    with ``drain``, until none has a claimable delivery; each one's totals.

    The pool acts as ``role`` (default: ``consumer_role``) on ``url`` (default: the API's
    database URL). Retries follow the worker's schedule (OUTBOX_RETRY_SCHEDULE_SECONDS).
    While nothing is due it waits for the fan-out's ``consumers_work`` notification, or
    ``poll_interval``. Log lines and metrics go to ``telemetry`` (default: this call's own).
    """
    chosen = choose(registry, consumers)
    # A consumer seals nothing.
    parts = build_process_parts(settings, seal_keys=False, telemetry=telemetry)
    database_url = (
        url
        if url is not None
        else await asyncio.to_thread(resolve_consumers_database_url, settings)
    )
    listener = WorkListener(database_url, CONSUMERS_CHANNEL)
    async with (
        consumer_pool(settings, max_size=concurrency + 1, url=database_url, role=role) as pool,
        _closing(listener),
    ):
        turn = ConsumerTurn(
            process=consumer_runner(
                settings,
                parts,
                pool=pool,
                registry=registry,
                owner=worker_owner(),
                lease=lease,
                batch_size=batch_size,
                concurrency=concurrency,
                act_as=role,
            ),
            consumers=chosen,
            telemetry=parts.telemetry,
            strict=True,
            totals={consumer: ProcessingResult() for consumer in chosen},
        )
        loop = WorkerLoop(
            dispatch=turn,
            wait_for_work=listener.wait,
            telemetry=parts.telemetry,
            poll_interval=settings.worker.poll_interval,
            drain=drain,
            totals=ProcessingResult(),
        )
        if not drain:
            await listener.wait(0)  # listen before the first claim: no hint falls between
        running = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        for signum in signals:
            running.add_signal_handler(signum, loop.stop)
        parts.telemetry.event("consumers.started", consumers=",".join(chosen), drain=drain)
        try:
            await loop.run()
        finally:
            for signum in signals:
                running.remove_signal_handler(signum)
        parts.telemetry.event("consumers.stopped", consumers=",".join(chosen))
        return turn.totals


@contextlib.asynccontextmanager
async def _closing(listener: WorkListener) -> AsyncIterator[WorkListener]:
    try:
        yield listener
    finally:
        await listener.close()


@contextlib.asynccontextmanager
async def consumer_admin(settings: Settings) -> AsyncIterator[ConsumerAdmin]:
    """The database operator's consumer controls, on outboxctl's own login (no SET ROLE)."""
    async with database_pool(settings, DatabaseAccess.OPERATOR) as pool:
        yield PostgresConsumerAdmin(pool)


# How often the worker reads the consumers' lag for its /metrics.
LAG_INTERVAL = timedelta(seconds=15)


@contextlib.asynccontextmanager
async def consumer_lag_gauges(
    settings: Settings, telemetry: Telemetry, *, interval: timedelta = LAG_INTERVAL
) -> AsyncIterator[ObserveConsumerLag]:
    """Refresh the consumers' lag gauges every ``interval`` on a pool of the worker's role,
    until the block ends (the worker serves them on its /metrics)."""
    async with database_pool(settings, DatabaseAccess.WORKER) as pool:
        observe = ObserveConsumerLag(source=PostgresConsumerLag(pool), telemetry=telemetry)
        every = Every(name="consumer_lag", interval=interval, job=observe, telemetry=telemetry)
        task = asyncio.create_task(every.run(), name="consumer-lag")
        try:
            yield observe
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
