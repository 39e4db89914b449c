"""A claim walks no dead versions below the oldest live message (0047_claim_floor.sql).

Under a held xmin horizon the claim index keeps an entry for every version of every message
since the hold began; a claim used to walk all of them. It now starts at a floor (the oldest
live claimable_at, less one second: 0048) that the worker refreshes every second off the claims'
path; between whole walks the refresh itself starts five seconds below the last floor (0052).
What the index returned is read from the claiming transaction's own counters
(``pg_stat_get_xact_tuples_returned``), never from a clock.
"""

from __future__ import annotations

import contextlib
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
# The versions AGE leaves are not a hold's: a scan that reached them (they are as new as the
# floor's margin) before anything killed them would count them.
VACUUM = "VACUUM outbox.messages"


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


@contextlib.asynccontextmanager
async def _held_over_dead_versions(connect_as):
    """A session holding the horizon over DEAD_VERSIONS dead versions an hour old, below any
    floor from now on (their messages claimed under the hold); the holder's connection."""
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (DEAD_VERSIONS,))
    async with connect_as() as conn:
        await conn.execute(AGE)
        await conn.execute(VACUUM)
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        # Claiming them leaves a dead version of each in both claim indexes, unvacuumable.
        assert DEAD_VERSIONS == len(await _claim(connect_as, DEAD_VERSIONS))
        yield holder


async def _a_late_commit_below_the_floor(connect_as) -> None:
    """A floor computed by a claim, then a message below it: a producer that enqueued long
    before its commit (an hour), as a message's time is its transaction's start."""
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    assert 1 == len(await _claim(connect_as, 10))  # computes the floor
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (1,))
    async with connect_as() as conn:
        await conn.execute(AGE + " WHERE state = 'pending'")


async def test_a_claim_under_a_held_horizon_walks_no_dead_version_below_the_floor(connect_as):
    async with _held_over_dead_versions(connect_as) as holder:
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
    await _a_late_commit_below_the_floor(connect_as)

    waiting = await _claim(connect_as, 10)
    async with connect_as("outbox_worker") as conn:  # the worker's refresh, a second later
        await conn.execute("SELECT outbox.refresh_claim_floor()")
    taken = await _claim(connect_as, 10)

    assert [] == waiting  # below the floor until the next refresh, at most a second away
    assert 1 == len(taken)


async def test_with_no_worker_refreshing_it_a_claim_computes_a_stale_floor(connect_as):
    await _a_late_commit_below_the_floor(connect_as)
    async with connect_as() as conn:
        # Eleven seconds without a refresh (a drain, or an old worker that does not run one).
        await conn.execute(
            "UPDATE outbox.claim_floor SET computed_at = computed_at - interval '11 seconds'"
        )

    assert 1 == len(await _claim(connect_as, 10))


# The next whole walk (0052): between whole walks a refresh starts 5 s below the last floor.
WALK_LATER = "UPDATE outbox.claim_floor SET walk_due_at = now() + interval '1 minute'"
WALK_NOW = "UPDATE outbox.claim_floor SET walk_due_at = now() - interval '1 second'"
WALK_DUE = "SELECT computed_at, walk_due_at FROM outbox.claim_floor"
REFRESH = "SELECT outbox.refresh_claim_floor()"


async def _refresh_reading(connect_as) -> dict[str, int]:
    """The worker's refresh, and the claim index entries it read, in one transaction."""
    async with connect_as(autocommit=False) as conn:
        before = await _entries_read(conn)
        await conn.execute("SET LOCAL ROLE outbox_worker")
        await conn.execute(REFRESH)
        await conn.execute("RESET ROLE")
        after = await _entries_read(conn)
        await conn.commit()
    return {index: after[index] - before[index] for index in INDEXES}


async def test_between_whole_walks_a_refresh_walks_no_dead_version_below_the_floor(connect_as):
    async with _held_over_dead_versions(connect_as) as holder:
        async with connect_as("outbox_producer") as conn:
            await conn.execute(NOTIFICATIONS, (1,))
        whole = await _refresh_reading(connect_as)  # no walk is scheduled yet: a whole one
        async with connect_as() as conn:
            await conn.execute(WALK_LATER)  # as after a costly whole walk

        stepped = await _refresh_reading(connect_as)

        await holder.rollback()

    assert sum(whole.values()) >= DEAD_VERSIONS  # every dead version, the first time
    assert all(entries < 100 for entries in stepped.values()), stepped
    assert 1 == len(await _claim(connect_as, 10))  # the floor is right: the live one is found


async def test_a_late_commit_below_a_stepped_floor_waits_for_the_next_whole_walk(connect_as):
    await _a_late_commit_below_the_floor(connect_as)
    async with connect_as() as conn:
        await conn.execute(WALK_LATER)
    async with connect_as("outbox_worker") as conn:
        await conn.execute(REFRESH)  # a step: starts 5 s below the last floor
    waiting = await _claim(connect_as, 10)
    async with connect_as() as conn:
        await conn.execute(WALK_NOW)
    async with connect_as("outbox_worker") as conn:
        await conn.execute(REFRESH)  # the whole walk, now due

    taken = await _claim(connect_as, 10)

    assert [] == waiting
    assert 1 == len(taken)


async def test_a_whole_walk_schedules_the_next_within_a_minute(connect_as):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (10,))
    async with connect_as("outbox_worker") as conn:
        await conn.execute(REFRESH)
    async with connect_as() as conn:
        [(computed_at, due)] = await (await conn.execute(WALK_DUE)).fetchall()

    # A cheap walk (a clean index) leaves the next refresh whole too; a costly one schedules
    # the next whole walk fifty times its cost later, at most a minute.
    assert due is None or computed_at < due <= computed_at + timedelta(minutes=1)


async def test_a_claim_whose_fair_slots_come_back_short_walks_no_level_again(connect_as):
    """Under a hold, codes claimed since the floor leave a dead version each in both claim
    indexes. An empty claim's fair scan walks them once; its scans by priority, which could
    find nothing the fair scan did not, no longer walk them again (0060)."""
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        async with connect_as("outbox_producer") as conn:
            await conn.execute(NOTIFICATIONS, (300,))
        assert 300 == len(await _claim(connect_as, 300))  # computes the floor below them

        claimed, read = await _claim_reading(connect_as, 10)

        await holder.rollback()

    assert [] == claimed
    assert read["outbox.messages_claim_order"] >= 300, read  # the fair scan: one walk
    assert read["outbox.messages_claim_by_priority"] < 10, read  # before 0060: 300 again
