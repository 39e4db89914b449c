"""The events' attempt histories are checked once per statement (0062): a batch's record runs
the check once, and one attempt out of sequence or lease still refuses the whole batch."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from psycopg import errors

from tests.consumer_rows import RECORD_BATCH, completed_batch, consumer_role, define_type, publish
from tests.events_sql import SALES, append, claim, counting_calls, onboard, record, rows

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000062")
CONSUMER = "shop.fulfilment"
CALLS = "SELECT pg_stat_get_xact_function_calls(%s::regprocedure)"
PUBLICATION_CHECK = "events.validate_publication_attempt_insert()"
PROCESSING_CHECK = "events.check_processing_attempt()"
ATTEMPTS = "SELECT count(*) FROM events.publication_attempts"
PROCESSING_ATTEMPTS = "SELECT count(*) FROM events.consumer_processing_attempts"
CONSUMER_CLAIM = "SELECT * FROM events.claim_consumer_deliveries(%s, 'test', %s, 60, NULL)"


@pytest.fixture
async def claimed_events(connect_as) -> list[dict[str, Any]]:
    """Twenty appended events on twenty aggregates, claimed by the worker."""
    async with connect_as() as conn:
        await onboard(conn)
    async with connect_as(SALES) as conn:
        for n in range(20):
            await append(conn, ORG, f"order-{n}")
    async with connect_as(WORKER) as conn:
        batch = await claim(conn, 50)
    assert len(batch) == 20
    return batch


async def test_a_publication_record_checks_its_batch_once(claimed_events, connect_as):
    async with counting_calls(connect_as, WORKER) as conn:
        assert ["recorded"] * 20 == await record(conn, claimed_events)
        [(calls,)] = await rows(conn, CALLS, PUBLICATION_CHECK)

    assert 1 == calls  # before 0062: one call per attempt
    async with connect_as() as conn:
        assert [(20,)] == await rows(conn, ATTEMPTS)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attempt": 2}, "attempt 2 of a record with 0 attempts: expected 1"),
        ({"lease_token": uuid.uuid4()}, "live lease"),
    ],
)
async def test_one_bad_attempt_refuses_the_whole_batch(claimed_events, connect_as, change, message):
    batch = [dict(row) for row in claimed_events]
    batch[7].update(change)
    async with connect_as("outbox_owner") as conn:
        with pytest.raises(errors.IntegrityConstraintViolation, match=message):
            await conn.execute(
                "INSERT INTO events.publication_attempts (outbox_record_id, attempt, counted,"
                " outcome, recorded_at, lease_token)"
                " SELECT r, a, true, 'published', now(), t"
                " FROM unnest(%s::uuid[], %s::integer[], %s::uuid[]) AS u (r, a, t)",
                (
                    [row["record_id"] for row in batch],
                    [row.get("attempt", 1) for row in batch],
                    [row["lease_token"] for row in batch],
                ),
            )
        assert [(0,)] == await rows(conn, ATTEMPTS)


@pytest.fixture
async def shop_deliveries(connect_as) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """Twenty deliveries of an ordered consumer, claimed; and the consumer's role."""
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute("SELECT events.register_consumer(%s, 'shop')", (CONSUMER,))
        await owner.execute("SELECT events.subscribe(%s, 'sales.order_placed', 1, 1)", (CONSUMER,))
        for n in range(20):
            await publish(
                owner,
                organization_id=ORG,
                event_type="sales.order_placed",
                aggregate=("order", f"order-{n}"),
            )
        async with consumer_role(owner, "shop") as role:
            async with connect_as(role) as conn:
                cursor = await conn.execute(CONSUMER_CLAIM, (CONSUMER, 50))
                columns = [c.name for c in cursor.description or ()]
                batch = [dict(zip(columns, row, strict=True)) for row in await cursor.fetchall()]
            assert len(batch) == 20
            yield role, batch


async def test_a_consumers_record_checks_its_batch_once(shop_deliveries, connect_as):
    role, batch = shop_deliveries
    async with counting_calls(connect_as, role) as conn:
        cursor = await conn.execute(RECORD_BATCH, completed_batch(batch))
        assert ["recorded"] * 20 == [result for (result,) in await cursor.fetchall()]
        [(calls,)] = await rows(conn, CALLS, PROCESSING_CHECK)

    assert 1 == calls  # before 0062: one call per attempt
    async with connect_as() as conn:
        assert [(20,)] == await rows(conn, PROCESSING_ATTEMPTS)


async def test_one_bad_processing_attempt_refuses_the_whole_batch(shop_deliveries, connect_as):
    _, batch = shop_deliveries
    tokens = [row["lease_token"] for row in batch]
    tokens[3] = uuid.uuid4()
    async with connect_as("outbox_owner") as conn:
        with pytest.raises(
            errors.IntegrityConstraintViolation, match="next one, under its live lease"
        ) as refused:
            await conn.execute(
                "INSERT INTO events.consumer_processing_attempts (delivery_id, attempt, outcome,"
                " code, recorded_at, lease_token)"
                " SELECT d, 1, 'completed', '', now(), t"
                " FROM unnest(%s::uuid[], %s::uuid[]) AS u (d, t)",
                ([row["delivery_id"] for row in batch], tokens),
            )
        assert "consumer_processing_attempts_in_sequence" == refused.value.diag.constraint_name
        assert [(0,)] == await rows(conn, PROCESSING_ATTEMPTS)
