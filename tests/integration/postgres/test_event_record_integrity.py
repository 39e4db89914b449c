"""An event always keeps an outbox record while it exists (issue 28, read in the code).

The finding: an event's outbox record could be deleted after commit (by the owner, a
migration, a hand-written clean-up), leaving an event nobody will ever publish and no
dead letter to say so. A deferred constraint trigger refuses that commit; deleting the
event itself (retention does) still takes its records with it.
"""

from __future__ import annotations

import uuid

import pytest
from psycopg import errors

from tests.events_sql import SALES, append, onboard, rows

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000002")


@pytest.fixture
async def event(connect_as) -> uuid.UUID:
    async with connect_as() as conn:
        await onboard(conn)
    async with connect_as(SALES) as conn:
        return await append(conn, ORG, "order-1", payload={"total": 1})


async def test_an_events_last_record_cannot_be_deleted(connect_as, event):
    async with connect_as("outbox_owner") as conn:
        with pytest.raises(errors.IntegrityConstraintViolation):
            await conn.execute(
                "DELETE FROM events.outbox_records WHERE domain_event_id = %s", (event,)
            )
    async with connect_as() as conn:
        assert [(1,)] == await rows(
            conn, f"SELECT count(*) FROM events.outbox_records WHERE domain_event_id = '{event}'"
        )


async def test_deleting_the_event_takes_its_records_with_it(connect_as, event):
    async with connect_as("outbox_owner") as conn:
        await conn.execute("DELETE FROM events.domain_events WHERE id = %s", (event,))
    async with connect_as() as conn:
        assert [(0,)] == await rows(conn, "SELECT count(*) FROM events.outbox_records")
