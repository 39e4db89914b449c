"""The tenant events outbox's SQL core (SPEC §16): append, claim, record, in plain SQL as the
roles that call them."""

from __future__ import annotations

import uuid

import pytest

from tests.events_sql import SALES, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def test_an_appended_event_is_claimed_and_published(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        event = await append(conn, ORG, "order-1", payload={"total": 42})

    async with connect_as(WORKER) as conn:
        [claimed] = await claim(conn)
        assert (event, ORG, "sales.order_placed", 1) == (
            claimed["event_id"],
            claimed["organization_id"],
            claimed["event_type"],
            claimed["contract_version"],
        )
        assert ({"total": 42}, "order", "order-1", 0) == (
            claimed["payload"],
            claimed["aggregate_type"],
            claimed["aggregate_id"],
            claimed["attempts"],
        )
        assert ["recorded"] == await record(conn, [claimed])
        assert [] == await claim(conn)

    async with connect_as() as conn:
        assert [("published", 1)] == await rows(
            conn, "SELECT state, attempt_count FROM events.outbox_records"
        )
        assert [(event, claimed["record_id"], ORG)] == await rows(
            conn,
            "SELECT domain_event_id, outbox_record_id, organization_id"
            " FROM events.domain_event_publications",
        )
        assert [(1, True, "published")] == await rows(
            conn, "SELECT attempt, counted, outcome FROM events.publication_attempts"
        )


async def test_the_events_of_one_aggregate_are_published_in_append_order(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        first = await append(conn, ORG, "order-1")
        second = await append(conn, ORG, "order-1")
        other = await append(conn, ORG, "order-2")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        assert {first, other} == {c["event_id"] for c in batch}
        assert ["recorded", "recorded"] == await record(conn, batch)
        [then] = await claim(conn)
        assert second == then["event_id"]


async def test_a_retry_keeps_the_aggregate_waiting_until_it_is_due(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "order-1")
        await append(conn, ORG, "order-1")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn)
        [retry_at] = await rows(conn, "SELECT now() + interval '1 hour'")
        assert ["recorded"] == await record(
            conn, batch, "retry", failure_class="UNAVAILABLE", retry_at=retry_at[0]
        )
        assert [] == await claim(conn)

    async with connect_as() as conn:
        assert [("pending", 1, True), ("pending", 0, False)] == await rows(
            conn,
            "SELECT state, attempt_count, head FROM events.outbox_records ORDER BY append_sequence",
        )
