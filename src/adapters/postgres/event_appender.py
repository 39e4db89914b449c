"""The producer's side of the tenant events outbox, inside the caller's own transaction."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.domain.events.domain_events import NewDomainEvent

APPEND = """
SELECT events.append_domain_event(
    p_organization_id => %s::uuid,
    p_event_type => %s::text,
    p_contract_version => %s::integer,
    p_aggregate_type => %s::text,
    p_aggregate_id => %s::text,
    p_idempotency_key => %s::text,
    p_payload => %s::jsonb,
    p_occurred_at => %s::timestamptz,
    p_trace_context => %s::text
)
"""


async def append_domain_event(
    conn: AsyncConnection,
    *,
    organization_id: UUID,
    event_type: str,
    contract_version: int,
    aggregate_type: str,
    aggregate_id: str,
    idempotency_key: str,
    payload: Mapping[str, Any],
    occurred_at: datetime,
    trace_context: str | None = None,
) -> UUID:
    """Append a domain event and its outbox record on ``conn``; return the event's id.

    Call it inside the transaction of the business change it reports: both commit or neither.
    ``conn`` acts as the module's producer role (its module is the producer). A replay of the
    idempotency key with the same content returns the first event's id. Raises
    IdempotencyConflict, EventTypeRetired, ContractVersionUnpublished, PermissionDenied,
    InvalidRequest or StoreUnavailable.
    """
    params = (
        organization_id,
        event_type,
        contract_version,
        aggregate_type,
        aggregate_id,
        idempotency_key,
        Jsonb(dict(payload)),
        occurred_at,
        trace_context,
    )
    with translated_errors():
        cursor = await conn.execute(APPEND, params)
        [(event_id,)] = await cursor.fetchall()  # the function returns one row
    return UUID(str(event_id))


def append_params(event: NewDomainEvent) -> tuple[object, ...]:
    """APPEND's parameters for ``event``."""
    return (
        event.organization_id,
        event.event_type,
        event.contract_version,
        event.aggregate_type,
        event.aggregate_id,
        event.idempotency_key,
        Jsonb(dict(event.payload)),
        event.occurred_at,
        event.trace_context,
    )


class PostgresDomainEventAppender:
    """DomainEventAppender bound to one connection; appends join its open transaction."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    async def append(self, event: NewDomainEvent) -> UUID:
        """Append ``event`` and its outbox record; return the event's id."""
        with translated_errors():
            cursor = await self._conn.execute(APPEND, append_params(event))
            [(event_id,)] = await cursor.fetchall()  # the function returns one row
        return UUID(str(event_id))
