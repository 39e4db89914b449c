"""The worker's view of the tenant events outbox (EventOutboxStore) over the events functions."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.claim_window import ClaimWindow
from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.work_listener import WorkListener
from outbox.application.events.ports import ClaimedEvent, PublicationRecord
from outbox.domain.delivery.outcomes import DeadLetter, Published, RecordResult, Release, Retry
from outbox.domain.delivery.retention import RetentionPolicy

CLAIM = """
SELECT record_id, event_id, organization_id, event_type, contract_version, aggregate_type,
       aggregate_id, append_sequence, payload, occurred_at, appended_at, attempts,
       lease_token, lease_expires_at, trace_context
FROM events.claim_outbox_batch(
    %b::text, %b::integer, %b::double precision, %b::double precision
)
"""
RECORD = """
SELECT result
FROM events.record_publication_attempt(
    %b::uuid[], %b::uuid[], %b::integer[], %b::text[], %b::text[], %b::text[], %b::text[],
    %b::timestamptz[]
)
"""
# Binary both ways (%b, binary=True), as the security outbox's dispatch store: the arrays of
# a batch dump and UUIDs and timestamps parse without string round trips.
PURGE = "SELECT events.purge_events(%s::interval, %s::interval, %s::integer)"

# One row of the record call: outcome kind, failure class, code, retry time.
_Encoded = tuple[str, str | None, str, datetime | None]


def _encode(record: PublicationRecord) -> _Encoded:
    match record.outcome:
        case Published():
            return ("published", None, "", None)
        case Retry(available_at=at, failure_class=failure, code=code):
            return ("retry", failure.value, code, at)
        case Release(available_at=at, failure_class=failure, code=code):
            return ("release", failure.value, code, at)
        case DeadLetter(reason=reason, code=code):
            return ("dead_letter", reason.value, code, None)


def _claimed(row: tuple[Any, ...]) -> ClaimedEvent:
    (
        record_id,
        event_id,
        organization_id,
        event_type,
        contract_version,
        aggregate_type,
        aggregate_id,
        append_sequence,
        payload,
        occurred_at,
        appended_at,
        attempts,
        lease_token,
        lease_expires_at,
        trace_context,
    ) = row
    return ClaimedEvent(
        record_id=record_id,
        event_id=event_id,
        organization_id=organization_id,
        event_type=event_type,
        contract_version=contract_version,
        aggregate_type=aggregate_type,
        aggregate_id=aggregate_id,
        append_sequence=append_sequence,
        payload=payload,
        occurred_at=occurred_at,
        appended_at=appended_at,
        attempts=attempts,
        lease_token=lease_token,
        lease_expires_at=lease_expires_at,
        trace_context=trace_context,
    )


class PostgresEventOutboxStore:
    """EventOutboxStore on a pool whose connections act as ``outbox_worker``.

    ``listener`` waits on ``events_work`` (``WorkListener(url, EVENTS_CHANNEL)``). Each method
    is one round trip in its own transaction; every driver error is raised as an application
    error (StoreUnavailable, PermissionDenied, InvalidRequest…).
    """

    def __init__(
        self,
        pool: AsyncConnectionPool[AsyncConnection],
        listener: WorkListener,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._listener = listener
        self._schedule = ClaimWindow(clock=clock)  # recent claims between full ones (0058)

    async def claim(self, *, owner: str, limit: int, lease: timedelta) -> Sequence[ClaimedEvent]:
        """Lease up to ``limit`` due heads of their aggregates, organizations served fairly.

        A full claim or a recent one, as ``ClaimWindow`` schedules them."""
        started, window = self._schedule.next()
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(
                    CLAIM, (owner, limit, lease.total_seconds(), window), binary=True
                )
                rows = await cursor.fetchall()
        self._schedule.came_back(started, full=len(rows) >= limit)
        return [_claimed(row) for row in rows]

    async def record(self, records: Sequence[PublicationRecord]) -> Sequence[RecordResult]:
        """Record outcomes in one round trip; one result per record, in order."""
        if not records:
            return []
        encoded = [_encode(record) for record in records]
        params = (
            [record.record_id for record in records],
            [record.lease_token for record in records],
            [record.attempt for record in records],
            [row[0] for row in encoded],
            [row[1] for row in encoded],
            [row[2] for row in encoded],
            [record.target for record in records],
            [row[3] for row in encoded],
        )
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(RECORD, params, binary=True)
                rows = await cursor.fetchall()
        return [RecordResult(row[0]) for row in rows]

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` events final past retention (events.purge_events)."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(
                    PURGE, (retention.published, retention.dead_lettered, limit)
                )
                row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def wait_for_work(self, within: float) -> None:
        """Return when a producer (or a recorded publication) signals work, or after ``within``."""
        await self._listener.wait(within)

    async def close(self) -> None:
        """Close the listening connection; the pool belongs to whoever opened it."""
        await self._listener.close()
