"""An append wakes the events lane only when its event is the aggregate's head, or when the
next claim must decide the head (0063_append_notifies_heads_only.sql)."""

from __future__ import annotations

import uuid

import pytest

from tests.events_sql import SALES, append, claim, notified, onboard, record

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000063")


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def test_only_the_aggregates_head_wakes_the_lane(onboarded, connect_as, database_url):
    appended: list[uuid.UUID] = []

    async def append_to(aggregate: str) -> None:
        async with connect_as(SALES) as conn:
            appended.append(await append(conn, ORG, aggregate))

    assert await notified(database_url, lambda: append_to("order-1"))  # the head
    assert not await notified(database_url, lambda: append_to("order-1"))  # behind it
    assert await notified(database_url, lambda: append_to("order-2"))  # another's head

    async with connect_as(WORKER) as conn:
        first = [c for c in await claim(conn, 10) if c["aggregate_id"] == "order-1"]
        assert not await notified(database_url, lambda: append_to("order-1"))  # behind a lease
        # Its publication hands the head on and wakes the lane then (0061).
        assert await notified(database_url, lambda: record(conn, first))
        [second] = [c for c in await claim(conn, 10) if c["aggregate_id"] == "order-1"]
        assert appended[1] == second["event_id"]  # the next event, claimable at once


@pytest.mark.parametrize("isolation", ["REPEATABLE READ", "SERIALIZABLE"])
async def test_an_append_whose_snapshot_decides_nothing_wakes_the_lane(
    onboarded, connect_as, database_url, isolation
):
    async with connect_as(SALES) as conn:
        await append(conn, ORG)

    async def append_in_a_snapshot() -> None:
        async with connect_as(SALES, autocommit=False) as conn:
            await conn.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
            await append(conn, ORG)
            await conn.commit()

    assert await notified(database_url, append_in_a_snapshot)
