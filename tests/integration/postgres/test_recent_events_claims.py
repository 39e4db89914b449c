"""Recent events claims (0058): a claim bounded by a window reads only what became claimable
within it, so under a held xmin horizon it never walks the dead versions of earlier heads; a
full claim still takes whatever lies below the window, and the worker's store makes one at
least every two seconds and after any claim that came back full.

What the indexes returned is read from the claiming transaction's own counters, never from a
clock; the store's policy runs on a clock the test turns.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import psycopg
import pytest

from outbox.adapters.postgres.claim_window import FULL_CLAIM_EVERY
from outbox.adapters.postgres.event_outbox_store import PostgresEventOutboxStore
from outbox.adapters.postgres.work_listener import EVENTS_CHANNEL, WorkListener
from tests.events_sql import INDEX_ENTRIES, SALES, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000d1")
OTHER = uuid.UUID("0190bbbb-0000-7000-8000-0000000000d2")
PUBLISHED = 300
BACKDATE = (
    "UPDATE events.outbox_records SET available_at = available_at - interval '1 minute'"
    " WHERE domain_event_id = ANY (%s)"
)


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def _backdate(connect_as, *events: uuid.UUID) -> None:
    """Make the events' records claimable a minute ago: below any window, as a producer's
    late commit would leave them."""
    async with connect_as() as conn:
        await conn.execute(BACKDATE, (list(events),))


async def _claimed_events(
    connect_as, limit: int = 10, window: float | None = None
) -> set[uuid.UUID]:
    """The events one claim as the worker leased: a full one, or with ``window`` recent."""
    async with connect_as("outbox_worker") as conn:
        return {c["event_id"] for c in await claim(conn, limit, window=window)}


async def test_a_recent_claim_leaves_what_lies_below_its_window_to_a_full_claim(
    onboarded, connect_as
):
    async with connect_as(SALES) as conn:
        late = await append(conn, ORG, "order-late")
        recent = await append(conn, OTHER, "order-recent")
    await _backdate(connect_as, late)

    assert {recent} == await _claimed_events(connect_as, window=5.0)
    assert {late} == await _claimed_events(connect_as)


async def test_a_recent_claim_serves_organizations_by_rank(onboarded, connect_as):
    """Ten heads of one organization, then one of another: a recent claim of two takes the
    oldest of each, as a full claim's shares do."""
    async with connect_as(SALES) as conn:
        busy = [await append(conn, ORG, f"order-{n}") for n in range(10)]
        quiet = await append(conn, OTHER, "order-quiet")

    assert {busy[0], quiet} == await _claimed_events(connect_as, 2, window=5.0)


async def test_a_promoted_head_is_claimable_by_a_recent_claim(onboarded, connect_as):
    """An aggregate's next event, appended long before its predecessor was published, is
    claimable from its promotion on: a recent claim takes it."""
    async with connect_as(SALES) as conn:
        first = await append(conn, ORG, "order-1")
        second = await append(conn, ORG, "order-1")
    await _backdate(connect_as, first, second)
    async with connect_as("outbox_worker") as conn:
        batch = await claim(conn, 10)
        assert [first] == [c["event_id"] for c in batch]
        assert ["recorded"] == await record(conn, batch)

    assert {second} == await _claimed_events(connect_as, window=5.0)


@pytest.mark.parametrize("window", [0.0, -1.0, float("nan"), float("inf"), 3601.0])
async def test_a_window_outside_an_hour_is_refused(onboarded, connect_as, window):
    async with connect_as("outbox_worker") as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_window_seconds"):
            await claim(conn, 10, window=window)


@pytest.mark.parametrize("lease", [float("nan"), float("inf")])
async def test_a_lease_that_is_not_finite_is_refused(onboarded, connect_as, lease):
    async with connect_as("outbox_worker") as conn:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_lease_seconds"):
            await claim(conn, 10, lease=lease)


async def _empty_claim_entries(connect_as, window: float | None) -> int:
    """The index entries one claim that finds nothing reads, from its own counters."""
    async with connect_as(autocommit=False) as conn:
        [(before,)] = await rows(conn, INDEX_ENTRIES)
        await conn.execute("SET LOCAL ROLE outbox_worker")
        assert [] == await claim(conn, 10, window=window)
        await conn.execute("RESET ROLE")
        [(after,)] = await rows(conn, INDEX_ENTRIES)
        await conn.commit()
    return int(after - before)


async def test_a_recent_claim_under_a_held_horizon_reads_no_dead_head(onboarded, connect_as):
    """Even planned from statistics gathered under the hold, which sample no live head: the
    claim avoids the sorts that would let the planner read another partial index whole."""
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        async with connect_as(SALES) as conn:
            for n in range(PUBLISHED):
                await append(conn, ORG, f"order-{n % 8}")
        async with connect_as("outbox_worker") as conn:
            while batch := await claim(conn, 50):  # each leaves its versions in the indexes
                assert {"recorded"} == set(await record(conn, batch))
        await asyncio.sleep(0.3)  # the heads' last versions lie below a window of 0.2 s
        async with connect_as() as owner:  # as autovacuum would: no live head sampled
            await owner.execute("ANALYZE events.outbox_records")

        full = await _empty_claim_entries(connect_as, None)
        recent = await _empty_claim_entries(connect_as, 0.2)
        await holder.rollback()

    print(f"an empty claim after {PUBLISHED} published, held: full {full}, recent {recent}")
    assert full >= PUBLISHED  # what the window spares
    assert recent < 10  # a few lookups by key, however many versions the hold kept


async def test_the_store_claims_in_full_at_first_every_two_seconds_and_after_a_full_batch(
    onboarded, connect_as, database_url, worker_pool
):
    now = [1000.0]
    store = PostgresEventOutboxStore(
        worker_pool, WorkListener(database_url, EVENTS_CHANNEL), clock=lambda: now[0]
    )

    async def claimed(limit: int = 10) -> set[uuid.UUID]:
        batch = await store.claim(owner="w1", limit=limit, lease=timedelta(minutes=5))
        return {c.event_id for c in batch}

    async def late(aggregate: str) -> uuid.UUID:
        async with connect_as(SALES) as conn:
            event = await append(conn, ORG, aggregate)
        await _backdate(connect_as, event)
        return event

    first = await late("order-1")
    assert {first} == await claimed()  # the first claim is full

    second = await late("order-2")
    now[0] += 1.0
    assert set() == await claimed()  # a recent claim: the late head lies below its window
    now[0] += FULL_CLAIM_EVERY.total_seconds()
    assert {second} == await claimed()  # two seconds on: full again

    third = await late("order-3")
    async with connect_as(SALES) as conn:
        fresh = {await append(conn, OTHER, f"order-{n}") for n in range(2)}
    now[0] += 0.1
    assert fresh == await claimed(limit=2)  # recent, and full-sized: perhaps behind
    now[0] += 0.1
    assert {third} == await claimed()  # so the next claim reads everything due
