"""A consumer process's view of its deliveries (ConsumerStore) over the consumer functions.

A batch's transaction is a pooled connection inside ``conn.transaction()``: each handler gets
that AsyncConnection inside a savepoint (a nested ``conn.transaction()``) and writes through
it; the batch's attempts are recorded on it in one call, and the block's end commits them all.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, LiteralString

from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.claim_window import ClaimWindow
from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.operator_store import operator_errors
from outbox.application.events.consumer_ports import (
    ClaimedDelivery,
    ConsumerDeadLetter,
    ConsumerLag,
    DeliveredEvent,
    ProcessingAttempt,
)
from outbox.application.staff import StaffActor
from outbox.domain.delivery.outcomes import RecordResult

CLAIM = """
SELECT delivery_id, domain_event_id, organization_id, event_type, contract_version,
       aggregate_type, aggregate_id, append_sequence, publication_sequence, replay_round,
       payload, occurred_at, trace_context, attempt_count, max_attempts, lease_token,
       lease_expires_at
FROM events.claim_consumer_deliveries(
    %s::text, %s::text, %s::integer, %s::double precision, %s::double precision
)
"""
RECORD = """
SELECT result
FROM events.record_consumer_processing_attempts(
    %s::uuid[], %s::uuid[], %s::integer[], %s::text[], %s::text[], %s::text[], %s::timestamptz[]
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


def _columns(attempts: Sequence[ProcessingAttempt]) -> tuple[list[object], ...]:
    """The record's arrays: one element per attempt in each."""
    return (
        [a.delivery_id for a in attempts],
        [a.lease_token for a in attempts],
        [a.attempt for a in attempts],
        [a.outcome for a in attempts],
        [a.error_class for a in attempts],
        [a.code for a in attempts],
        [a.retry_at for a in attempts],
    )


class PostgresDeliveryBatch:
    """One open transaction on one connection; ``handle`` is that AsyncConnection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    @property
    def handle(self) -> AsyncConnection:
        """The connection, inside its transaction, for the handlers' own statements."""
        return self._conn

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[None]:
        """SAVEPOINT; RELEASE at the end, ROLLBACK TO it when the block raises."""
        with translated_errors():
            async with self._conn.transaction():
                yield

    async def record(self, attempts: Sequence[ProcessingAttempt]) -> list[RecordResult]:
        """Record ``attempts`` in this transaction, in one statement (they commit with the
        handlers' writes)."""
        if not attempts:
            return []
        with translated_errors():
            cursor = await self._conn.execute(RECORD, _columns(attempts))
            rows = await cursor.fetchall()
        return [RecordResult(result) for (result,) in rows]


class PostgresConsumerStore:
    """ConsumerStore on a pool whose connections act as the consumer module's role.

    ``act_as`` names that role when the pool's session may not keep it: each transaction then
    begins with ``SET LOCAL ROLE``, which a transaction-mode PgBouncer carries (a session
    ``SET ROLE`` it does not: the next transaction may run on another server connection,
    and the claim takes the module from the current role).

    Every driver error is raised as an application error (PermissionDenied, ConsumerPaused,
    InvalidRequest, StoreUnavailable).
    """

    def __init__(
        self,
        pool: AsyncConnectionPool[AsyncConnection],
        *,
        act_as: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._act_as = (
            sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(act_as)) if act_as else None
        )
        self._clock = clock
        self._schedules: dict[str, ClaimWindow] = {}

    async def _acting(self, conn: AsyncConnection) -> None:
        if self._act_as is not None:
            await conn.execute(self._act_as)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection acting as the role: in a transaction when it must SET LOCAL."""
        async with self._pool.connection() as conn:
            if self._act_as is None:
                yield conn
                return
            async with conn.transaction():
                await conn.execute(self._act_as)
                yield conn

    async def claim(
        self, *, consumer: str, owner: str, limit: int, lease: timedelta
    ) -> Sequence[ClaimedDelivery]:
        """Lease up to ``limit`` of ``consumer``'s claimable deliveries.

        A full claim or a recent one, as each consumer's ``ClaimWindow`` schedules them."""
        schedule = self._schedules.get(consumer)
        if schedule is None:
            schedule = ClaimWindow(clock=self._clock)  # recent claims between full ones (0059)
            self._schedules[consumer] = schedule
        started, window = schedule.next()
        with translated_errors():
            async with self._connection() as conn:
                cursor = await conn.execute(
                    CLAIM, (consumer, owner, limit, lease.total_seconds(), window)
                )
                rows = await cursor.fetchall()
        schedule.came_back(started, full=len(rows) >= limit)
        return [_claimed(row) for row in rows]

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[PostgresDeliveryBatch]:
        """A pooled connection in a transaction: committed at the end, rolled back on error."""
        with translated_errors():
            async with self._pool.connection() as conn, conn.transaction():
                await self._acting(conn)
                yield PostgresDeliveryBatch(conn)


LAG = """
SELECT consumer, owner_module, active, ordered, max_attempts, replay_round, subscriptions,
       events_behind, oldest_undelivered_seconds, dead_letters
FROM events.consumer_lag()
"""
DEAD_LETTERS = """
SELECT delivery_id, delivery_sequence, domain_event_id, organization_id, event_type,
       contract_version, publication_sequence, replay_round, attempts, reason, code,
       dead_lettered_at
FROM events.consumer_dead_letters(%s::text, %s::bigint, %s::integer)
"""
STAFF_LAG = """
SELECT consumer, owner_module, active, ordered, max_attempts, replay_round, subscriptions,
       events_behind, oldest_undelivered_seconds, dead_letters
FROM events.staff_consumer_lag(%s::uuid, %s::text)
"""
STAFF_DEAD_LETTERS = """
SELECT delivery_id, delivery_sequence, domain_event_id, organization_id, event_type,
       contract_version, publication_sequence, replay_round, attempts, reason, code,
       dead_lettered_at
FROM events.staff_consumer_dead_letters(%s::uuid, %s::text, %s::text, %s::bigint, %s::integer)
"""
# The database operator's changes name no elevation; a staff member's are checked by the
# database (a fresh step-up). Both are audited in events.consumer_audit.
OPERATE = (
    "SELECT events.operate_consumer(%s::text, %s::uuid, NULL::uuid, %s::text, %s::bigint,"
    " %s::timestamptz, %s::text)"
)
STAFF_OPERATE = (
    "SELECT events.staff_operate_consumer(%s::uuid, %s::text, %s::text, %s::text, %s::bigint,"
    " %s::timestamptz, %s::text)"
)


def _lag(row: tuple[Any, ...]) -> ConsumerLag:
    (code, module, active, ordered, attempts, replay_round, subs, behind, oldest, dead) = row
    return ConsumerLag(
        consumer=code,
        owner_module=module,
        active=active,
        ordered=ordered,
        max_attempts=attempts,
        replay_round=replay_round,
        subscriptions=tuple(subs),
        events_behind=behind,
        oldest_undelivered=timedelta(seconds=oldest) if oldest is not None else None,
        dead_letters=dead,
    )


class PostgresConsumerLag:
    """The lag of every consumer, for the worker's metrics (``events.consumer_lag()``)."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def lag(self, *, actor: StaffActor | None = None) -> Sequence[ConsumerLag]:
        """Every consumer with its lag, by code (a staff actor's through the staff function)."""
        query, params = _staff_or_operator(actor, STAFF_LAG, LAG, ())
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return [_lag(row) for row in await cursor.fetchall()]


def _staff_or_operator(
    actor: StaffActor | None,
    staff_query: LiteralString,
    operator_query: LiteralString,
    params: tuple[Any, ...],
) -> tuple[LiteralString, tuple[Any, ...]]:
    """The staff function for an elevated staff actor, else the database operator's."""
    if actor is not None and actor.elevation_digest is not None:
        return staff_query, (actor.identity_id, actor.elevation_digest, *params)
    return operator_query, params


class PostgresConsumerAdmin(PostgresConsumerLag):
    """ConsumerAdmin on the database operator's pool (a member of outbox_owner) or, with a
    staff actor, on the admin listener's (role staff_service)."""

    async def dead_letters(
        self, consumer: str, *, before: int | None, limit: int, actor: StaffActor | None = None
    ) -> Sequence[ConsumerDeadLetter]:
        """A page of the consumer's dead letters, newest first."""
        query, params = _staff_or_operator(
            actor, STAFF_DEAD_LETTERS, DEAD_LETTERS, (consumer, before, limit)
        )
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                rows = await cursor.fetchall()
        return [
            ConsumerDeadLetter(
                delivery_id=row[0],
                sequence=row[1],
                event_id=row[2],
                organization_id=row[3],
                event_type=row[4],
                contract_version=row[5],
                publication_sequence=row[6],
                replay_round=row[7],
                attempts=row[8],
                reason=row[9],
                code=row[10],
                dead_lettered_at=row[11],
            )
            for row in rows
        ]

    async def replay(
        self,
        consumer: str,
        *,
        from_sequence: int | None = None,
        since: datetime | None = None,
        actor: StaffActor | None = None,
        reason: str | None = None,
    ) -> int:
        """Deliver again from a publication sequence or a time; how many deliveries."""
        return await self._operate("replay", consumer, actor, reason, from_sequence, since)

    async def set_active(
        self,
        consumer: str,
        *,
        active: bool,
        actor: StaffActor | None = None,
        reason: str | None = None,
    ) -> bool:
        """Pause or resume; whether it changed."""
        action = "resume" if active else "pause"
        return await self._operate(action, consumer, actor, reason, None, None) > 0

    async def _operate(  # noqa: PLR0917 - the SQL function's arguments
        self,
        action: str,
        consumer: str,
        actor: StaffActor | None,
        reason: str | None,
        from_sequence: int | None,
        since: datetime | None,
    ) -> int:
        if actor is not None and actor.elevation_digest is not None:
            query: LiteralString = STAFF_OPERATE
            params: tuple[Any, ...] = (
                actor.identity_id,
                actor.elevation_digest,
                action,
                consumer,
                from_sequence,
                since,
                reason,
            )
        else:
            query = OPERATE
            actor_id = None if actor is None else actor.identity_id
            params = (action, actor_id, consumer, from_sequence, since, reason)
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                row = await cursor.fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0
