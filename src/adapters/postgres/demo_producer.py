"""The development demo producer: module ``demo`` onboarded and its events appended as it."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from psycopg import AsyncConnection, sql

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.event_appender import PostgresDomainEventAppender
from outbox.domain.events.domain_events import NewDomainEvent

DEMO_MODULE = "demo"
DEMO_EVENT_TYPE = "demo.order_placed"
DEMO_PRODUCER_ROLE = "outbox_demo_producer"

# Roles are cluster-wide: create it only when missing (another database may have), and make
# the operator's login able to SET ROLE to it (a superuser already is).
_ROLE = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'outbox_demo_producer') THEN
        BEGIN
            CREATE ROLE outbox_demo_producer NOLOGIN;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END;
    END IF;
    IF NOT pg_catalog.pg_has_role(current_user, 'outbox_demo_producer', 'MEMBER') THEN
        GRANT outbox_demo_producer TO CURRENT_USER;
    END IF;
END
$$
"""

# docs/sql-api.md, "Example: onboarding a module": every call is idempotent.
_ONBOARD = (
    "SELECT events.register_module('demo')",
    (
        "SELECT events.register_event_type('demo.order_placed', 'demo',"
        " 'A demo order was placed (development only)')"
    ),
    "SELECT events.publish_contract_version('demo.order_placed', 1)",
    "SELECT events.map_producer_role('outbox_demo_producer', 'demo')",
)


async def onboard_demo_module(conn: AsyncConnection) -> None:
    """Register module ``demo``, its type and version 1, and its producer role, in one
    transaction on the database operator's connection (a member of ``outbox_owner``)."""
    with translated_errors():
        async with conn.transaction():
            await conn.execute(_ROLE)
            for statement in _ONBOARD:
                await conn.execute(statement)


async def append_as_demo_producer(
    conn: AsyncConnection, events: Sequence[NewDomainEvent]
) -> list[UUID]:
    """Append each event in its own transaction as ``outbox_demo_producer``; their ids."""
    appender = PostgresDomainEventAppender(conn)
    role = sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(DEMO_PRODUCER_ROLE))
    ids = []
    for event in events:
        async with conn.transaction():
            with translated_errors():
                await conn.execute(role)
            ids.append(await appender.append(event))
    return ids
