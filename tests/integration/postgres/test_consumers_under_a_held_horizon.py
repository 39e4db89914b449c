"""A consumer's claim, record and fan-out under a held xmin horizon read their own indexes
(0055, 0056).

Under a held horizon every version of every delivery the consumer completed stays in each
index, and an ANALYZE that samples no live delivery sets every partial index over live
deliveries to no entries: each looked free to read whole, and the claim and the record's
promotion walked the lag's index, every dead version of every delivery, several times over.
And the fan-out, asking whether an aggregate had a live delivery, read every version of
every delivery the aggregate ever had to find none. What each index returned is read from
the calling transaction's own counters, never from a clock.
"""

from __future__ import annotations

import uuid

import pytest

from tests.consumer_rows import (
    RECORD_BATCH,
    completed_batch,
    consumer_role,
    define_type,
    publish,
    publish_many,
)

pytestmark = pytest.mark.integration

ORG_A = uuid.UUID("0190aaaa-0000-7000-8000-0000000000d1")
ORG_B = uuid.UUID("0190aaaa-0000-7000-8000-0000000000d2")
COMPLETED = 400  # deliveries completed under the hold: two versions each in the claim indexes
AGGREGATES = 4
CLAIM = "SELECT * FROM events.claim_consumer_deliveries('shop.fulfilment', 'test', %s, 60)"
INDEXES = (
    "events.consumer_deliveries_claim_order",
    "events.consumer_deliveries_claim_by_organization",
    "events.consumer_deliveries_by_aggregate",
    "events.consumer_deliveries_live_age",
)
READ = "SELECT pg_stat_get_xact_tuples_returned(%s::regclass)"


@pytest.fixture
async def shop(connect_as):
    """An ordered consumer of the shop module and the role that runs it."""
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop')")
        await owner.execute(
            "SELECT events.subscribe('shop.fulfilment', 'sales.order_placed', 1, 1)"
        )
        async with consumer_role(owner, "shop") as role:
            yield owner, role


async def _read(conn) -> dict[str, int]:
    read = {}
    for index in INDEXES:
        [(entries,)] = await (await conn.execute(READ, (index,))).fetchall()
        read[index] = int(entries)
    return read


async def _reading(connect_as, role: str, query: str, params: tuple[object, ...]):
    """Run ``query`` as ``role``; its rows and the index entries it read, by index."""
    async with connect_as(autocommit=False) as conn:
        before = await _read(conn)
        await conn.execute(f"SET LOCAL ROLE {role}")
        cursor = await conn.execute(query, params)
        columns = [c.name for c in cursor.description or ()]
        rows = [dict(zip(columns, row, strict=True)) for row in await cursor.fetchall()]
        await conn.execute("RESET ROLE")
        after = await _read(conn)
        await conn.commit()
    return rows, {index: after[index] - before[index] for index in INDEXES}


async def test_a_claim_and_a_record_under_a_held_horizon_walk_no_other_index(shop, connect_as):
    owner, role = shop
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        await publish_many(
            owner,
            organization_ids=[ORG_A],
            event_type="sales.order_placed",
            count=COMPLETED,
            aggregates=AGGREGATES,
        )
        while batch := (await _reading(connect_as, role, CLAIM, (100,)))[0]:
            answers, _ = await _reading(connect_as, role, RECORD_BATCH, completed_batch(batch))
            assert {"recorded"} == {answer["result"] for answer in answers}
        await owner.execute("ANALYZE events.consumer_deliveries")  # no live delivery sampled
        [(live,)] = await (
            await owner.execute(
                "SELECT reltuples FROM pg_class"
                " WHERE oid = 'events.consumer_deliveries_claim_order'::regclass"
            )
        ).fetchall()
        for aggregate in ("b-0", "b-1", "b-0"):  # b-0's second event waits for its first
            await publish(
                owner,
                organization_id=ORG_B,
                event_type="sales.order_placed",
                aggregate=("order", aggregate),
            )

        claimed, claim_read = await _reading(connect_as, role, CLAIM, (50,))
        answers, record_read = await _reading(
            connect_as, role, RECORD_BATCH, completed_batch(claimed)
        )
        following, _ = await _reading(connect_as, role, CLAIM, (50,))
        async with connect_as(autocommit=False) as conn:  # one of ORG_A's aggregates again
            before = await _read(conn)
            await publish(
                conn,
                organization_id=ORG_A,
                event_type="sales.order_placed",
                aggregate=("order", "0"),
            )
            fan_out_read = (await _read(conn))["events.consumer_deliveries_by_aggregate"] - before[
                "events.consumer_deliveries_by_aggregate"
            ]
            await conn.commit()
        [(state,)] = await (
            await owner.execute(
                "SELECT state FROM events.consumer_deliveries"
                " WHERE organization_id = %s ORDER BY delivery_sequence DESC LIMIT 1",
                (ORG_A,),
            )
        ).fetchall()
        await holder.rollback()

    assert 0 == live  # the statistics the trap needs
    assert 2 == len(claimed)
    assert {ORG_B} == {row["organization_id"] for row in claimed}
    assert ["recorded", "recorded"] == [answer["result"] for answer in answers]
    assert 1 == len(following)  # the waiting event was handed on
    # Before 0055 each probe, share and fill, and the promotion, walked the lag's index: every
    # version of every delivery, several times. Now the claim reads the organizations' index
    # only; no share walks ORG_A's dead versions, and the fill, which could find nothing, is
    # skipped. What is left is one walk of them, by the probe that finds ORG_A has nothing
    # due (its pending versions, below now; its leased ones expire in a minute and are
    # passed over in the index).
    assert 0 == claim_read["events.consumer_deliveries_live_age"], claim_read
    assert 0 == claim_read["events.consumer_deliveries_by_aggregate"], claim_read
    assert 0 == claim_read["events.consumer_deliveries_claim_order"], claim_read
    assert claim_read["events.consumer_deliveries_claim_by_organization"] <= COMPLETED + 10, (
        claim_read
    )
    # The promotion reads from the completed delivery's sequence on.
    assert 0 == record_read["events.consumer_deliveries_live_age"], record_read
    assert record_read["events.consumer_deliveries_by_aggregate"] < 10, record_read
    # The fan-out reads the aggregate's newest delivery, not every version of every one
    # (before 0056: three for each of its hundred completed deliveries).
    assert "pending" == state  # its aggregate had no live delivery
    assert fan_out_read < 10, fan_out_read
