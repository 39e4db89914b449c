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

from tests.database_reset import vacuum_what_resets_left
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
        await vacuum_what_resets_left(conn, "events.outbox_records")


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


HEADS = ("events.outbox_records_heads_due", "events.outbox_records_heads_by_organization")
OTHER_ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000c2")
AGGREGATES = 40


async def _heads_read(conn) -> dict[str, int]:
    read = {}
    for index in HEADS:
        query = f"SELECT pg_stat_get_xact_tuples_returned('{index}'::regclass)"
        [(entries,)] = await rows(conn, query)
        read[index] = int(entries)
    return read


async def test_a_claim_under_a_held_horizon_walks_no_other_organizations_dead_heads(
    onboarded, connect_as
):
    """0054: an organization's share reads its own heads, not the claim-order index with the
    organization as a filter, and the last fill, which would find nothing, is skipped."""
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        async with connect_as(SALES) as conn:  # one organization's former heads, kept
            for n in range(AGGREGATES):
                await append(conn, OTHER_ORG, f"gone-{n}")
        async with connect_as("outbox_worker") as conn:
            assert ["recorded"] * AGGREGATES == await record(conn, await claim(conn, 100))
        async with connect_as(SALES) as conn:
            for n in range(3):
                await append(conn, ORG, f"live-{n}")
        async with connect_as(autocommit=False) as conn:
            before = await _heads_read(conn)
            await conn.execute("SET LOCAL ROLE outbox_worker")
            batch = await claim(conn, 100)
            await conn.execute("RESET ROLE")
            after = await _heads_read(conn)
            await conn.commit()
        await holder.rollback()

    assert {ORG} == {c["organization_id"] for c in batch}
    assert 3 == len(batch)
    read = {index: after[index] - before[index] for index in HEADS}
    # Before 0054 the share and the fill each walked the other organization's dead heads
    # (two versions each) in claim order. What is left is one walk of them, by the probe for
    # the next organization with a head (the design that removes it: docs/benchmarks.md).
    assert read["events.outbox_records_heads_due"] == 0, read
    assert read["events.outbox_records_heads_by_organization"] <= 2 * AGGREGATES + 10, read
