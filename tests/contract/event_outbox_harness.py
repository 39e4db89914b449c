"""One face for the events outbox contract tests over the in-memory fake and PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs
import psycopg

from outbox.adapters.postgres.event_appender import PostgresDomainEventAppender
from outbox.application.events.ports import EventOutboxStore
from outbox.domain.events.domain_events import NewDomainEvent
from tests.events_sql import BILLING, SALES, UNMAPPED
from tests.fakes.event_outbox import InMemoryEventOutbox

ROLES = {"sales": SALES, "billing": BILLING, None: UNMAPPED}
EVENT_TYPES = ("sales.order_placed", "billing.invoice_sent")


@attrs.frozen(kw_only=True)
class RecordView:
    """What a test can see of one outbox record, whichever store holds it."""

    state: str
    attempts: int
    available_at: datetime


class EventHarness(Protocol):
    """The store under test, the producer side, the operator's repairs and the clock."""

    @property
    def store(self) -> EventOutboxStore: ...

    async def append(self, event: NewDomainEvent, *, module: str | None = "sales") -> UUID: ...
    async def retire(self, event_type: str) -> None: ...
    def now(self) -> datetime: ...
    async def sleep(self, seconds: float) -> None: ...
    async def record_view(self, record_id: UUID) -> RecordView: ...
    async def history(self, record_id: UUID) -> list[tuple[int, bool, str]]: ...
    async def published(self) -> list[UUID]: ...
    async def release(self, record_id: UUID) -> None: ...
    async def republish(self, record_id: UUID) -> None: ...


def new_event(
    organization_id: UUID | None = None,
    aggregate_id: str = "order-1",
    *,
    event_type: str = "sales.order_placed",
    version: int = 1,
    key: str | None = None,
    payload: dict[str, Any] | None = None,
    occurred_at: datetime | None = None,
    trace_context: str | None = None,
) -> NewDomainEvent:
    """A valid event of ``sales`` on one order (a fresh key unless given)."""
    return NewDomainEvent(
        organization_id=organization_id or uuid.UUID(int=1),
        event_type=event_type,
        contract_version=version,
        aggregate_type="order",
        aggregate_id=aggregate_id,
        idempotency_key=key or str(uuid.uuid4()),
        payload=payload if payload is not None else {"total": 1},
        occurred_at=occurred_at or datetime(2026, 1, 1, 9, 30, tzinfo=UTC),
        trace_context=trace_context,
    )


@attrs.define
class MemoryEventHarness:
    """The fake; time moves only when a test sleeps."""

    store: InMemoryEventOutbox = attrs.field(factory=InMemoryEventOutbox)

    def __attrs_post_init__(self) -> None:
        for code in EVENT_TYPES:
            self.store.register_event_type(code)

    async def append(self, event: NewDomainEvent, *, module: str | None = "sales") -> UUID:
        return await self.store.as_module(module).append(event)

    async def retire(self, event_type: str) -> None:
        self.store.retire_event_type(event_type)

    def now(self) -> datetime:
        return self.store.clock.now()

    async def sleep(self, seconds: float) -> None:
        self.store.clock.advance(timedelta(seconds=seconds))

    async def record_view(self, record_id: UUID) -> RecordView:
        record = self.store.records[record_id]
        return RecordView(
            state=record.state, attempts=record.attempts, available_at=record.available_at
        )

    async def history(self, record_id: UUID) -> list[tuple[int, bool, str]]:
        return [
            (a.attempt, a.counted, a.outcome)
            for a in self.store.attempts
            if a.record_id == record_id
        ]

    async def published(self) -> list[UUID]:
        return [p.event_id for p in self.store.publications]

    async def release(self, record_id: UUID) -> None:
        self.store.release(record_id)

    async def republish(self, record_id: UUID) -> None:
        self.store.republish(record_id)


RECORD_VIEW = "SELECT state, attempt_count, available_at FROM events.outbox_records WHERE id = %s"
HISTORY = (
    "SELECT attempt, counted, outcome FROM events.publication_attempts"
    " WHERE outbox_record_id = %s ORDER BY id"
)
PUBLISHED = "SELECT domain_event_id FROM events.domain_event_publications ORDER BY 1"
PUBLISHED_IN_ORDER = (
    "SELECT domain_event_id FROM events.domain_event_publications ORDER BY publication_sequence"
)
# The operator's repairs as 0020's functions make them, minus the audit.
RELEASE = """
WITH d AS (
    UPDATE events.dead_letters SET resolution = 'released', resolved_at = now(),
        resolved_by = 'contract-test'
    WHERE outbox_record_id = %(id)s RETURNING *
)
SELECT events.reopen_aggregate(d.organization_id, d.aggregate_type, d.aggregate_id) FROM d
"""
REPUBLISH = """
WITH d AS (SELECT * FROM events.dead_letters WHERE outbox_record_id = %(id)s),
new AS (
    INSERT INTO events.outbox_records (
        id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
        republish_of, available_at, created_at
    )
    SELECT gen_random_uuid(), d.domain_event_id, d.organization_id, d.aggregate_type,
           d.aggregate_id, d.append_sequence, d.outbox_record_id, now(), now()
    FROM d
    RETURNING id
)
UPDATE events.dead_letters SET resolution = 'republished', resolved_at = now(),
    resolved_by = 'contract-test', republished_as = (SELECT id FROM new)
WHERE outbox_record_id = %(id)s
"""
REOPEN = (
    "SELECT events.reopen_aggregate(organization_id, aggregate_type, aggregate_id)"
    " FROM events.dead_letters WHERE outbox_record_id = %(id)s"
)


@attrs.define
class PostgresEventHarness:
    """The real adapters: the store as outbox_worker, producers as their roles; time is real."""

    store: EventOutboxStore
    connect_as: Callable[..., AbstractAsyncContextManager[psycopg.AsyncConnection]]

    async def append(self, event: NewDomainEvent, *, module: str | None = "sales") -> UUID:
        async with self.connect_as(ROLES[module]) as conn, conn.transaction():
            return await PostgresDomainEventAppender(conn).append(event)

    async def retire(self, event_type: str) -> None:
        async with self.connect_as("outbox_owner") as conn:
            await conn.execute("SELECT events.retire_event_type(%s)", (event_type,))

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def record_view(self, record_id: UUID) -> RecordView:
        [(state, attempts, available_at)] = await self._rows(RECORD_VIEW, record_id)
        return RecordView(state=state, attempts=attempts, available_at=available_at)

    async def history(self, record_id: UUID) -> list[tuple[int, bool, str]]:
        return [(a, c, o) for a, c, o in await self._rows(HISTORY, record_id)]

    async def published(self) -> list[UUID]:
        return [row[0] for row in await self._rows(PUBLISHED_IN_ORDER)]

    async def release(self, record_id: UUID) -> None:
        await self._repair(RELEASE, record_id)

    async def republish(self, record_id: UUID) -> None:
        await self._repair(REPUBLISH, record_id)
        await self._repair(REOPEN, record_id)

    async def _repair(self, query: str, record_id: UUID) -> None:
        async with self.connect_as() as conn:
            await conn.execute(query.encode(), {"id": record_id})

    async def _rows(self, query: str, *params: object) -> list[tuple[Any, ...]]:
        async with self.connect_as() as conn:
            cursor = await conn.execute(query.encode(), params)
            return list(await cursor.fetchall())
