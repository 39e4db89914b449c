"""A published head hands on without walking its aggregate's dead versions (0053).

Under a held xmin horizon every version of every record an aggregate published stays in its
indexes. Publishing a head used to find the next one by walking the aggregate's live records
from the oldest sequence, and checked the head index first: both read every such version.
The next head is now probed from the published one's sequence on. What the indexes returned
is read from the recording transaction's own counters, never from a clock.
"""

from __future__ import annotations

import uuid

import pytest

from tests.events_sql import SALES, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000c1")
PUBLISHED = 300
READ = (
    "SELECT pg_stat_get_xact_tuples_returned('events.outbox_records_live_by_aggregate'::regclass)"
)


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def _publish_one(connect_as) -> tuple[list[str], int]:
    """Claim the aggregate's head and record it published; the result and the entries of
    the live-by-aggregate index the record read."""
    async with connect_as("outbox_worker") as conn:
        batch = await claim(conn, 10)
    assert 1 == len(batch)
    async with connect_as(autocommit=False) as conn:
        [(before,)] = await rows(conn, READ)
        await conn.execute("SET LOCAL ROLE outbox_worker")
        results = await record(conn, batch)
        await conn.execute("RESET ROLE")
        [(after,)] = await rows(conn, READ)
        await conn.commit()
    return results, after - before


async def test_publishing_a_head_under_a_held_horizon_reads_no_dead_version(onboarded, connect_as):
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        async with connect_as(SALES) as conn:
            for _ in range(PUBLISHED + 2):
                await append(conn, ORG, "order-1")
        for _ in range(PUBLISHED):  # each leaves its versions in the aggregate's indexes
            assert ["recorded"] == (await _publish_one(connect_as))[0]

        results, read = await _publish_one(connect_as)
        async with connect_as("outbox_worker") as conn:
            last = await claim(conn, 10)  # the head was handed on: the last one is due
        await holder.rollback()

    assert ["recorded"] == results
    assert 1 == len(last)
    assert read < 20, read  # before 0053: every published version of the aggregate (600+)
