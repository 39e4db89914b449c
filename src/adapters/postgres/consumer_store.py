"""A consumer process's view of its deliveries (ConsumerStore) over the consumer functions.

The handler's transaction is a pooled connection inside ``conn.transaction()``: the handler
gets that AsyncConnection and writes through it; the completion is recorded on it, and the
block's end commits both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from adapters.postgres.error_translation import translated_errors
from application.events.consumer_ports import ClaimedDelivery, DeliveredEvent, ProcessingAttempt
from domain.outbox.outcomes import RecordResult

CLAIM = """
SELECT delivery_id, domain_event_id, organization_id, event_type, contract_version,
       aggregate_type, aggregate_id, append_sequence, publication_sequence, replay_round,
       payload, occurred_at, trace_context, attempt_count, max_attempts, lease_token,
       lease_expires_at
FROM events.claim_consumer_deliveries(%s::text, %s::text, %s::integer, %s::double precision)
"""
RECORD = """
SELECT events.record_consumer_processing_attempt(
    %s::uuid, %s::uuid, %s::integer, %s::text, %s::text, %s::text, %s::timestamptz
)
"""


def _claimed(row: tuple[Any, ...]) -> ClaimedDelivery:
    (
        delivery_id,
        event_id,
        organization_id,
        event_type,
        contract_version,
        aggregate_type,
        aggregate_id,
        append_sequence,
        publication_sequence,
        replay_round,
        payload,
        occurred_at,
        trace_context,
        attempts,
        max_attempts,
        lease_token,
        lease_expires_at,
    ) = row
    return ClaimedDelivery(
        event=DeliveredEvent(
            delivery_id=delivery_id,
            event_id=event_id,
            organization_id=organization_id,
            event_type=event_type,
            contract_version=contract_version,
            aggregate_type=aggregate_type,
            aggregate_id=aggregate_id,
            append_sequence=append_sequence,
            publication_sequence=publication_sequence,
            replay_round=replay_round,
            payload=payload,
            occurred_at=occurred_at,
            attempt=attempts + 1,
            trace_context=trace_context,
        ),
        max_attempts=max_attempts,
        lease_token=lease_token,
        lease_expires_at=lease_expires_at,
    )


def _params(attempt: ProcessingAttempt) -> tuple[object, ...]:
    return (
        attempt.delivery_id,
        attempt.lease_token,
        attempt.attempt,
        attempt.outcome,
        attempt.error_class,
        attempt.code,
        attempt.retry_at,
    )


async def _record_on(conn: AsyncConnection, attempt: ProcessingAttempt) -> RecordResult:
    cursor = await conn.execute(RECORD, _params(attempt))
    row = await cursor.fetchone()
    return RecordResult(row[0]) if row is not None else RecordResult.LEASE_LOST


class PostgresDeliveryTransaction:
    """One open transaction on one connection; ``handle`` is that AsyncConnection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    @property
    def handle(self) -> AsyncConnection:
        """The connection, inside its transaction, for the handler's own statements."""
        return self._conn

    async def record(self, attempt: ProcessingAttempt) -> RecordResult:
        """Record ``attempt`` in this transaction (it commits with the handler's writes)."""
        with translated_errors():
            return await _record_on(self._conn, attempt)


class PostgresConsumerStore:
    """ConsumerStore on a pool whose connections act as the consumer module's role.

    Every driver error is raised as an application error (PermissionDenied, ConsumerPaused,
    InvalidRequest, StoreUnavailable).
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        """Lease up to ``limit`` of ``consumer``'s claimable deliveries."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(CLAIM, (consumer, owner, limit, lease.total_seconds()))
                rows = await cursor.fetchall()
        return [_claimed(row) for row in rows]

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresDeliveryTransaction]:
        """A pooled connection in a transaction: committed at the end, rolled back on error."""
        with translated_errors():
            async with self._pool.connection() as conn, conn.transaction():
                yield PostgresDeliveryTransaction(conn)

    async def record(self, attempt: ProcessingAttempt) -> RecordResult:
        """Record ``attempt`` in a transaction of its own."""
        with translated_errors():
            async with self._pool.connection() as conn:
                return await _record_on(conn, attempt)
