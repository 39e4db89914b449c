"""``run_inbox``: a service's consumer of the relay's stream, exactly once in effect.

A service that reads tenant events from NATS JetStream calls ``run_inbox`` with its handler
and its own database (migrated with the ``inbox`` schema, its login a member of
``inbox_consumer``). Each event's handler runs in that database's transaction together with
the event's receipt; the message is acknowledged after the commit (docs/consumers.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

from outbox.adapters.nats.inbox_source import JetStreamInboxSource
from outbox.adapters.postgres.inbox_store import PostgresInboxStore
from outbox.adapters.postgres.pool import open_pool
from outbox.application.events.inbox_ports import InboxHandle
from outbox.application.events.receive_inbox_events import (
    DEFAULT_BACKOFF,
    InboxResult,
    ReceiveInboxEvents,
)
from outbox.application.ports import Telemetry
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.entrypoints.bootstrap.database import check_job_role
from outbox.entrypoints.bootstrap.parts import build_process_parts, jittered
from outbox.entrypoints.bootstrap.relay import RelayNotConfigured, nats_options
from outbox.entrypoints.settings.tree import Settings
from outbox.entrypoints.worker.loop import add_counts

INBOX_ROLE = "inbox_consumer"
CONSUMER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


@contextlib.asynccontextmanager
async def inbox_store(
    database_url: str, *, role: str | None = INBOX_ROLE, strict: bool = False
) -> AsyncIterator[PostgresInboxStore]:
    """The inbox tables of the service database at ``database_url``, acting as ``role``.

    Its role is checked like every process's (``strict`` outside development): a login that
    may do more than an inbox's job is refused, or warned about.
    """
    pool = await open_pool(database_url, min_size=1, max_size=4, role=role)
    try:
        await check_job_role(pool, process="the inbox", job=INBOX_ROLE, strict=strict)
        yield PostgresInboxStore(pool)
    finally:
        await pool.close()


async def run_inbox(
    settings: Settings,
    *,
    handler: InboxHandle,
    consumer: str,
    database_url: str,
    subject: str | None = None,
    role: str | None = INBOX_ROLE,
    batch_size: int = 50,
    max_attempts: int = 5,
    backoff: Sequence[timedelta] = DEFAULT_BACKOFF,
    ack_wait: timedelta = timedelta(seconds=30),
    drain: bool = False,
    stop: asyncio.Event | None = None,
    telemetry: Telemetry | None = None,
) -> InboxResult:
    """Read the relay's stream as durable consumer ``consumer`` until ``stop`` is set (or,
    with ``drain``, until nothing is pending or awaiting an ack); return the totals.

    ``subject`` narrows what is read (default: every event, ``<prefix>.>``; for one
    organization ``<prefix>.<organization>.>``, for one type ``<prefix>.*.sales.order_placed``).
    The NATS connection and stream are the relay's settings (``OUTBOX_NATS_*``). Raises
    RelayNotConfigured without ``OUTBOX_NATS_URL``, ValueError for a bad consumer name.
    """
    if not CONSUMER_NAME.match(consumer):
        raise ValueError("consumer: 1 to 100 letters, digits, - and _ (a durable's name)")
    nats = settings.nats
    if nats is None:
        raise RelayNotConfigured("OUTBOX_NATS_URL is unset: there is no stream to read")
    events = telemetry or build_process_parts(settings, seal_keys=False).telemetry
    source = JetStreamInboxSource(
        options=nats_options(nats, name=f"outbox-inbox-{consumer}"),
        telemetry=events,
        stream=nats.stream,
        durable=consumer,
        subject=subject or f"{nats.subject_prefix}.>",
        ack_wait=ack_wait,
    )
    total = InboxResult()
    async with inbox_store(database_url, role=role, strict=not settings.is_development) as store:
        receive = ReceiveInboxEvents(
            store=store,
            consumer=consumer,
            handle=handler,
            telemetry=events,
            policy=jittered(RetryPolicy(schedule=backoff, max_attempts=max_attempts)),
        )
        await source.open()
        events.event("inbox.started", consumer=consumer, stream=nats.stream)
        try:
            while stop is None or not stop.is_set():
                deliveries = await source.fetch(batch_size, 0.5 if drain else 2.0)
                batch = await receive(deliveries)
                total = add_counts(total, batch)
                if drain and not deliveries and await source.settled():
                    return total
        finally:
            await source.close()
    return total
