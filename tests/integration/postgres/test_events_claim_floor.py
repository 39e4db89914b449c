"""The events claim starts at a floor, and its organizations come from a list (0055).

Every scan of the events claim starts one second below the oldest live head, which the
events lane recomputes every second; a head is never due before it became the head, so only
a late commit can be below the floor, and the next refresh finds it. The organizations are
listed by the claim from the arrivals the appends note, which never wait on one another.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.events_sql import SALES, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000f1")
LATE_ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000f2")
NEW_ORG = uuid.UUID("0190aaaa-0000-7000-8000-0000000000f3")
LISTED = "SELECT count(*) FROM events.claim_organizations WHERE organization_id = %s"
ARRIVALS = "SELECT count(*) FROM events.organization_arrivals WHERE organization_id = %s"


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def test_a_promoted_head_is_due_no_earlier_than_its_promotion(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "order-1")
        second = await append(conn, ORG, "order-1")
    await asyncio.sleep(0.2)
    async with connect_as("outbox_worker") as conn:
        batch = await claim(conn, 10)
        assert ["recorded"] == await record(conn, batch)
    async with connect_as() as conn:
        [(published_at,)] = await rows(
            conn, "SELECT published_at FROM events.outbox_records WHERE state = 'published'"
        )
        [(head, created_at, available_at)] = await rows(
            conn,
            "SELECT head, created_at, available_at FROM events.outbox_records"
            f" WHERE domain_event_id = '{second}'",
        )

    assert head
    # Before 0055 it kept its append time, below a floor computed while it waited.
    assert available_at == published_at > created_at


async def test_a_late_commit_below_the_floor_is_claimed_after_the_next_refresh(
    onboarded, connect_as
):
    async with connect_as(SALES, autocommit=False) as late:
        await append(late, LATE_ORG, "late-1")  # its head is due from now, committed later
        await asyncio.sleep(1.5)
        async with connect_as(SALES) as conn:
            await append(conn, ORG, "on-time-1")
        async with connect_as("outbox_worker") as conn:
            await conn.execute("SELECT events.refresh_claim_floor()")
        await late.commit()

    async with connect_as("outbox_worker") as conn:
        first = await claim(conn, 10)
        await conn.execute("SELECT events.refresh_claim_floor()")  # finds the late commit
        second = await claim(conn, 10)

    assert [ORG] == [c["organization_id"] for c in first]
    assert [LATE_ORG] == [c["organization_id"] for c in second]


async def test_a_new_organizations_first_appends_never_wait_on_one_another(onboarded, connect_as):
    async with (
        connect_as(SALES, autocommit=False) as one,
        connect_as(SALES, autocommit=False) as other,
    ):
        await other.execute("SET LOCAL lock_timeout = '2s'")
        await append(one, NEW_ORG, "a-1")
        await append(other, NEW_ORG, "b-1")  # the other's arrival is not committed yet
        await one.commit()
        await other.commit()
    async with connect_as() as conn:
        [(arrivals,)] = await rows(conn, ARRIVALS, NEW_ORG)
        [(listed,)] = await rows(conn, LISTED, NEW_ORG)
    assert (2, 0) == (arrivals, listed)

    async with connect_as("outbox_worker") as conn:
        batch = await claim(conn, 10)
    async with connect_as() as conn:
        [(arrivals,)] = await rows(conn, ARRIVALS, NEW_ORG)
        [(listed,)] = await rows(conn, LISTED, NEW_ORG)

    assert 2 == len(batch)
    assert (0, 1) == (arrivals, listed)


async def test_an_organization_arrives_once_per_transaction_and_not_once_listed(
    onboarded, connect_as
):
    async with connect_as(SALES, autocommit=False) as conn:
        for n in range(50):
            await append(conn, NEW_ORG, f"order-{n}")
        await conn.commit()
    async with connect_as() as conn:
        [(arrivals,)] = await rows(conn, ARRIVALS, NEW_ORG)
    assert 1 == arrivals

    async with connect_as("outbox_worker") as conn:
        await claim(conn, 1)
    async with connect_as(SALES) as conn:
        await append(conn, NEW_ORG, "order-after")
    async with connect_as() as conn:
        [(arrivals,)] = await rows(conn, ARRIVALS, NEW_ORG)
    assert 0 == arrivals
