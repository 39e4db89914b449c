"""EventOperatorStore and EventBacklogGauge over the SQL of 0020_events_operator.sql.

As operator_store.py: a staff member who presents an elevation is served by the events.staff_*
functions, which check it in the database; the database operator (no elevation) by the
functions that take the actor on trust, which only a login that may administer the database
can call. This adapter picks the function, maps rows to views and outcome words to errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, LiteralString
from uuid import UUID

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.operator_store import operator_errors
from outbox.application.events.errors import DeadLetterNotFound, EventRepairRefused
from outbox.application.events.views import (
    EventDeadLetter,
    EventDetail,
    EventRecord,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    PublicationAttempt,
    RepairAction,
    RepairReceipt,
    Resolution,
)
from outbox.application.staff import IdempotencyKeyReused, RequestInProgress, StaffActor

BACKLOG_COLUMNS = (
    "SELECT organization_id::text, pending, leased, oldest_due_age_seconds, dead_letters,"
    " parked_aggregates "
)
BACKLOG = BACKLOG_COLUMNS + "FROM events.backlog(%s::uuid, %s::integer)"
STAFF_BACKLOG = BACKLOG_COLUMNS + "FROM events.staff_backlog(%s::uuid, %s::text, %s::integer)"
METRICS = (
    "SELECT organization, pending, leased, oldest_due_age_seconds, dead_letters,"
    " parked_aggregates FROM events.backlog_metrics()"
)
DEAD_LETTER_COLUMNS = """
SELECT dead_letter_id, domain_event_id, organization_id, event_type, contract_version,
       aggregate_type, aggregate_id, reason, attempt_count, dead_lettered_at, resolution,
       resolved_at, resolved_by, republished_as
"""
DEAD_LETTERS = (
    DEAD_LETTER_COLUMNS + "FROM events.list_dead_letters(%s::uuid, %s::uuid, %s::boolean,"
    " %s::uuid, %s::uuid, %s::integer)"
)
STAFF_DEAD_LETTERS = (
    DEAD_LETTER_COLUMNS + "FROM events.staff_list_dead_letters(%s::uuid, %s::text, %s::uuid,"
    " %s::boolean, %s::uuid, %s::uuid, %s::integer)"
)
PARKED_COLUMNS = """
SELECT dead_letter_id, organization_id, aggregate_type, aggregate_id, domain_event_id,
       event_type, reason, parked_since, waiting
"""
PARKED = (
    PARKED_COLUMNS
    + "FROM events.parked_aggregates(%s::uuid, %s::uuid, %s::uuid, %s::uuid, %s::integer)"
)
STAFF_PARKED = (
    PARKED_COLUMNS + "FROM events.staff_parked_aggregates(%s::uuid, %s::text, %s::uuid,"
    " %s::uuid, %s::uuid, %s::integer)"
)
DETAIL_COLUMNS = """
SELECT id, organization_id, event_type, contract_version, producer_module, aggregate_type,
       aggregate_id, append_sequence, occurred_at, appended_at, payload_bytes, trace_context,
       publication_sequence, published_at
"""
DETAIL = DETAIL_COLUMNS + "FROM events.event_detail(%s::uuid, %s::uuid)"
STAFF_DETAIL = DETAIL_COLUMNS + "FROM events.staff_event_detail(%s::uuid, %s::text, %s::uuid)"
RECORD_COLUMNS = """
SELECT id, state, attempt_count, republish_of, created_at, available_at, lease_owner,
       lease_expires_at, published_at, dead_lettered_at, dead_letter_reason, resolution,
       resolved_at, resolved_by, republished_as
"""
RECORDS = RECORD_COLUMNS + "FROM events.event_records(%s::uuid, %s::uuid)"
STAFF_RECORDS = RECORD_COLUMNS + "FROM events.staff_event_records(%s::uuid, %s::text, %s::uuid)"
ATTEMPT_COLUMNS = """
SELECT outbox_record_id, attempt, counted, outcome, failure_class, code, target, recorded_at,
       retry_at
"""
ATTEMPTS = ATTEMPT_COLUMNS + "FROM events.event_attempts(%s::uuid, %s::uuid)"
STAFF_ATTEMPTS = ATTEMPT_COLUMNS + "FROM events.staff_event_attempts(%s::uuid, %s::text, %s::uuid)"
REPUBLISH = (
    "SELECT outcome, new_record_id FROM events.republish_dead_letter(%s::uuid, %s::uuid,"
    " %s::uuid, %s::text, %s::text)"
)
STAFF_REPUBLISH = (
    "SELECT outcome, new_record_id FROM events.staff_republish_dead_letter(%s::uuid, %s::text,"
    " %s::uuid, %s::uuid, %s::text, %s::text)"
)
RELEASE = (
    "SELECT outcome, NULL::uuid FROM events.release_dead_letter(%s::uuid, %s::uuid, %s::text,"
    " %s::text)"
)
STAFF_RELEASE = (
    "SELECT outcome, NULL::uuid FROM events.staff_release_dead_letter(%s::uuid, %s::text,"
    " %s::uuid, %s::text, %s::text)"
)
# The owner's members read the catalogue tables directly (docs/sql-api.md, "Tables").
EVENT_TYPES = """
SELECT t.code, t.owner_module_code, t.description,
       COALESCE(array_agg(v.contract_version ORDER BY v.contract_version)
                FILTER (WHERE v.contract_version IS NOT NULL), '{}'),
       t.retired_at
FROM events.event_types AS t
LEFT JOIN events.event_type_versions AS v ON v.event_type_code = t.code
GROUP BY t.code
ORDER BY t.code
"""
DONE = frozenset({"republished", "released"})

Row = tuple[Any, ...]


def _gated(
    actor: StaffActor | None,
    staff_query: LiteralString,
    operator_query: LiteralString,
    params: tuple[Any, ...],
) -> tuple[LiteralString, tuple[Any, ...]]:
    """The staff function when the actor presents an elevation, else the database operator's."""
    if actor is not None and actor.elevation_digest is not None:
        return staff_query, (actor.identity_id, actor.elevation_digest, *params)
    return operator_query, (None if actor is None else actor.identity_id, *params)


def _age(seconds: float | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=max(0.0, float(seconds)))


def _backlog(row: Row) -> OrganizationBacklog:
    return OrganizationBacklog(
        organization=row[0],
        pending=row[1],
        leased=row[2],
        oldest_due_age=_age(row[3]),
        dead_letters=row[4],
        parked_aggregates=row[5],
    )


def _resolution(value: str | None) -> Resolution | None:
    return Resolution(value) if value else None


def _dead_letter(row: Row) -> EventDeadLetter:
    return EventDeadLetter(
        id=row[0],
        event_id=row[1],
        organization_id=row[2],
        event_type=row[3],
        contract_version=row[4],
        aggregate_type=row[5],
        aggregate_id=row[6],
        reason=row[7],
        attempts=row[8],
        dead_lettered_at=row[9],
        resolution=_resolution(row[10]),
        resolved_at=row[11],
        resolved_by=row[12],
        republished_as=row[13],
    )


def _parked(row: Row) -> ParkedAggregate:
    return ParkedAggregate(
        id=row[0],
        organization_id=row[1],
        aggregate_type=row[2],
        aggregate_id=row[3],
        event_id=row[4],
        event_type=row[5],
        reason=row[6],
        parked_since=row[7],
        waiting=row[8],
    )


def _record(row: Row) -> EventRecord:
    return EventRecord(
        id=row[0],
        state=row[1],
        attempts=row[2],
        republish_of=row[3],
        created_at=row[4],
        available_at=row[5],
        lease_owner=row[6],
        lease_expires_at=row[7],
        published_at=row[8],
        dead_lettered_at=row[9],
        dead_letter_reason=row[10],
        resolution=_resolution(row[11]),
        resolved_at=row[12],
        resolved_by=row[13],
        republished_as=row[14],
    )


def _attempt(row: Row) -> PublicationAttempt:
    return PublicationAttempt(
        record_id=row[0],
        attempt=row[1],
        counted=row[2],
        outcome=row[3],
        failure_class=row[4],
        code=row[5],
        target=row[6],
        recorded_at=row[7],
        retry_at=row[8],
    )


def _detail(row: Row, records: Sequence[Row], attempts: Sequence[Row]) -> EventDetail:
    return EventDetail(
        id=row[0],
        organization_id=row[1],
        event_type=row[2],
        contract_version=row[3],
        producer_module=row[4],
        aggregate_type=row[5],
        aggregate_id=row[6],
        append_sequence=row[7],
        occurred_at=row[8],
        appended_at=row[9],
        payload_bytes=row[10],
        trace_context=row[11],
        publication_sequence=row[12],
        published_at=row[13],
        records=tuple(_record(r) for r in records),
        attempts=tuple(_attempt(a) for a in attempts),
    )


def _receipt(row: Row | None, action: RepairAction, dead_letter_id: UUID) -> RepairReceipt:
    """The receipt an outcome row stands for, or the error it names."""
    if row is None:  # the functions always answer one row
        raise RuntimeError("the repair function answered no row")
    outcome, record_id = row
    if outcome in DONE or outcome == "replayed":
        return RepairReceipt(
            action=action,
            dead_letter_id=dead_letter_id,
            record_id=record_id,
            replayed=outcome == "replayed",
        )
    if outcome == "in_progress":
        raise RequestInProgress
    if outcome == "key_reused":
        raise IdempotencyKeyReused
    if outcome == "not_found":
        raise DeadLetterNotFound(str(dead_letter_id))
    raise EventRepairRefused(str(outcome).removeprefix("already_"))


class PostgresEventOperatorStore:
    """EventOperatorStore on a pool; each call is its own transaction.

    On the API pool (role identity_service) every call names a staff actor with an elevation;
    the database operator's pool (a member of outbox_owner) may read with no actor and act in
    a staff member's name without an elevation.
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def backlog(
        self, *, actor: StaffActor | None, limit: int
    ) -> Sequence[OrganizationBacklog]:
        """Up to ``limit`` organizations, the largest backlog first."""
        rows = await self._all(*_gated(actor, STAFF_BACKLOG, BACKLOG, (limit,)))
        return [_backlog(row) for row in rows]

    async def dead_letters(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        unresolved_only: bool,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[EventDeadLetter]:
        """Up to ``limit`` dead letters, newest first, on one side of the cursor."""
        params = (organization_id, unresolved_only, after, before, limit)
        rows = await self._all(*_gated(actor, STAFF_DEAD_LETTERS, DEAD_LETTERS, params))
        return [_dead_letter(row) for row in rows]

    async def parked(
        self,
        *,
        actor: StaffActor | None,
        organization_id: UUID | None,
        after: UUID | None,
        before: UUID | None,
        limit: int,
    ) -> Sequence[ParkedAggregate]:
        """Up to ``limit`` parked aggregates, newest dead letter first."""
        params = (organization_id, after, before, limit)
        rows = await self._all(*_gated(actor, STAFF_PARKED, PARKED, params))
        return [_parked(row) for row in rows]

    async def event(self, *, actor: StaffActor | None, event_id: UUID) -> EventDetail | None:
        """The event, its records and attempts, read in one transaction."""
        detail, params = _gated(actor, STAFF_DETAIL, DETAIL, (event_id,))
        records, _ = _gated(actor, STAFF_RECORDS, RECORDS, ())
        attempts, _ = _gated(actor, STAFF_ATTEMPTS, ATTEMPTS, ())
        with operator_errors():
            async with self._pool.connection() as conn, conn.transaction():
                cursor = await conn.execute(detail, params)
                row = await cursor.fetchone()
                if row is None:
                    return None
                record_rows = await (await conn.execute(records, params)).fetchall()
                attempt_rows = await (await conn.execute(attempts, params)).fetchall()
                return _detail(row, record_rows, attempt_rows)

    async def republish(
        self,
        *,
        actor: StaffActor,
        dead_letter_id: UUID,
        new_record_id: UUID,
        reason: str,
        idempotency_key: str,
    ) -> RepairReceipt:
        """A new record of the dead letter's event, audited, in one call."""
        params = (dead_letter_id, new_record_id, reason, idempotency_key)
        rows = await self._all(*_gated(actor, STAFF_REPUBLISH, REPUBLISH, params))
        return _receipt(rows[0] if rows else None, RepairAction.REPUBLISH, dead_letter_id)

    async def release(
        self, *, actor: StaffActor, dead_letter_id: UUID, reason: str, idempotency_key: str
    ) -> RepairReceipt:
        """Resolve the dead letter 'released', audited, in one call."""
        params = (dead_letter_id, reason, idempotency_key)
        rows = await self._all(*_gated(actor, STAFF_RELEASE, RELEASE, params))
        return _receipt(rows[0] if rows else None, RepairAction.RELEASE, dead_letter_id)

    async def _all(self, query: LiteralString, params: tuple[Any, ...]) -> list[Row]:
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(query, params)
                return await cursor.fetchall()


class PostgresEventBacklogGauge:
    """EventBacklogGauge on the API pool: bounded counts, with no identity."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def metrics(self) -> Sequence[OrganizationBacklog]:
        """The top organizations and the OTHER row."""
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(METRICS)
                return [_backlog(row) for row in await cursor.fetchall()]


class PostgresEventCatalog:
    """EventCatalog on the database operator's pool."""

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection]) -> None:
        self._pool = pool

    async def event_types(self) -> Sequence[EventTypeView]:
        """Every event type by code, with its published versions."""
        with operator_errors():
            async with self._pool.connection() as conn:
                cursor = await conn.execute(EVENT_TYPES)
                return [
                    EventTypeView(
                        code=code,
                        module=module,
                        description=description,
                        versions=tuple(versions),
                        retired_at=retired_at,
                    )
                    for code, module, description, versions, retired_at in await cursor.fetchall()
                ]
