"""The tenant events a run appends and drains: one bench module, its producer role, a backlog.

Roles are cluster-wide, so the producer role is created once (NOLOGIN) and shared by every
bench database; its mapping to the `bench` module and the grants live in each database.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

PRODUCER_ROLE = "bench_events_producer"
MODULE = "bench"
EVENT_TYPE = "bench.order_placed"
AGGREGATE_TYPE = "order"
ONBOARD = f"""
SET ROLE outbox_owner;
SELECT events.register_module('{MODULE}');
SELECT events.register_event_type('{EVENT_TYPE}', '{MODULE}', 'A customer placed an order');
SELECT events.publish_contract_version('{EVENT_TYPE}', 1);
SELECT events.map_producer_role('{PRODUCER_ROLE}', '{MODULE}');
RESET ROLE;
"""
# What events.append_domain_event writes for n events, in one statement: the event rows and
# their outbox records, the oldest live record of each aggregate its head (as the function
# decides), appended_at stepping back a microsecond a row so the order is well defined.
# Event g belongs to organization mod(g, orgs) and aggregate `order-{mod(g, aggregates)}`.
BULK_EVENTS = """
WITH numbered AS (
    SELECT g,
           ('0190bbbb-0000-7000-8000-' || lpad(to_hex(mod(g, %(orgs)s)), 12, '0'))::uuid AS org,
           'order-' || mod(g, %(aggregates)s) AS aggregate,
           now() - (%(count)s - g) * interval '1 microsecond' AS at
    FROM generate_series(1, %(count)s) AS g
), appended AS (
    INSERT INTO events.domain_events (
        id, organization_id, event_type_code, contract_version, producer_module_code,
        aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
    )
    SELECT gen_random_uuid(), n.org, 'bench.order_placed', 1, 'bench', 'order', n.aggregate,
           'bulk-' || %(batch)s || '-' || n.g,
           jsonb_build_object('order', n.aggregate, 'total', n.g, 'currency', 'EUR'), n.at, n.at
    FROM numbered AS n
    ORDER BY n.g
    RETURNING id, organization_id, aggregate_type, aggregate_id, append_sequence, appended_at
)
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    available_at, created_at, head
)
SELECT gen_random_uuid(), a.id, a.organization_id, a.aggregate_type, a.aggregate_id,
       a.append_sequence, a.appended_at, a.appended_at,
       a.append_sequence = min(a.append_sequence) OVER (
           PARTITION BY a.organization_id, a.aggregate_type, a.aggregate_id
       )
FROM appended AS a
"""
# The same events already published (no live record), then their publications in order: the
# fan-out trigger of each publication writes the subscribed consumers' deliveries, as the
# worker's record does.
BULK_PUBLISHED = """
WITH numbered AS (
    SELECT g,
           ('0190bbbb-0000-7000-8000-' || lpad(to_hex(mod(g, %(orgs)s)), 12, '0'))::uuid AS org,
           'order-' || mod(g, %(aggregates)s) AS aggregate,
           now() - (%(count)s - g) * interval '1 microsecond' AS at
    FROM generate_series(1, %(count)s) AS g
), appended AS (
    INSERT INTO events.domain_events (
        id, organization_id, event_type_code, contract_version, producer_module_code,
        aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
    )
    SELECT gen_random_uuid(), n.org, 'bench.order_placed', 1, 'bench', 'order', n.aggregate,
           'published-' || %(batch)s || '-' || n.g,
           jsonb_build_object('order', n.aggregate, 'total', n.g, 'currency', 'EUR'), n.at, n.at
    FROM numbered AS n
    ORDER BY n.g
    RETURNING id, organization_id, aggregate_type, aggregate_id, append_sequence, appended_at
)
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    state, attempt_count, available_at, created_at, published_at
)
SELECT gen_random_uuid(), a.id, a.organization_id, a.aggregate_type, a.aggregate_id,
       a.append_sequence, 'published', 1, a.appended_at, a.appended_at, now()
FROM appended AS a
"""
PUBLISH_ALL = """
INSERT INTO events.domain_event_publications (
    domain_event_id, outbox_record_id, organization_id, event_type_code, contract_version,
    published_at
)
SELECT e.id, r.id, e.organization_id, e.event_type_code, e.contract_version, r.published_at
FROM events.domain_events AS e
JOIN events.outbox_records AS r ON r.domain_event_id = e.id
WHERE NOT EXISTS (
    SELECT 1 FROM events.domain_event_publications AS p WHERE p.domain_event_id = e.id
)
ORDER BY e.append_sequence
"""
CONSUMER = "bench.effects"
# A consumer runs as its module's role, made a member of events_consumer (migration 0021).
SUBSCRIBE = f"""
GRANT events_consumer TO {PRODUCER_ROLE};
SET ROLE outbox_owner;
SELECT events.register_consumer('{CONSUMER}', '{MODULE}');
SELECT events.subscribe('{CONSUMER}', '{EVENT_TYPE}', 1, 1);
RESET ROLE;
"""
TABLES = (
    "events.publication_attempts",
    "events.domain_event_publications",
    "events.dead_letters",
    "events.head_vacancies",
    "events.outbox_records",
    "events.domain_events",
)
CONSUMER_TABLES = ("events.consumer_processing_attempts", "events.consumer_deliveries")


def organization(n: int) -> uuid.UUID:
    """The n-th bench organization (the same ids BULK_EVENTS uses)."""
    return uuid.UUID(f"0190bbbb-0000-7000-8000-{n:012x}")


def producer_conninfo(conninfo: str) -> str:
    """``conninfo`` acting as the bench producer role from its first statement."""
    return make_conninfo(conninfo, options=f"-c role={PRODUCER_ROLE}")


async def onboard(conninfo: str) -> None:
    """Create the producer role when absent; register the module, its type, map the role."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        cursor = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (PRODUCER_ROLE,))
        if await cursor.fetchone() is None:
            # another run may create it between the look and the CREATE
            with contextlib.suppress(
                psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation
            ):
                await conn.execute(
                    sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(PRODUCER_ROLE))
                )
        await conn.execute(ONBOARD.encode())


def order(n: int, aggregate: str) -> dict[str, object]:
    """The n-th event's payload (a small order)."""
    return {"order": aggregate, "total": n, "currency": "EUR"}


def now() -> datetime:
    """The producer's clock."""
    return datetime.now(UTC)


async def bulk_load(
    conninfo: str, count: int, *, organizations: int, aggregates: int, batch: str = "0"
) -> None:
    """Append ``count`` events over ``organizations`` and ``aggregates`` in one statement."""
    async with await psycopg.AsyncConnection.connect(conninfo) as conn:
        await conn.execute(
            BULK_EVENTS,
            {"count": count, "orgs": organizations, "aggregates": aggregates, "batch": batch},
        )
        await conn.commit()
    await vacuum(conninfo)


async def bulk_published(
    conninfo: str, count: int, *, organizations: int, aggregates: int, batch: str = "0"
) -> None:
    """``count`` events already published, and the subscribed consumers' deliveries."""
    async with await psycopg.AsyncConnection.connect(conninfo) as conn:
        await conn.execute(
            BULK_PUBLISHED,
            {"count": count, "orgs": organizations, "aggregates": aggregates, "batch": batch},
        )
        await conn.execute(PUBLISH_ALL)
        await conn.commit()
    await vacuum(conninfo)


async def subscribe_consumer(conninfo: str) -> None:
    """Register the bench consumer, subscribed to the bench event type (the database onboarded)."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute(SUBSCRIBE.encode())


async def empty(conninfo: str) -> None:
    """Remove every event, record, attempt and publication, and what refers to them."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute(f"TRUNCATE {', '.join(TABLES)} CASCADE".encode())


async def vacuum(conninfo: str) -> None:
    """VACUUM ANALYZE the events tables."""
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        for table in (*TABLES, *CONSUMER_TABLES):
            await conn.execute(f"VACUUM ANALYZE {table}".encode())
