"""EventOperatorStore and EventBacklogGauge over the SQL of 0020_events_operator.sql.

As operator_store.py: a staff member who presents an elevation is served by the events.staff_*
functions, which check it in the database; the database operator (no elevation) by the
functions that take the actor on trust, which only a login that may administer the database
can call. This adapter picks the function, maps rows to views and outcome words to errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, LiteralString, TypeVar
from uuid import UUID

import attrs
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.operator_store import operator_errors
from outbox.adapters.postgres.views import OLDEST_DUE_AGE, fetch_views, gated, read_views
from outbox.application.events.errors import DeadLetterNotFound, EventRepairRefused
from outbox.application.events.views import (
    BulkEventAction,
    BulkOutcome,
    EventDeadLetter,
    EventDetail,
    EventFilter,
    EventRecord,
    EventState,
    EventSummary,
    EventTypeView,
    OrganizationBacklog,
    ParkedAggregate,
    PublicationAttempt,
    RepairAction,
    RepairReceipt,
)
from outbox.application.staff import IdempotencyKeyReused, RequestInProgress, StaffActor

BACKLOG_COLUMNS = (
    "SELECT organization_id::text AS organization, pending, leased, " + OLDEST_DUE_AGE + ","
    " dead_letters, parked_aggregates "
)
BACKLOG = BACKLOG_COLUMNS + "FROM events.backlog(%s::uuid, %s::integer)"
STAFF_BACKLOG = BACKLOG_COLUMNS + "FROM events.staff_backlog(%s::uuid, %s::text, %s::integer)"
METRICS = (
    "SELECT organization, pending, leased, " + OLDEST_DUE_AGE + ", dead_letters, parked_aggregates"
    " FROM events.backlog_metrics()"
)
DEAD_LETTER_COLUMNS = """
SELECT dead_letter_id AS id, domain_event_id AS event_id, organization_id, event_type,
       contract_version, aggregate_type, aggregate_id, reason, attempt_count AS attempts,
       dead_lettered_at, resolution, resolved_at, resolved_by, republished_as
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
SELECT dead_letter_id AS id, organization_id, aggregate_type, aggregate_id,
       domain_event_id AS event_id, event_type, reason, parked_since, waiting
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
SELECT id, state, attempt_count AS attempts, republish_of, created_at, available_at, lease_owner,
       lease_expires_at, published_at, dead_lettered_at, dead_letter_reason, resolution,
       resolved_at, resolved_by, republished_as
"""
RECORDS = RECORD_COLUMNS + "FROM events.event_records(%s::uuid, %s::uuid)"
STAFF_RECORDS = RECORD_COLUMNS + "FROM events.staff_event_records(%s::uuid, %s::text, %s::uuid)"
ATTEMPT_COLUMNS = """
SELECT outbox_record_id AS record_id, attempt, counted, outcome, failure_class, code, target,
       recorded_at, retry_at
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
SEARCH_COLUMNS = """
SELECT domain_event_id AS id, append_sequence AS sequence, organization_id, event_type,
       contract_version, aggregate_type, aggregate_id, appended_at, record_id, state,
       attempt_count AS attempts, published_at, dead_lettered_at, resolution
"""
FILTER_PARAMS = "%s::text, %s::uuid, %s::text, %s::text, %s::timestamptz, %s::timestamptz"
SEARCH = (
    SEARCH_COLUMNS + "FROM events.search_events(%s::uuid, %s::text, " + FILTER_PARAMS + ","
    " %s::bigint, %s::integer)"
)
STAFF_SEARCH = (
    SEARCH_COLUMNS
    + "FROM events.staff_search_events(%s::uuid, %s::text, %s::text, "
    + FILTER_PARAMS
    + ", %s::bigint, %s::integer)"
)
COUNT_BULK = (
    "SELECT matched, as_of FROM events.count_bulk(%s::uuid, %s::text, " + FILTER_PARAMS + ","
    " %s::timestamptz)"
)
STAFF_COUNT_BULK = (
    "SELECT matched, as_of FROM events.staff_count_bulk(%s::uuid, %s::text, %s::text, "
    + FILTER_PARAMS
    + ", %s::timestamptz)"
)
BULK = (
    "SELECT changed, replayed, remaining FROM events.bulk_repair(%s::uuid, NULL::uuid,"
    " %s::text, " + FILTER_PARAMS + ", %s::timestamptz, %s::text, %s::text, %s::integer)"
)
STAFF_BULK = (
    "SELECT changed, replayed, remaining FROM events.staff_bulk_repair(%s::uuid, %s::text,"
    " %s::text, " + FILTER_PARAMS + ", %s::timestamptz, %s::text, %s::text, %s::integer)"
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
_View = TypeVar("_View")


def _filter(where: EventFilter) -> tuple[Any, ...]:
    """The filter's fields in the SQL functions' order."""
    return (
        where.event_type,
        where.organization_id,
        where.aggregate_type,
        where.aggregate_id,
        where.since,
        where.until,
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
        return await self._views(
            OrganizationBacklog, *gated(actor, STAFF_BACKLOG, BACKLOG, (limit,))
        )

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
        return await self._views(
            EventDeadLetter, *gated(actor, STAFF_DEAD_LETTERS, DEAD_LETTERS, params)
        )

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
        return await self._views(ParkedAggregate, *gated(actor, STAFF_PARKED, PARKED, params))

    async def event(self, *, actor: StaffActor | None, event_id: UUID) -> EventDetail | None:
        """The event, its records and attempts, read in one transaction."""
        detail, params = gated(actor, STAFF_DETAIL, DETAIL, (event_id,))
        records, _ = gated(actor, STAFF_RECORDS, RECORDS, ())
        attempts, _ = gated(actor, STAFF_ATTEMPTS, ATTEMPTS, ())
        with operator_errors():
            async with self._pool.connection() as conn, conn.transaction():
                found = await fetch_views(conn, EventDetail, detail, params)
                if not found:
                    return None
                return attrs.evolve(
                    found[0],
                    records=tuple(await fetch_views(conn, EventRecord, records, params)),
                    attempts=tuple(await fetch_views(conn, PublicationAttempt, attempts, params)),
                )

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
        rows = await self._all(*gated(actor, STAFF_REPUBLISH, REPUBLISH, params))
        return _receipt(rows[0] if rows else None, RepairAction.REPUBLISH, dead_letter_id)

    async def release(
        self, *, actor: StaffActor, dead_letter_id: UUID, reason: str, idempotency_key: str
    ) -> RepairReceipt:
        """Resolve the dead letter 'released', audited, in one call."""
        params = (dead_letter_id, reason, idempotency_key)
        rows = await self._all(*gated(actor, STAFF_RELEASE, RELEASE, params))
        return _receipt(rows[0] if rows else None, RepairAction.RELEASE, dead_letter_id)

    async def search(
        self,
        *,
        actor: StaffActor | None,
        state: EventState | None,
        where: EventFilter,
        before: int | None,
        limit: int,
    ) -> Sequence[EventSummary]:
        """Up to ``limit`` events, newest first, appended before sequence ``before``."""
        params = (state, *_filter(where), before, limit)
        return await self._views(EventSummary, *gated(actor, STAFF_SEARCH, SEARCH, params))

    async def count_bulk(
        self,
        *,
        actor: StaffActor | None,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime | None,
    ) -> tuple[int, datetime]:
        """How many events the action would change, and as of when."""
        params = (action.value, *_filter(where), as_of)
        rows = await self._all(*gated(actor, STAFF_COUNT_BULK, COUNT_BULK, params))
        return int(rows[0][0]), rows[0][1]

    async def bulk_repair(
        self,
        *,
        actor: StaffActor,
        action: BulkEventAction,
        where: EventFilter,
        as_of: datetime,
        reason: str,
        idempotency_key: str,
        limit: int,
    ) -> BulkOutcome:
        """Apply the action in one transaction, audited per event."""
        params = (action.value, *_filter(where), as_of, reason, idempotency_key, limit)
        rows = await self._all(*gated(actor, STAFF_BULK, BULK, params))
        changed, replayed, remaining = rows[0]
        return BulkOutcome(
            action=action, changed=changed, replayed=replayed, remaining=int(remaining)
        )

    async def _views(
        self, cls: type[_View], query: LiteralString, params: tuple[Any, ...]
    ) -> list[_View]:
        with operator_errors():
            return await read_views(self._pool, cls, query, params)

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
            return await read_views(self._pool, OrganizationBacklog, METRICS)


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
