"""The worker's view of the queue (DispatchStore) over the outbox SQL functions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, LiteralString

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.work_listener import WorkListener
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.domain.channels import Channel
from outbox.domain.delivery.outcomes import DeadLetter, Published, RecordResult, Release, Retry
from outbox.domain.delivery.priorities import Priority
from outbox.domain.delivery.retention import RetentionPolicy
from outbox.domain.purposes import Purpose

_CLAIMED = """
SELECT id, purpose, channel, destination, subject_id, template, params, locale,
       sealed_secret, attempt_count, expires_at, lease_token, lease_expires_at, priority,
       trace_context
FROM """
# The last argument: how long a fresh high-priority message is left to the reserved slot
# running in another process (0064_batches_leave_codes_to_the_slot.sql).
CLAIM = (
    _CLAIMED
    + "outbox.claim_messages(%b::text, %b::integer, %b::double precision, %b::double precision)"
)
# The reserved slot's (0049_reserved_slot.sql): high-priority messages only.
CLAIM_URGENT = (
    _CLAIMED + "outbox.claim_urgent_messages(%b::text, %b::integer, %b::double precision)"
)
RECORD = """
SELECT result
FROM outbox.record_outcomes_detailed(
    %b::uuid[], %b::uuid[], %b::integer[], %b::text[], %b::text[],
    %b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::boolean[], %b::text[]
)
"""
# The hot path speaks binary both ways (%b, binary=True): psycopg dumps the arrays of a
# hundred in about 180 us in binary against 730 us as text, and parses UUIDs and timestamps
# without string round trips (docs/benchmarks.md).
REFRESH_CLAIM_FLOOR = "SELECT 1 FROM outbox.refresh_claim_floor()"
EXPIRE = "SELECT outbox.expire_messages(%s::integer)"
PURGE = "SELECT outbox.purge_messages(%s::interval, %s::interval, %s::integer)"

# One row of the record call: outcome kind, failure class, code, receipt, retry time, attempted,
# the provider's detail.
_Encoded = tuple[str, str | None, str, str, datetime | None, bool, str]


def _encode(record: AttemptRecord) -> _Encoded:
    match record.outcome:
        case Published(provider_message_id=receipt):
            return ("published", None, "", receipt, None, True, "")
        case Retry(available_at=at, failure_class=failure, code=code, detail=detail):
            return ("retry", failure.value, code, "", at, True, detail)
        case Release(available_at=at, failure_class=failure, code=code, detail=detail):
            return ("release", failure.value, code, "", at, False, detail)
        case DeadLetter(reason=reason, code=code, attempted=attempted, detail=detail):
            return ("dead_letter", reason.value, code, "", None, attempted, detail)


def _claimed(row: tuple[Any, ...]) -> ClaimedMessage:
    (
        message_id,
        purpose,
        channel,
        destination,
        subject_id,
        template,
        params,
        locale,
        envelope,
        attempts,
        expires_at,
        lease_token,
        lease_expires_at,
        priority,
        trace_context,
    ) = row
    return ClaimedMessage(
        id=message_id,
        purpose=Purpose(purpose),
        channel=Channel(channel),
        destination=destination,
        subject_id=subject_id,
        template=template,
        params=params,
        locale=locale,
        envelope=envelope,
        attempts=attempts,
        expires_at=expires_at,
        lease_token=lease_token,
        lease_expires_at=lease_expires_at,
        priority=Priority(priority),
        trace_context=trace_context,
    )


class PostgresDispatchStore:
    """DispatchStore on a pool whose connections act as ``outbox_worker``.

    ``listener`` waits for producers' notifications on its own session connection.

    Each method is one round trip (one function call in its own transaction); every
    driver error is raised as an application error (StoreUnavailable, PermissionDenied…).
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection], listener: WorkListener) -> None:
        self._pool = pool
        self._listener = listener

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        """Lease up to ``limit`` due messages; expired candidates are dead-lettered instead.

        ``urgent``: high-priority messages only (the worker's reserved slot).
        ``leave_urgent``: a high-priority message due for less than this is left out (to
        the reserved slot in another process).
        """
        query, params = (
            (CLAIM_URGENT, (owner, limit, lease.total_seconds()))
            if urgent
            else (CLAIM, (owner, limit, lease.total_seconds(), leave_urgent.total_seconds()))
        )
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params, binary=True)
                rows = await cursor.fetchall()
        return [_claimed(row) for row in rows]

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        """Record outcomes in one round trip; one result per record, in order."""
        if not records:
            return []
        encoded = [_encode(record) for record in records]
        params = (
            [record.message_id for record in records],
            [record.lease_token for record in records],
            [record.attempt for record in records],
            [row[0] for row in encoded],
            [row[1] for row in encoded],
            [row[2] for row in encoded],
            [record.provider for record in records],
            [row[3] for row in encoded],
            [row[4] for row in encoded],
            [row[5] for row in encoded],
            [row[6] for row in encoded],
        )
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(RECORD, params, binary=True)
                rows = await cursor.fetchall()
        return [RecordResult(row[0]) for row in rows]

    async def expire(self, *, limit: int) -> int:
        """Dead-letter up to ``limit`` expired messages nobody holds; return how many."""
        return await self._scalar(EXPIRE, (limit,))

    async def purge(self, *, retention: RetentionPolicy, limit: int) -> int:
        """Delete up to ``limit`` final messages past retention, with history; return how many."""
        return await self._scalar(PURGE, (retention.published, retention.dead_lettered, limit))

    async def wait_for_work(self, within: float) -> None:
        """Return when a producer signals new work, or after ``within`` seconds."""
        await self._listener.wait(within)

    async def refresh_claim_floor(self) -> int:
        """Recompute where claims start (``outbox.refresh_claim_floor``, 0047): the one walk
        over the dead versions a held horizon keeps, off the claims' path; 1."""
        return await self._scalar(REFRESH_CLAIM_FLOOR, ())

    async def close(self) -> None:
        """Close the listening connection; the pool belongs to whoever opened it."""
        await self._listener.close()

    async def _scalar(self, query: LiteralString, params: tuple[object, ...]) -> int:
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0
