"""The events record hands a batch's heads on in one statement, and wakes the lane only when
that gave it work (0061_record_promotes_in_one_statement.sql)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.events_sql import (
    SALES,
    append,
    claim,
    counting_calls,
    notified,
    onboard,
    record,
    rows,
)

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG = uuid.UUID("0190aaaa-0000-7000-8000-000000000061")
PROMOTE = "events.promote_head_after(uuid, text, text, bigint)"
CALLS = f"SELECT pg_stat_get_xact_function_calls('{PROMOTE}'::regprocedure)"


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def _record_counting_promotions(
    connect_as, batch: list[dict[str, object]], outcome: str = "published", **kwargs: object
) -> tuple[list[str], int]:
    """Record ``batch`` as the worker in one transaction, counting the calls of the
    per-aggregate promotion it made (tracked for this transaction only)."""
    async with counting_calls(connect_as, WORKER) as conn:
        results = await record(conn, batch, outcome, **kwargs)  # type: ignore[arg-type]
        [(calls,)] = await rows(conn, CALLS)
    return results, int(calls or 0)


async def test_a_batch_hands_every_aggregate_on_in_one_statement(onboarded, connect_as):
    aggregates = [f"order-{n}" for n in range(20)]
    nexts = {}
    async with connect_as(SALES) as conn:
        for aggregate in aggregates:
            await append(conn, ORG, aggregate)
        for aggregate in aggregates:
            nexts[aggregate] = await append(conn, ORG, aggregate)
    async with connect_as(WORKER) as conn:
        batch = await claim(conn, 50)
    assert len(batch) == len(aggregates)

    results, calls = await _record_counting_promotions(connect_as, batch)

    assert ["recorded"] * len(aggregates) == results
    assert 0 == calls  # before 0061: one call per aggregate
    async with connect_as() as conn:
        promoted = await rows(
            conn,
            "SELECT domain_event_id FROM events.outbox_records"
            " WHERE head AND state = 'pending' AND available_at <= now()",
        )
        assert set(nexts.values()) == {row[0] for row in promoted}
    async with connect_as(WORKER) as conn:
        assert set(nexts.values()) == {c["event_id"] for c in await claim(conn, 50)}


async def test_an_aggregate_a_producer_holds_gets_a_vacancy_and_the_rest_are_promoted(
    onboarded, connect_as
):
    async with connect_as(SALES) as conn:
        for aggregate in ("held", "free"):
            await append(conn, ORG, aggregate)
        free_next = await append(conn, ORG, "free")
    async with connect_as(WORKER) as conn:
        batch = await claim(conn, 10)
    async with connect_as(SALES, autocommit=False) as producer:
        held_next = await append(producer, ORG, "held")  # holds the aggregate's lock
        results, _ = await _record_counting_promotions(connect_as, batch)
        await producer.commit()

    assert ["recorded", "recorded"] == results
    async with connect_as() as conn:
        assert [("order", "held")] == await rows(
            conn, "SELECT aggregate_type, aggregate_id FROM events.head_vacancies"
        )
        assert [(True,), (False,)] == await rows(  # free, then held
            conn,
            "SELECT head FROM events.outbox_records WHERE domain_event_id = ANY(%s)"
            " ORDER BY aggregate_id",
            [free_next, held_next],
        )
    async with connect_as(WORKER) as conn:
        assert {free_next, held_next} == {c["event_id"] for c in await claim(conn, 10)}


async def test_an_aggregate_parked_by_a_dead_letter_is_not_handed_on(onboarded, connect_as):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "parked")
        second = await append(conn, ORG, "parked")
        await append(conn, ORG, "parked")
    async with connect_as(WORKER) as conn:
        [head] = await claim(conn, 10)
    async with connect_as() as conn:
        # An unresolved dead letter of the aggregate while its head is in flight, as a
        # replay racing a dead letter can leave it: the head must not be handed on past it.
        await conn.execute(
            "INSERT INTO events.dead_letters (outbox_record_id, domain_event_id,"
            " organization_id, aggregate_type, aggregate_id, append_sequence, reason,"
            " dead_lettered_at)"
            " SELECT id, domain_event_id, organization_id, aggregate_type, aggregate_id,"
            " append_sequence, 'REJECTED', now() FROM events.outbox_records"
            " WHERE aggregate_id = 'parked' ORDER BY append_sequence DESC LIMIT 1"
        )

    results, calls = await _record_counting_promotions(connect_as, [head])

    assert (["recorded"], 0) == (results, calls)
    async with connect_as() as conn:
        assert [(False,)] == await rows(
            conn, "SELECT head FROM events.outbox_records WHERE domain_event_id = %s", second
        )


async def test_a_record_wakes_the_lane_only_when_it_handed_a_head_on(
    onboarded, connect_as, database_url
):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "alone")
        await append(conn, ORG, "pair")
        await append(conn, ORG, "pair")
    async with connect_as(WORKER) as conn:
        batch = {c["aggregate_id"]: c for c in await claim(conn, 10)}

    async def publish(aggregate: str) -> None:
        async with connect_as(WORKER) as conn:
            assert ["recorded"] == await record(conn, [batch[aggregate]])

    assert not await notified(database_url, lambda: publish("alone"))  # nothing after it
    assert await notified(database_url, lambda: publish("pair"))  # its next is now a head


async def test_a_retry_wakes_nobody_and_keeps_its_head(onboarded, connect_as, database_url):
    async with connect_as(SALES) as conn:
        await append(conn, ORG, "retried")
        await append(conn, ORG, "retried")
    async with connect_as(WORKER) as conn:
        [first] = await claim(conn, 10)

    async def retry() -> None:
        async with connect_as(WORKER) as conn:
            later = datetime.now(UTC) + timedelta(minutes=5)
            assert ["recorded"] == await record(
                conn, [first], "retry", failure_class="UNAVAILABLE", retry_at=later
            )

    assert not await notified(database_url, retry)
    async with connect_as() as conn:
        assert [(True, "pending"), (False, "pending")] == await rows(
            conn,
            "SELECT head, state FROM events.outbox_records WHERE aggregate_id = 'retried'"
            " ORDER BY append_sequence",
        )
