"""The operator console's reads and writes over 0032_console.sql, 0033_console_events.sql,
0043_events_console.sql and 0044_console_chart_events.sql.

Every function checks the staff member's elevation in the database and masks destinations;
this adapter maps rows to views. ``PostgresPausedProviders`` is the worker's side: the names
of the providers staff paused.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, LiteralString
from uuid import UUID

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.message_log import message_summary
from outbox.adapters.postgres.operator_store import operator_errors
from outbox.adapters.postgres.views import gated
from outbox.application.delivery.message_filters import MessageFilter
from outbox.application.delivery.views import MessageSummary
from outbox.application.operator.console_views import (
    ActivityMinute,
    AuditEntry,
    EventActivityMinute,
    ProviderPause,
    WorkerLane,
)
from outbox.application.staff import StaffActor

FIND = """
SELECT id, purpose, channel, destination, state, attempt_count, created_at, dead_letter_reason,
       provider, repair_action, repair_message_id, repaired_at
FROM outbox.staff_find_messages(
    %s::uuid, %s::text, %s::text, %s::text, %s::text, %s::text, %s::timestamptz,
    %s::timestamptz, %s::uuid, %s::text, %s::uuid, %s::uuid, %s::integer
)
"""
ACTIVITY = """
SELECT minute, created, published, dead_lettered
FROM outbox.staff_activity(%s::uuid, %s::text, %s::integer)
"""
EVENT_ACTIVITY = """
SELECT minute, pending, published, dead_lettered
FROM events.staff_activity(%s::uuid, %s::text, %s::integer)
"""
MESSAGE_AUDIT = """
SELECT action, actor_id, message_id, new_message_id, reason, occurred_at
FROM outbox.staff_message_audit(%s::uuid, %s::text, %s::uuid)
"""
EVENT_AUDIT = """
SELECT action, actor_id, dead_letter_id, new_record_id, reason, occurred_at
FROM events.staff_event_audit(%s::uuid, %s::text, %s::uuid)
"""
PAUSES = """
SELECT provider, paused_by, reason, paused_at FROM outbox.staff_provider_pauses(%s::uuid, %s::text)
"""
OPERATOR_PAUSES = """
SELECT provider, paused_by, reason, paused_at FROM outbox.provider_pauses(%s::uuid)
"""
PAUSE = "SELECT outbox.staff_pause_provider(%s::uuid, %s::text, %s::text, %s::text)"
RESUME = "SELECT outbox.staff_resume_provider(%s::uuid, %s::text, %s::text, %s::text)"
OPERATOR_PAUSE = "SELECT outbox.pause_provider(%s::uuid, %s::text, %s::text)"
OPERATOR_RESUME = "SELECT outbox.resume_provider(%s::uuid, %s::text, %s::text)"
PAUSED = "SELECT provider FROM outbox.paused_providers() AS provider"
WORKER_COLUMNS = "SELECT owner, lane, started_at, seen_at, stopped_at, running, lag_seconds "
WORKERS = WORKER_COLUMNS + "FROM outbox.workers(%s::uuid)"
STAFF_WORKERS = WORKER_COLUMNS + "FROM outbox.staff_workers(%s::uuid, %s::text)"
HEARTBEAT = "SELECT outbox.worker_heartbeat(%s::text, %s::text, %s::timestamptz, %s::boolean)"

Row = tuple[Any, ...]


def _staff(actor: StaffActor) -> tuple[UUID, str | None]:
    return actor.identity_id, actor.elevation_digest


def _audit(row: Row) -> AuditEntry:
    return AuditEntry(
        action=row[0],
        actor_id=row[1],
        subject_id=row[2],
        result_id=row[3],
        reason=row[4],
        at=row[5],
    )


class PostgresConsoleStore:
    """StaffMessageSearch, ConsoleReads and ProviderPauseStore on the API pool."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def messages(
        self,
        *,
        actor: StaffActor,
        where: MessageFilter,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[MessageSummary]:
        """Up to ``limit`` matching messages, newest first, on one side of the cursor."""
        params = (
            *_staff(actor),
            where.state.value if where.state else None,
            where.purpose.value if where.purpose else None,
            where.reason.value if where.reason else None,
            where.provider,
            where.since,
            where.until,
            where.message_id,
            where.destination_digest,
            after,
            before,
            limit,
        )
        return [message_summary(row) for row in await self._all(FIND, params)]

    async def activity(self, *, actor: StaffActor, minutes: int) -> Sequence[ActivityMinute]:
        """Every minute of the last ``minutes``, oldest first."""
        rows = await self._all(ACTIVITY, (*_staff(actor), minutes))
        return [
            ActivityMinute(minute=r[0], created=r[1], published=r[2], dead_lettered=r[3])
            for r in rows
        ]

    async def event_activity(
        self, *, actor: StaffActor, minutes: int
    ) -> Sequence[EventActivityMinute]:
        """The tenant events' minutes of the last ``minutes``, oldest first."""
        rows = await self._all(EVENT_ACTIVITY, (*_staff(actor), minutes))
        return [
            EventActivityMinute(minute=r[0], pending=r[1], published=r[2], dead_lettered=r[3])
            for r in rows
        ]

    async def message_audit(self, *, actor: StaffActor, message_id: UUID) -> Sequence[AuditEntry]:
        """The staff actions on the message, oldest first."""
        return [_audit(r) for r in await self._all(MESSAGE_AUDIT, (*_staff(actor), message_id))]

    async def event_audit(self, *, actor: StaffActor, event_id: UUID) -> Sequence[AuditEntry]:
        """The repairs of the event's dead letters, oldest first."""
        return [_audit(r) for r in await self._all(EVENT_AUDIT, (*_staff(actor), event_id))]

    async def workers(self, *, actor: StaffActor | None) -> Sequence[WorkerLane]:
        """Every lane of every worker process seen in the last day, with its lag."""
        query, params = gated(actor, STAFF_WORKERS, WORKERS, ())
        return [
            WorkerLane(
                owner=r[0],
                lane=r[1],
                started_at=r[2],
                seen_at=r[3],
                stopped_at=r[4],
                running=r[5],
                lag=None if r[6] is None else timedelta(seconds=float(r[6])),
            )
            for r in await self._all(query, params)
        ]

    async def pauses(self, *, actor: StaffActor | None) -> Sequence[ProviderPause]:
        """The paused providers (staff with an elevation, or the database operator)."""
        return [
            ProviderPause(provider=r[0], paused_by=r[1], reason=r[2], paused_at=r[3])
            for r in await self._all(*gated(actor, PAUSES, OPERATOR_PAUSES, ()))
        ]

    async def paused_providers(self, *, actor: StaffActor | None) -> frozenset[str]:
        """The paused providers' names, read as ``actor`` (PausedProviderReads)."""
        return frozenset(pause.provider for pause in await self.pauses(actor=actor))

    async def pause(self, *, actor: StaffActor, provider: str, reason: str) -> bool:
        """Pause ``provider``, audited; False if it was already paused."""
        [(changed,)] = await self._all(*gated(actor, PAUSE, OPERATOR_PAUSE, (provider, reason)))
        return bool(changed)

    async def resume(self, *, actor: StaffActor, provider: str, reason: str) -> bool:
        """Resume ``provider``, audited; False if it was not paused."""
        [(changed,)] = await self._all(*gated(actor, RESUME, OPERATOR_RESUME, (provider, reason)))
        return bool(changed)

    async def _all(self, query: LiteralString, params: tuple[Any, ...]) -> list[Row]:
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return await cursor.fetchall()


class PostgresPausedProviders:
    """PausedProviders on the worker's pool."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def paused(self) -> frozenset[str]:
        """The names of the providers staff paused."""
        with translated_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(PAUSED)
                return frozenset(row[0] for row in await cursor.fetchall())


class PostgresWorkerHeartbeat:
    """A worker lane says it runs (outbox.worker_heartbeat), on the lane's own pool."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def beat(
        self, *, owner: str, lane: str, started_at: datetime, stopped: bool = False
    ) -> int:
        """Record that ``lane`` of process ``owner`` runs (or has stopped); 1."""
        with operator_errors():
            async with self._pool.connection() as conn:
                await conn.execute(HEARTBEAT, (owner, lane, started_at, stopped))
        return 1
