"""Tenant events in a test database, made the way production makes them.

A ``demo`` module owns ``demo.thing_happened`` (version 1) and produces as outbox_producer
(mapped in the test database only); events are appended with events.append_domain_event and
driven through events.claim_outbox_batch and events.record_publication_attempt as
outbox_worker, so dead letters and parked aggregates are the record function's own rows.
``age`` moves a final record's timestamps into the past, as the owner, for retention tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

EVENT_TYPE = "demo.thing_happened"
PRODUCER = "outbox_producer"
WORKER = "outbox_worker"

SETUP = """
SELECT events.register_module('demo');
SELECT events.register_event_type('demo.thing_happened', 'demo', 'A demo event');
SELECT events.publish_contract_version('demo.thing_happened', 1);
SELECT events.map_producer_role('outbox_producer', 'demo');
"""
APPEND = """
SELECT events.append_domain_event(
    %s, 'demo.thing_happened', 1, 'thing', %s, %s, %s, statement_timestamp()
)
"""
CLAIM = (
    "SELECT record_id, event_id, attempts, lease_token FROM events.claim_outbox_batch(%s, %s, 60)"
)
RECORD = """
SELECT result FROM events.record_publication_attempt(
    ARRAY[%s]::uuid[], ARRAY[%s]::uuid[], ARRAY[%s]::integer[], ARRAY[%s]::text[],
    ARRAY[%s]::text[], ARRAY['']::text[], ARRAY['']::text[], ARRAY[%s]::timestamptz[]
)
"""
UNCLAIM = """
UPDATE events.outbox_records
SET state = 'pending', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
WHERE id = ANY(%s)
"""
RECORD_OF = (
    "SELECT id FROM events.outbox_records WHERE domain_event_id = %s ORDER BY created_at DESC"
)


class EventRows:
    """Appends and drives events in one test database (superuser URL)."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url

    async def connect(self, role: str | None) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(self.database_url, autocommit=True)
        if role is not None:
            await conn.execute(f"SET ROLE {role}")  # a constant role name
        return conn

    async def setup(self) -> None:
        """Register the demo module, its type and version, and its producer role."""
        async with await self.connect(None) as conn:
            await conn.execute(SETUP)

    async def append(
        self, organization_id: UUID, aggregate_id: str = "a-1", *, key: str | None = None
    ) -> UUID:
        """Append one demo event; return its id."""
        async with await self.connect(PRODUCER) as conn:
            cursor = await conn.execute(
                APPEND,
                (organization_id, aggregate_id, key or str(uuid.uuid4()), Jsonb({"n": 1})),
            )
            row = await cursor.fetchone()
        assert row is not None
        return UUID(str(row[0]))

    async def claim(self, limit: int = 100) -> list[tuple[UUID, UUID, int, UUID]]:
        """Lease due records as the worker: (record id, event id, attempts, lease token)."""
        async with await self.connect(WORKER) as conn:
            cursor = await conn.execute(CLAIM, ("tests", limit))
            return [tuple(row) for row in await cursor.fetchall()]

    async def _record(
        self, outcome: str, failure_class: str | None, event_ids: Sequence[UUID]
    ) -> None:
        claimed = {row[1]: row for row in await self.claim()}
        async with await self.connect(WORKER) as conn:
            for event_id in event_ids:
                record_id, _, attempts, token = claimed.pop(event_id)
                cursor = await conn.execute(
                    RECORD, (record_id, token, attempts + 1, outcome, failure_class, None)
                )
                assert [("recorded",)] == await cursor.fetchall()
        if claimed:  # put back what this call did not mean to take, as if never claimed
            async with await self.connect(None) as conn:
                await conn.execute("SET session_replication_role = replica")
                await conn.execute(UNCLAIM, ([row[0] for row in claimed.values()],))

    async def publish(self, *event_ids: UUID) -> None:
        """Claim and record each event (now the head of its aggregate) as published."""
        await self._record("published", None, event_ids)

    async def dead_letter(self, *event_ids: UUID, failure_class: str = "REJECTED") -> None:
        """Claim and record each event (now the head of its aggregate) as dead-lettered."""
        await self._record("dead_letter", failure_class, event_ids)

    async def records(self, event_id: UUID) -> list[UUID]:
        """The event's outbox records, newest first."""
        return [row[0] for row in await self.rows(RECORD_OF, event_id)]

    async def rows(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run ``query`` as the superuser; its rows."""
        async with await self.connect(None) as conn:
            cursor = await conn.execute(query, params)
            return await cursor.fetchall() if cursor.description else []

    async def age(self, event_id: UUID, by: timedelta) -> None:
        """Move the event's final records (and dead letters) ``by`` into the past."""
        async with await self.connect(None) as conn:
            # The final-state trigger refuses updates of final records; the owner may lift it
            # for a test's time travel.
            await conn.execute("SET session_replication_role = replica")
            await conn.execute(
                "UPDATE events.outbox_records SET published_at = published_at - %s,"
                " dead_lettered_at = dead_lettered_at - %s WHERE domain_event_id = %s",
                (by, by, event_id),
            )
            await conn.execute(
                "UPDATE events.dead_letters SET dead_lettered_at = dead_lettered_at - %s"
                " WHERE domain_event_id = %s",
                (by, event_id),
            )

    async def add_staff(self, email: str = "staff@example.com") -> UUID:
        """An identity with a verified e-mail, made staff by the database operator."""
        identity_id = uuid.uuid4()
        await self.rows(
            "INSERT INTO identity.identities (id, created_at) VALUES (%s, now())", identity_id
        )
        await self.rows(
            "INSERT INTO identity.login_identifiers (value, channel, identity_id, created_at,"
            " verified_at) VALUES (%s, 'email', %s, now(), now())",
            email,
            identity_id,
        )
        await self.rows("SELECT * FROM outbox.grant_staff(%s)", email)
        return identity_id

    async def dead_record(self, event_id: UUID) -> UUID:
        """The dead-lettered record of the event (its dead letter's id)."""
        [(record_id,)] = await self.rows(
            "SELECT outbox_record_id FROM events.dead_letters WHERE domain_event_id = %s"
            " AND resolution IS NULL",
            event_id,
        )
        return UUID(str(record_id))
