"""A claim walks no dead versions below the oldest live message (0047_claim_floor.sql).

Under a held xmin horizon the claim index keeps an entry for every version of every message
since the hold began; a claim used to walk all of them. It now starts at a floor (the oldest
live claimable_at, less one second: 0048) that the worker refreshes every second off the claims'
path. What the index returned is read from the claiming transaction's own counters
(``pg_stat_get_xact_tuples_returned``), never from a clock.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

pytestmark = pytest.mark.integration

LEASE = timedelta(minutes=5)
DEAD_VERSIONS = 3000
NOTIFICATIONS = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'notification', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => NULL, p_template => 'hello'
)
FROM generate_series(1, %s)
"""
# The index entries this transaction's scans returned so far (its own counters: nothing
# another backend flushes late can land in them).
READ = "SELECT pg_stat_get_xact_tuples_returned(%s::regclass)"
INDEXES = ("outbox.messages_claim_order", "outbox.messages_claim_by_priority")
CLAIM = "SELECT id FROM outbox.claim_messages('w', %s, 300)"
AGE = "UPDATE outbox.messages SET available_at = available_at - interval '1 hour'"


async def _entries_read(conn) -> dict[str, int]:
    read = {}
    for index in INDEXES:
        cursor = await conn.execute(READ, (index,))
        [(entries,)] = await cursor.fetchall()
        read[index] = int(entries)
    return read


async def _claim(connect_as, limit: int) -> list[object]:
    claimed, _ = await _claim_reading(connect_as, limit)
    return claimed


async def _claim_reading(connect_as, limit: int) -> tuple[list[object], dict[str, int]]:
    """Claim, and count the claim index entries the claim returned, in one transaction."""
    async with connect_as(autocommit=False) as conn:
        before = await _entries_read(conn)
        await conn.execute("SET LOCAL ROLE outbox_worker")
        cursor = await conn.execute(CLAIM, (limit,))
        claimed = [row[0] for row in await cursor.fetchall()]
        await conn.execute("RESET ROLE")
        after = await _entries_read(conn)
        await conn.commit()
    return claimed, {index: after[index] - before[index] for index in INDEXES}


async def test_a_claim_under_a_held_horizon_walks_no_dead_version_below_the_floor(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (DEAD_VERSIONS,))
    async with connect_as() as conn:
        await conn.execute(AGE)  # an hour old: below any floor from now on
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        # Claiming them leaves a dead version of each in both claim indexes, unvacuumable.
        assert DEAD_VERSIONS == len(await _claim(connect_as, DEAD_VERSIONS))
        async with connect_as("outbox_producer") as conn:
            await conn.execute(NOTIFICATIONS, (1,))
        async with connect_as("outbox_worker") as conn:  # the worker's refresh: one walk
            await conn.execute("SELECT outbox.refresh_claim_floor()")
        assert 1 == len(await _claim(connect_as, 10))
        async with connect_as("outbox_producer") as conn:
            await conn.execute(NOTIFICATIONS, (1,))

        claimed, read = await _claim_reading(connect_as, 10)  # the floor is fresh: no recompute

        await holder.rollback()

    assert 1 == len(claimed)
    # Without the floor each scan returned every dead version (3,000 and more).
    assert all(entries < 100 for entries in read.values()), read


async def test_a_message_below_a_fresh_floor_is_claimed_once_it_is_recomputed(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    assert 1 == len(await _claim(connect_as, 10))  # computes the floor
    # A producer that enqueued long before its commit: its message's time is below the floor.
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    async with connect_as() as conn:
        await conn.execute(AGE + " WHERE state = 'pending'")

    waiting = await _claim(connect_as, 10)
    async with connect_as("outbox_worker") as conn:  # the worker's refresh, a second later
        await conn.execute("SELECT outbox.refresh_claim_floor()")
    taken = await _claim(connect_as, 10)

    assert [] == waiting  # below the floor until the next refresh, at most a second away
    assert 1 == len(taken)


async def test_with_no_worker_refreshing_it_a_claim_computes_a_stale_floor(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    assert 1 == len(await _claim(connect_as, 10))  # computes the floor
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    async with connect_as() as conn:
        await conn.execute(AGE + " WHERE state = 'pending'")
        # Eleven seconds without a refresh (a drain, or an old worker that does not run one).
        await conn.execute(
            "UPDATE outbox.claim_floor SET computed_at = computed_at - interval '11 seconds'"
        )

    assert 1 == len(await _claim(connect_as, 10))
