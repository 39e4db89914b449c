"""A claim that finds nothing, and a record that publishes nothing, walk no index (0057).

At a steady load most claims find nothing due: each notification wakes every idle batch of a
lane. Such a claim ended in ``UPDATE … WHERE id = ANY ('{}')``. PostgreSQL proves that an
empty ``= ANY`` implies any predicate (an empty OR is false), so every partial index of the
table may serve the statement; after an analyze under a held horizon, which samples no live
row, every partial index over live rows looks empty, and the planner read the one it liked
in full, filtering by id: every version the hold kept. A held run's `auto_explain` (a
six-minute hold) caught the codes' empty claim reading 109,098 buffers of
`messages_live_expiry`, 59 ms, at the end of the hold. The same trap waits in a record whose
batch published nothing (the broker down). Each statement now runs only when its array has
something in it. The events record also locked its batch with `state = 'leased'` among its
conditions, which implies the live records' partial index; it now goes by primary key. What
the indexes returned is read from the calling transaction's own counters, over every index
of the table. (The codes' empty claim is checked in test_plans_under_a_held_horizon.py. The
consumer's empty claim kept the key here even before 0057, which guards it the same way; its
test bounds what it reads.)
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.consumer_rows import consumer_role, define_type, publish_many
from tests.database_reset import vacuum_what_resets_left
from tests.events_sql import SALES, append, claim, onboard, record

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000e1")
KEPT = 300  # records or deliveries finished under the hold: their versions stay indexed
RETURNED = """
SELECT i.indexrelid::regclass::text, pg_stat_get_xact_tuples_returned(i.indexrelid)
FROM pg_index AS i WHERE i.indrelid = %s::regclass
"""


def _in_a_minute() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=1)


async def _entries(conn: Any, table: str) -> dict[str, int]:
    return dict(await (await conn.execute(RETURNED, (table,))).fetchall())


async def _reading(connect_as: Any, role: str, table: str, call: Any) -> tuple[Any, dict[str, int]]:
    """``await call(conn)`` as ``role``; what it answered, and the entries each index of
    ``table`` returned to it (only those that returned any)."""
    async with connect_as(autocommit=False) as conn:
        before = await _entries(conn, table)
        await conn.execute(f"SET LOCAL ROLE {role}")
        answer = await call(conn)
        await conn.execute("RESET ROLE")
        after = await _entries(conn, table)
        await conn.commit()
    return answer, {i: n - before[i] for i, n in after.items() if n > before[i]}


async def _analyzed_without_live_rows(conn: Any, table: str, index: str) -> float:
    """ANALYZE ``table`` as autovacuum would under the hold; the rows ``index`` (a partial
    index over live rows) is now thought to hold."""
    await conn.execute(f"ANALYZE {table}")
    [(rows,)] = await (
        await conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (index,))
    ).fetchall()
    return float(rows)


async def test_the_events_lane_claiming_and_recording_nothing_walks_no_index(connect_as):
    table = "events.outbox_records"
    async with connect_as() as owner:
        await onboard(owner)
        await vacuum_what_resets_left(owner, table)
    async with connect_as(autocommit=False) as holder:
        await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")  # holds the horizon
        async with connect_as(SALES) as conn:
            for n in range(KEPT):
                await append(conn, ORG, f"order-{n}")
        async with connect_as("outbox_worker") as conn:
            assert ["recorded"] * KEPT == await record(conn, await claim(conn, KEPT))
        async with connect_as() as owner:
            heads = await _analyzed_without_live_rows(
                owner, table, "events.outbox_records_heads_due"
            )

        nothing, empty_claim = await _reading(
            connect_as, "outbox_worker", table, lambda conn: claim(conn, 100)
        )
        async with connect_as(SALES) as conn:
            await append(conn, ORG, "order-late")
        async with connect_as("outbox_worker") as conn:
            [late] = await claim(conn, 100)
        failed, failed_record = await _reading(
            connect_as,
            "outbox_worker",
            table,
            lambda conn: record(  # the broker down: nothing published
                conn, [late], "retry", failure_class="UNAVAILABLE", retry_at=_in_a_minute()
            ),
        )
        await holder.rollback()

    assert 0 == heads  # the statistics the trap needs
    assert [] == nothing
    assert ["recorded"] == failed  # released for a minute, not published
    # What is left of a claim is one walk of the organization's dead heads (two versions
    # each), by the probe for the next organization with a head (docs/benchmarks.md).
    probe = empty_claim.pop("events.outbox_records_heads_by_organization", 0)
    assert probe <= 2 * KEPT + 10, probe
    assert sum(empty_claim.values()) < 100, empty_claim
    assert sum(failed_record.values()) < 100, failed_record


CONSUMER_CLAIM = "SELECT * FROM events.claim_consumer_deliveries('shop.fulfilment', 'test', 50, 60)"


async def test_a_consumer_claiming_nothing_walks_no_index(connect_as):
    table = "events.consumer_deliveries"
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop')")
        await owner.execute(
            "SELECT events.subscribe('shop.fulfilment', 'sales.order_placed', 1, 1)"
        )
        await vacuum_what_resets_left(owner, table, "events.outbox_records")
        async with (
            consumer_role(owner, "shop") as role,
            connect_as(autocommit=False) as holder,
        ):
            await holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await holder.execute("SELECT count(*) FROM pg_catalog.pg_class")
            await publish_many(
                owner,
                organization_ids=[ORG],
                event_type="sales.order_placed",
                count=KEPT,
                aggregates=KEPT,
            )
            await owner.execute(
                "UPDATE events.consumer_deliveries SET state = 'completed', completed_at = now()"
            )
            live = await _analyzed_without_live_rows(
                owner, table, "events.consumer_deliveries_claim_order"
            )

            async def claim_nothing(conn: Any) -> list[Any]:
                return await (await conn.execute(CONSUMER_CLAIM)).fetchall()

            nothing, empty_claim = await _reading(connect_as, role, table, claim_nothing)
            await holder.rollback()

    assert 0 == live
    assert [] == nothing
    # What is left is one walk of the organization's dead deliveries, by the probe that finds
    # it has nothing due (docs/benchmarks.md).
    probe = empty_claim.pop("events.consumer_deliveries_claim_by_organization", 0)
    assert probe <= KEPT + 10, probe
    assert sum(empty_claim.values()) < 100, empty_claim
