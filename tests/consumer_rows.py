"""Published events and consumer roles put in place as the owner, for the consumer tests.

The tests of consumers need published events, not the producer's or the worker's path: an
event is written here with its outbox record already published and its publication row, in one
transaction, as the worker's recording transaction would (the fan-out trigger runs there).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import psycopg
from psycopg import sql

MODULE = """
INSERT INTO events.modules (code) VALUES (%(module)s) ON CONFLICT DO NOTHING
"""
EVENT_TYPE = """
INSERT INTO events.event_types (code, owner_module_code) VALUES (%(code)s, %(module)s)
ON CONFLICT DO NOTHING
"""
VERSION = """
INSERT INTO events.event_type_versions (event_type_code, contract_version)
VALUES (%(code)s, %(version)s) ON CONFLICT DO NOTHING
"""
EVENT = """
INSERT INTO events.domain_events (
    id, organization_id, event_type_code, contract_version, producer_module_code,
    aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
) VALUES (
    %(id)s, %(organization)s, %(type)s, %(version)s, split_part(%(type)s, '.', 1),
    %(aggregate_type)s, %(aggregate_id)s, %(key)s, %(payload)s::jsonb, now(), now()
) RETURNING append_sequence
"""
RECORD = """
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    state, available_at, created_at, published_at, attempt_count
) VALUES (
    %(record)s, %(id)s, %(organization)s, %(aggregate_type)s, %(aggregate_id)s, %(sequence)s,
    'published', now(), now(), now(), 1
)
"""
PUBLICATION = """
INSERT INTO events.domain_event_publications (
    domain_event_id, outbox_record_id, organization_id, event_type_code, contract_version,
    published_at
) VALUES (%(id)s, %(record)s, %(organization)s, %(type)s, %(version)s, now())
RETURNING publication_sequence
"""


@attrs.frozen(kw_only=True)
class Published:
    """One event written as published: its id and its place in the publication order."""

    event_id: uuid.UUID
    publication_sequence: int


async def define_type(
    conn: psycopg.AsyncConnection, event_type: str, versions: Iterable[int] = (1,)
) -> None:
    """The type's module, the type and its published versions (idempotent)."""
    module = event_type.split(".", 1)[0]
    await conn.execute(MODULE, {"module": module})
    await conn.execute(EVENT_TYPE, {"code": event_type, "module": module})
    for version in versions:
        await conn.execute(VERSION, {"code": event_type, "version": version})


async def publish(
    conn: psycopg.AsyncConnection,
    *,
    organization_id: uuid.UUID,
    event_type: str,
    version: int = 1,
    aggregate: tuple[str, str] = ("order", "1"),
    payload: Mapping[str, Any] | None = None,
) -> Published:
    """Write one event, its published record and its publication row in one transaction."""
    event_id, record_id = uuid.uuid4(), uuid.uuid4()
    params: dict[str, Any] = {
        "id": event_id,
        "record": record_id,
        "organization": organization_id,
        "type": event_type,
        "version": version,
        "aggregate_type": aggregate[0],
        "aggregate_id": aggregate[1],
        "key": str(event_id),
        "payload": json.dumps(dict(payload or {"n": 1})),
    }
    async with conn.transaction():
        cursor = await conn.execute(EVENT, params)
        row = await cursor.fetchone()
        assert row is not None
        await conn.execute(RECORD, {**params, "sequence": row[0]})
        cursor = await conn.execute(PUBLICATION, params)
        row = await cursor.fetchone()
        assert row is not None
    return Published(event_id=event_id, publication_sequence=row[0])


@asynccontextmanager
async def consumer_role(conn: psycopg.AsyncConnection, module: str) -> AsyncIterator[str]:
    """A fresh NOLOGIN role running ``module``'s consumers: a member of events_consumer, mapped
    to the module. Dropped afterwards (roles are cluster-wide)."""
    role = f"outbox_test_consumer_{uuid.uuid4().hex[:12]}"
    await conn.execute(MODULE, {"module": module})
    await conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    try:
        await conn.execute(sql.SQL("GRANT events_consumer TO {}").format(sql.Identifier(role)))
        await conn.execute(
            "INSERT INTO events.producer_roles (role_name, module_code) VALUES (%s, %s)",
            (role, module),
        )
        yield role
    finally:
        # Grants a test gave it in this database go first (the role is the cluster's).
        await conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        await conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


BULK_EVENTS = """
INSERT INTO events.domain_events (
    id, organization_id, event_type_code, contract_version, producer_module_code,
    aggregate_type, aggregate_id, idempotency_key, payload, occurred_at, appended_at
)
SELECT gen_random_uuid(), (%(organizations)s::uuid[])[1 + g %% cardinality(%(organizations)s)],
       %(type)s, 1, split_part(%(type)s, '.', 1), 'order', (g %% %(aggregates)s)::text,
       %(prefix)s || g, jsonb_build_object('n', g), now(), now()
FROM generate_series(1, %(count)s) AS g
ORDER BY g
"""
BULK_RECORDS = """
INSERT INTO events.outbox_records (
    id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
    state, available_at, created_at, published_at, attempt_count
)
SELECT gen_random_uuid(), e.id, e.organization_id, e.aggregate_type, e.aggregate_id,
       e.append_sequence, 'published', now(), now(), now(), 1
FROM events.domain_events AS e
WHERE e.idempotency_key LIKE %(prefix)s || '%%'
"""
BULK_PUBLICATIONS = """
INSERT INTO events.domain_event_publications (
    domain_event_id, outbox_record_id, organization_id, event_type_code, contract_version,
    published_at
)
SELECT e.id, r.id, e.organization_id, e.event_type_code, e.contract_version, now()
FROM events.domain_events AS e
JOIN events.outbox_records AS r ON r.domain_event_id = e.id
WHERE e.idempotency_key LIKE %(prefix)s || '%%'
ORDER BY e.append_sequence
"""


async def publish_many(
    conn: psycopg.AsyncConnection,
    *,
    organization_ids: Iterable[uuid.UUID],
    event_type: str,
    count: int,
    aggregates: int = 40,
) -> None:
    """``count`` events of version 1 spread over the organizations and ``aggregates``
    aggregates each, published in append order, in one transaction."""
    params: dict[str, Any] = {
        "organizations": list(organization_ids),
        "type": event_type,
        "count": count,
        "aggregates": aggregates,
        "prefix": f"bulk-{uuid.uuid4().hex[:8]}-",
    }
    async with conn.transaction():
        for statement in (BULK_EVENTS, BULK_RECORDS, BULK_PUBLICATIONS):
            await conn.execute(statement, params)


RECORD_BATCH = (
    "SELECT result FROM events.record_consumer_processing_attempts(%s::uuid[], %s::uuid[],"
    " %s::integer[], %s::text[], %s::text[], %s::text[], %s::timestamptz[])"
)


def completed_batch(batch: Sequence[Mapping[str, Any]]) -> tuple[list[Any], ...]:
    """The arguments of ``RECORD_BATCH`` completing every claimed row of ``batch`` (rows of
    ``events.claim_consumer_deliveries`` as dicts)."""
    n = len(batch)
    return (
        [row["delivery_id"] for row in batch],
        [row["lease_token"] for row in batch],
        [row["attempt_count"] + 1 for row in batch],
        ["completed"] * n,
        [None] * n,
        [""] * n,
        [None] * n,
    )
