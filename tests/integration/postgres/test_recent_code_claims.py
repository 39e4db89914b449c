"""Recent claims of the security outbox (0059): a claim bounded by a window starts at the
later of the claim floor and the window's start, so under a held xmin horizon it never walks
the dead versions between the two; a full claim (from the floor) still takes whatever lies
below the window, and the worker's store makes one at least every second, for its batches
and for its reserved slot each, and after any claim that came back full.

What the indexes returned is read from the claiming transaction's own counters, never from a
clock; the store's schedule runs on a clock the test turns.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import psycopg
import pytest

from outbox.adapters.postgres.dispatch_store import FULL_CLAIM_EVERY, PostgresDispatchStore
from outbox.adapters.postgres.work_listener import WorkListener
from tests.outbox_sql import RECORD, published

pytestmark = pytest.mark.integration

ENQUEUE = """
SELECT outbox.enqueue_message(
    p_id => g.id, p_purpose => 'notification', p_channel => 'email',
    p_destination => 'person@example.com', p_subject_id => NULL, p_template => 'hello',
    p_priority => %s::integer
)
FROM unnest(%s::uuid[]) AS g (id)
"""
BACKDATE = (
    "UPDATE outbox.messages SET available_at = available_at - interval '1 minute'"
    " WHERE id = ANY (%s)"
)
FUNCTIONS = ("outbox.claim_messages", "outbox.claim_urgent_messages")
INDEXES = ("outbox.messages_claim_order", "outbox.messages_claim_by_priority")
ENTRIES = "SELECT pg_stat_get_xact_tuples_returned(%s::regclass)"
PUBLISHED = 300


async def _enqueue(connect_as, count: int = 1, *, priority: int = 1) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(count)]
    async with connect_as("outbox_producer") as conn:
        await conn.execute(ENQUEUE, (priority, ids))
    return ids


async def _backdate(connect_as, ids: list[uuid.UUID]) -> None:
    """Make the messages claimable a minute ago: below any window, as a late commit would."""
    async with connect_as() as conn:
        await conn.execute(BACKDATE, (ids,))


async def _claim(
    connect_as, function: str, limit: int = 10, window: float | None = None, lease: float = 300
) -> list[uuid.UUID]:
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute(
            f"SELECT id FROM {function}('w', %s, %s, %s)",  # a name from FUNCTIONS
            (limit, lease, window),
        )
        return [row[0] for row in await cursor.fetchall()]


@pytest.mark.parametrize("function", FUNCTIONS)
async def test_a_recent_claim_leaves_what_lies_below_its_window_to_a_full_claim(
    connect_as, function
):
    [late] = await _enqueue(connect_as, priority=2)
    await _backdate(connect_as, [late])
    [recent] = await _enqueue(connect_as, priority=2)

    assert [recent] == await _claim(connect_as, function, window=5.0)
    assert [late] == await _claim(connect_as, function)


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("window", [0.0, -1.0, float("nan"), float("inf"), 3601.0])
async def test_a_window_outside_an_hour_is_refused(connect_as, function, window):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_window_seconds"):
        await _claim(connect_as, function, window=window)


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("lease", [float("nan"), float("inf")])
async def test_a_lease_that_is_not_finite_is_refused(connect_as, function, lease):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_lease_seconds"):
        await _claim(connect_as, function, lease=lease)


async def _empty_claim_entries(connect_as, window: float | None) -> int:
    """The claim index entries one claim that finds nothing reads, from its own counters."""
    async with connect_as(autocommit=False) as conn:
        before = [(await (await conn.execute(ENTRIES, (i,))).fetchone())[0] for i in INDEXES]
        await conn.execute("SET LOCAL ROLE outbox_worker")
        assert (
            []
            == await (
                await conn.execute(
                    "SELECT id FROM outbox.claim_messages('w', 10, 300, %s)", (window,)
                )
            ).fetchall()
        )
        await conn.execute("RESET ROLE")
        after = [(await (await conn.execute(ENTRIES, (i,))).fetchone())[0] for i in INDEXES]
        await conn.commit()
    return int(sum(after) - sum(before))


async def test_a_recent_claim_under_a_held_horizon_reads_no_dead_version(connect_as):
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        await _enqueue(connect_as, PUBLISHED)
        async with connect_as("outbox_worker") as conn:  # the first claim stores the floor
            while batch := await (
                await conn.execute(
                    "SELECT id, lease_token, attempt_count FROM outbox.claim_messages('w', 50, 300)"
                )
            ).fetchall():
                results = await (await conn.execute(RECORD, published(batch))).fetchall()
                assert {"recorded"} == {row[0] for row in results}
        await asyncio.sleep(0.3)  # the messages' last versions lie below a window of 0.2 s

        full = await _empty_claim_entries(connect_as, None)
        recent = await _empty_claim_entries(connect_as, 0.2)
        await holder.rollback()

    print(f"an empty claim after {PUBLISHED} published, held: full {full}, recent {recent}")
    assert full >= PUBLISHED  # the dead versions between the floor and now
    assert recent < 10


@pytest.mark.parametrize("urgent", [False, True])
async def test_the_store_claims_in_full_at_first_every_second_and_after_a_full_batch(
    connect_as, database_url, worker_pool, urgent
):
    now = [1000.0]
    store = PostgresDispatchStore(worker_pool, WorkListener(database_url), clock=lambda: now[0])

    async def claimed(limit: int = 10) -> set[uuid.UUID]:
        batch = await store.claim(
            owner="w1", limit=limit, lease=timedelta(minutes=5), urgent=urgent
        )
        return {c.id for c in batch}

    async def late() -> uuid.UUID:
        [message] = await _enqueue(connect_as, priority=2)
        await _backdate(connect_as, [message])
        return message

    first = await late()
    assert {first} == await claimed()  # the first claim is full

    second = await late()
    now[0] += 0.5
    assert set() == await claimed()  # a recent claim: the late message lies below its window
    now[0] += FULL_CLAIM_EVERY.total_seconds()
    assert {second} == await claimed()  # a second on: full again

    third = await late()
    fresh = set(await _enqueue(connect_as, 2, priority=2))
    now[0] += 0.1
    assert fresh == await claimed(limit=2)  # recent, and full-sized: perhaps behind
    now[0] += 0.1
    assert {third} == await claimed()  # so the next claim reads everything due
