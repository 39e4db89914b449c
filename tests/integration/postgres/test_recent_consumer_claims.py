"""Recent consumer claims (0059): a consumer's claim bounded by a window reads only what became
due within it, so under a held xmin horizon it never walks the dead versions of the deliveries
the consumer completed; a full claim still takes whatever lies below the window, and the
store makes one at least every two seconds and after any claim that came back full.

What the indexes returned is read from the claiming transaction's own counters, never from a
clock; the store's schedule runs on a clock the test turns.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from outbox.adapters.postgres.claim_window import FULL_CLAIM_EVERY
from outbox.adapters.postgres.consumer_store import PostgresConsumerStore
from outbox.adapters.postgres.pool import open_pool
from tests.consumer_rows import (
    RECORD_BATCH,
    completed_batch,
    consumer_role,
    define_type,
    publish,
)
from tests.events_sql import INDEX_ENTRIES

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000d1")
OTHER = uuid.UUID("0190bbbb-0000-7000-8000-0000000000d2")
CONSUMER = "shop.fulfilment"
COMPLETED = 300
CLAIM = "SELECT * FROM events.claim_consumer_deliveries(%s, 'test', %s, %s, %s)"
BACKDATE = (
    "UPDATE events.consumer_deliveries SET available_at = available_at - interval '1 minute'"
    " WHERE domain_event_id = ANY (%s)"
)


@pytest.fixture
async def shop(connect_as) -> AsyncIterator[tuple[psycopg.AsyncConnection, str]]:
    """An ordered consumer of the shop module, a superuser connection and the module's role."""
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute("SELECT events.register_consumer(%s, 'shop')", (CONSUMER,))
        await owner.execute("SELECT events.subscribe(%s, 'sales.order_placed', 1, 1)", (CONSUMER,))
        async with consumer_role(owner, "shop") as role:
            yield owner, role


async def _published(owner: psycopg.AsyncConnection, org: uuid.UUID, aggregate: str) -> uuid.UUID:
    """One event published to the consumer: its delivery is due now."""
    published = await publish(
        owner, organization_id=org, event_type="sales.order_placed", aggregate=("order", aggregate)
    )
    return published.event_id


async def _late(owner: psycopg.AsyncConnection, org: uuid.UUID, aggregate: str) -> uuid.UUID:
    """An event whose delivery became due a minute ago: below any window, as a publication's
    late commit would leave it."""
    event = await _published(owner, org, aggregate)
    await owner.execute(BACKDATE, ([event],))
    return event


async def _claim(
    connect_as,
    role: str,
    limit: int = 10,
    window: float | None = None,
    lease: float = 60.0,
) -> list[dict[str, Any]]:
    """One claim as the consumer's role, committed: a full one, or with ``window`` recent."""
    async with connect_as(autocommit=False) as conn:
        await conn.execute(f"SET LOCAL ROLE {role}")
        cursor = await conn.execute(CLAIM, (CONSUMER, limit, lease, window))
        columns = [c.name for c in cursor.description or ()]
        claimed = [dict(zip(columns, row, strict=True)) for row in await cursor.fetchall()]
        await conn.commit()
    return claimed


async def _claimed_events(connect_as, role: str, limit: int = 10, window: float | None = None):
    return {row["domain_event_id"] for row in await _claim(connect_as, role, limit, window)}


async def _complete(connect_as, role: str, batch: list[dict[str, Any]]) -> list[str]:
    async with connect_as(autocommit=False) as conn:
        await conn.execute(f"SET LOCAL ROLE {role}")
        cursor = await conn.execute(RECORD_BATCH, completed_batch(batch))
        answers = [result for (result,) in await cursor.fetchall()]
        await conn.commit()
    return answers


async def test_a_recent_claim_leaves_what_lies_below_its_window_to_a_full_claim(shop, connect_as):
    owner, role = shop
    late = await _late(owner, ORG, "order-late")
    recent = await _published(owner, OTHER, "order-recent")

    assert {recent} == await _claimed_events(connect_as, role, window=5.0)
    assert {late} == await _claimed_events(connect_as, role)


async def test_a_recent_claim_serves_organizations_by_rank(shop, connect_as):
    """Ten deliveries of one organization, then one of another: a recent claim of two takes
    the oldest of each, as a full claim's shares do."""
    owner, role = shop
    busy = [await _published(owner, ORG, f"order-{n}") for n in range(10)]
    quiet = await _published(owner, OTHER, "order-quiet")

    assert {busy[0], quiet} == await _claimed_events(connect_as, role, 2, window=5.0)


async def test_a_handed_on_delivery_is_due_to_a_recent_claim(shop, connect_as):
    """An aggregate's next delivery, published long before its predecessor was completed, is
    due from the hand-on: a recent claim takes it."""
    owner, role = shop
    first = await _late(owner, ORG, "order-1")
    second = await _late(owner, ORG, "order-1")
    batch = await _claim(connect_as, role)
    assert [first] == [row["domain_event_id"] for row in batch]
    assert ["recorded"] == await _complete(connect_as, role, batch)

    assert {second} == await _claimed_events(connect_as, role, window=5.0)


@pytest.mark.parametrize("window", [0.0, -1.0, float("nan"), float("inf"), 3601.0])
async def test_a_window_outside_an_hour_is_refused(shop, connect_as, window):
    _, role = shop
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_window_seconds"):
        await _claim(connect_as, role, window=window)


@pytest.mark.parametrize("lease", [float("nan"), float("inf")])
async def test_a_lease_that_is_not_finite_is_refused(shop, connect_as, lease):
    _, role = shop
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_lease_seconds"):
        await _claim(connect_as, role, lease=lease)


async def _empty_claim_entries(connect_as, role: str, window: float | None) -> int:
    """The index entries one claim that finds nothing reads, from its own counters."""
    async with connect_as(autocommit=False) as conn:
        [(before,)] = await (await conn.execute(INDEX_ENTRIES)).fetchall()
        await conn.execute(f"SET LOCAL ROLE {role}")
        cursor = await conn.execute(CLAIM, (CONSUMER, 10, 60.0, window))
        assert [] == await cursor.fetchall()
        await conn.execute("RESET ROLE")
        [(after,)] = await (await conn.execute(INDEX_ENTRIES)).fetchall()
        await conn.commit()
    return int(after - before)


async def test_a_recent_claim_under_a_held_horizon_reads_no_dead_delivery(shop, connect_as):
    """Even planned from statistics gathered under the hold, which sample no live delivery:
    the window's scan avoids the sorts that would let the planner read another index whole."""
    owner, role = shop
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        for n in range(COMPLETED):
            await _published(owner, ORG, f"order-{n % 8}")
        while batch := await _claim(connect_as, role, 50):  # each leaves dead versions
            assert {"recorded"} == set(await _complete(connect_as, role, batch))
        await asyncio.sleep(0.3)  # the deliveries' last versions lie below a window of 0.2 s
        await owner.execute("ANALYZE events.consumer_deliveries")  # no live delivery sampled

        full = await _empty_claim_entries(connect_as, role, None)
        recent = await _empty_claim_entries(connect_as, role, 0.2)
        await holder.rollback()

    print(f"an empty claim after {COMPLETED} completed, held: full {full}, recent {recent}")
    assert full >= COMPLETED  # what the window spares
    assert recent < 10  # a few lookups by key, however many versions the hold kept


async def test_the_store_claims_in_full_at_first_every_two_seconds_and_after_a_full_batch(
    shop, database_url
):
    owner, role = shop
    now = [1000.0]
    pool = await open_pool(database_url, max_size=2)
    store = PostgresConsumerStore(pool, act_as=role, clock=lambda: now[0])

    async def claimed(limit: int = 10) -> set[uuid.UUID]:
        batch = await store.claim(
            consumer=CONSUMER, owner="w1", limit=limit, lease=timedelta(minutes=5)
        )
        return {delivery.event.event_id for delivery in batch}

    try:
        first = await _late(owner, ORG, "order-1")
        assert {first} == await claimed()  # the first claim is full

        second = await _late(owner, ORG, "order-2")
        now[0] += 1.0
        assert set() == await claimed()  # a recent claim: the late delivery lies below it
        now[0] += FULL_CLAIM_EVERY.total_seconds()
        assert {second} == await claimed()  # two seconds on: full again

        third = await _late(owner, ORG, "order-3")
        fresh = {await _published(owner, OTHER, f"order-{n}") for n in range(2)}
        now[0] += 0.1
        assert fresh == await claimed(limit=2)  # recent, and full-sized: perhaps behind
        now[0] += 0.1
        assert {third} == await claimed()  # so the next claim reads everything due
    finally:
        await pool.close()
