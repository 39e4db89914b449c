"""Consume tenant events with exactly-once effects, from a service's own process
(docs/consumers.md): ``run_inbox`` reads what the relay publishes to NATS JetStream into the
service's own database; ``run_consumers`` runs the service's consumers registered in the
outbox's database (a ``ConsumerRegistry`` of handlers).

    async def ship(event: InboxEvent, transaction: psycopg.AsyncConnection) -> None:
        await transaction.execute("INSERT INTO shop.shipments (order_id) VALUES (%s)",
                                  (event.aggregate_id,))

    asyncio.run(run_inbox(ship, consumer="shop-fulfilment", database_url=SHOP_DATABASE_URL))

The handler writes through ``transaction``, the service's own database transaction in which
the event's receipt is recorded; the message is acknowledged after the commit, so a
redelivery finds the receipt and has no second effect. A handler that raises is retried on
the backoff's schedule, then kept as a dead letter in the service's database.

Log lines go to the standard library's ``logging`` under the logger ``outbox`` (redacted),
so the application's own logging configuration decides where they go and at which level;
nothing is written to standard output. Metrics (``outbox_inbox_events_total``…) go to a
``Metrics`` the application passes and serves from its own ``/metrics``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta

from prometheus_client import CollectorRegistry

from outbox.application.events.consumer_handlers import ConsumerRegistry, Reject, RetryAfter
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.application.events.inbox_ports import InboxEvent, InboxHandle
from outbox.application.events.process_deliveries import ProcessingResult
from outbox.application.events.receive_inbox_events import DEFAULT_BACKOFF, InboxResult
from outbox.entrypoints.bootstrap import consumers as consumer_composition
from outbox.entrypoints.bootstrap import inbox as composition
from outbox.entrypoints.bootstrap.relay import RelayNotConfigured
from outbox.entrypoints.observability import build_telemetry, log_through_application
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings

__all__ = [
    "DEFAULT_BACKOFF",
    "ConsumerRegistry",
    "DeliveredEvent",
    "InboxEvent",
    "InboxHandle",
    "InboxResult",
    "Metrics",
    "ProcessingResult",
    "Reject",
    "RelayNotConfigured",
    "RetryAfter",
    "SettingsError",
    "run_consumers",
    "run_inbox",
]


class Metrics:
    """Where ``run_inbox`` and ``run_consumers`` calls keep their Prometheus metrics: in
    ``registry`` (default: a new one), which the application serves (docs/consumers.md).

    Several calls may share one; a registry takes one ``Metrics`` (the outbox's names are
    registered once), so an application passing its global registry makes one per process.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = CollectorRegistry() if registry is None else registry
        self._telemetry = build_telemetry(self.registry)


async def run_inbox(
    handler: InboxHandle,
    *,
    consumer: str,
    database_url: str,
    subject: str | None = None,
    environ: Mapping[str, str] | None = None,
    role: str | None = composition.INBOX_ROLE,
    batch_size: int = 50,
    max_attempts: int = 5,
    backoff: Sequence[timedelta] = DEFAULT_BACKOFF,
    ack_wait: timedelta = timedelta(seconds=30),
    drain: bool = False,
    stop: asyncio.Event | None = None,
    metrics: Metrics | None = None,
) -> InboxResult:
    """Read the stream as durable consumer ``consumer`` until ``stop`` is set (with ``drain``,
    until nothing is pending or awaiting an ack); return the totals.

    ``database_url`` is the service's database (its inbox created by ``outboxctl inbox
    install``; its login a member of ``role``). The broker is read from ``environ`` (default:
    this process's environment): ``OUTBOX_NATS_URL``, ``OUTBOX_NATS_STREAM``,
    ``OUTBOX_NATS_SUBJECT_PREFIX`` and the other ``OUTBOX_NATS_*`` settings. ``subject``
    narrows what is read (default every event; ``<prefix>.*.sales.order_placed`` for one
    type). The metrics go to ``metrics`` (default: a registry of this call's own, served by
    nobody). Raises SettingsError for a bad setting, RelayNotConfigured without
    ``OUTBOX_NATS_URL``, ValueError for a bad consumer name.
    """
    log_through_application()
    settings = load_settings(os.environ if environ is None else environ)
    return await composition.run_inbox(
        settings,
        handler=handler,
        consumer=consumer,
        database_url=database_url,
        subject=subject,
        role=role,
        batch_size=batch_size,
        max_attempts=max_attempts,
        backoff=backoff,
        ack_wait=ack_wait,
        drain=drain,
        stop=stop,
        telemetry=None if metrics is None else metrics._telemetry,
    )


async def run_consumers(
    registry: ConsumerRegistry,
    *,
    database_url: str,
    role: str | None,
    consumers: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    drain: bool = False,
    handle_signals: bool = True,
    metrics: Metrics | None = None,
) -> dict[str, ProcessingResult]:
    """Run ``registry``'s consumers (or those named in ``consumers``) on the outbox's database
    at ``database_url``, each connection acting as ``role`` (the consumer module's role; None:
    the login's own), until SIGTERM or SIGINT (with ``drain``, until none has a delivery due);
    return each one's totals. Retries follow ``OUTBOX_RETRY_SCHEDULE_SECONDS`` and the lease
    ``OUTBOX_WORKER_LEASE_SECONDS`` in ``environ`` (default: this process's environment).
    The metrics go to ``metrics`` (default: a registry of this call's own, served by nobody).
    """
    log_through_application()
    settings = load_settings(os.environ if environ is None else environ)
    return await consumer_composition.run_consumers(
        settings,
        registry=registry,
        consumers=consumers,
        drain=drain,
        role=role,
        url=database_url,
        handle_signals=handle_signals,
        telemetry=None if metrics is None else metrics._telemetry,
    )
