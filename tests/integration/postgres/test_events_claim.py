"""The events claim under load and races: fairness between organizations, a cost
that follows the batch and not the backlog, concurrent claimers, and the aggregate's head
handed on while a producer appends to it."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from datetime import timedelta

import pytest

from outbox.adapters.postgres.event_outbox_store import PostgresEventOutboxStore
from outbox.adapters.postgres.work_listener import EVENTS_CHANNEL, WorkListener
from outbox.application.events.ports import PublicationRecord
from outbox.domain.delivery.outcomes import Published, RecordResult
from tests.events_sql import SALES, append, claim, onboard, record, rows

pytestmark = pytest.mark.integration

WORKER = "outbox_worker"
ORG_A = uuid.UUID("0190aaaa-0000-7000-8000-00000000000a")
ORG_B = uuid.UUID("0190bbbb-0000-7000-8000-00000000000b")
BULK = """
SELECT count(events.append_domain_event(
    %s, 'sales.order_placed', 1, 'order', %s || g::text, gen_random_uuid()::text,
    '{"total": 1}', now()
))
FROM generate_series(1, %s) AS g
"""
CLAIM_COST = (
    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)"
    " SELECT * FROM events.claim_outbox_batch('probe', %s, 30)"
)


@pytest.fixture
async def onboarded(connect_as):
    async with connect_as() as conn:
        await onboard(conn)


async def _analyze(connect_as) -> None:
    """Statistics, as autovacuum would gather them: without any, the plans a session caches
    while the tables are nearly empty scan them whole."""
    async with connect_as() as conn:
        await conn.execute("ANALYZE events.outbox_records, events.domain_events")


async def _bulk(connect_as, organization: uuid.UUID, prefix: str, count: int) -> None:
    """Append ``count`` events on as many aggregates, a thousand per transaction."""
    for start in range(0, count, 1000):
        async with connect_as(SALES) as conn:
            await conn.execute(BULK, (organization, f"{prefix}{start}-", min(1000, count - start)))
        if start < 2000:
            await _analyze(connect_as)
    await _analyze(connect_as)


async def _claim_cost(connect_as, limit: int) -> tuple[int, int]:
    """(buffers, rows) of one claim of ``limit``, rolled back: what it touched, nested calls
    included, whatever the machine's speed."""
    async with connect_as(autocommit=False) as conn:
        await conn.execute("SET LOCAL ROLE outbox_worker")
        cursor = await conn.execute(CLAIM_COST, (limit,))
        [(plan,)] = await cursor.fetchall()
        await conn.rollback()
    top = plan[0]["Plan"]
    return top["Shared Hit Blocks"] + top["Shared Read Blocks"], top["Actual Rows"]


async def test_one_organizations_backlog_does_not_delay_anothers_first_event(onboarded, connect_as):
    await _bulk(connect_as, ORG_A, "a", 10_000)
    async with connect_as(SALES) as conn:
        late = await append(conn, ORG_B, "b-1")

    async with connect_as(WORKER) as conn:
        batch = await claim(conn, 10)

    assert 10 == len(batch)
    assert late in {c["event_id"] for c in batch}


async def test_the_claim_costs_the_batch_not_the_backlog(onboarded, connect_as):
    """The claim reads heads off partial indexes: the buffers one claim of 100 touches stay
    flat from a backlog of 200 to one of 20,000 (half on one aggregate, half on as many)."""
    async with connect_as(SALES) as conn:
        await append(conn, ORG_B, "b-1")
    await _bulk(connect_as, ORG_A, "a", 100)
    async with connect_as(SALES) as conn:
        await conn.execute(
            "SELECT count(events.append_domain_event(%s, 'sales.order_placed', 1, 'order',"
            " 'hot', gen_random_uuid()::text, '{}', now())) FROM generate_series(1, 100)",
            (ORG_A,),
        )
    small, small_rows = await _claim_cost(connect_as, 100)

    await _bulk(connect_as, ORG_A, "more", 9_900)
    async with connect_as(SALES) as conn:
        await conn.execute(
            "SELECT count(events.append_domain_event(%s, 'sales.order_placed', 1, 'order',"
            " 'hot', gen_random_uuid()::text, '{}', now())) FROM generate_series(1, 9900)",
            (ORG_A,),
        )
    await _analyze(connect_as)
    large, large_rows = await _claim_cost(connect_as, 100)

    print(f"claim of 100: {small} buffers at a backlog of 201, {large} at 20,001")
    assert 100 == small_rows == large_rows
    assert large < 2 * small, (small, large)


async def test_eight_concurrent_claimers_publish_every_event_once_in_aggregate_order(
    onboarded, connect_as, database_url, worker_pool
):
    aggregates, per_aggregate = 50, 4
    async with connect_as(SALES) as conn:
        for _ in range(per_aggregate):
            for n in range(aggregates):
                await append(conn, ORG_A if n % 2 else ORG_B, f"order-{n}")
    total = aggregates * per_aggregate
    store = PostgresEventOutboxStore(worker_pool, WorkListener(database_url, EVENTS_CHANNEL))
    claimed_by: dict[uuid.UUID, list[str]] = defaultdict(list)
    published = 0

    async def claimer(owner: str) -> None:
        nonlocal published
        while published < total:
            batch = await store.claim(owner=owner, limit=10, lease=timedelta(minutes=5))
            if not batch:
                await asyncio.sleep(0.01)
                continue
            for claimed in batch:
                claimed_by[claimed.record_id].append(owner)
            results = await store.record(
                [
                    PublicationRecord(
                        record_id=c.record_id,
                        lease_token=c.lease_token,
                        attempt=c.attempts + 1,
                        outcome=Published(),
                    )
                    for c in batch
                ]
            )
            assert {RecordResult.RECORDED} == set(results)
            published += len(batch)

    await asyncio.wait_for(asyncio.gather(*(claimer(f"w{n}") for n in range(8))), 120)

    assert total == len(claimed_by)
    assert all(len(owners) == 1 for owners in claimed_by.values())
    assert len({owners[0] for owners in claimed_by.values()}) > 1, "no concurrency happened"
    async with connect_as() as conn:
        order = await rows(
            conn,
            "SELECT e.aggregate_id, e.append_sequence FROM events.domain_event_publications p"
            " JOIN events.domain_events e ON e.id = p.domain_event_id"
            " ORDER BY p.publication_sequence",
        )
    assert total == len(order)
    by_aggregate: dict[str, list[int]] = defaultdict(list)
    for aggregate_id, sequence in order:
        by_aggregate[aggregate_id].append(sequence)
    assert all(sequences == sorted(sequences) for sequences in by_aggregate.values())


async def _publish_while_a_producer_appends(connect_as, isolation: str) -> uuid.UUID:
    """Publish the aggregate's head while a producer's open transaction appends the next
    event; return that next event's id once both committed."""
    async with connect_as(SALES) as conn:
        await append(conn, ORG_A)
    async with connect_as(WORKER) as worker:
        batch = await claim(worker)
        async with connect_as(SALES, autocommit=False) as producer:
            await producer.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
            await producer.execute("SELECT 1")  # the producer's snapshot starts here
            if isolation == "READ COMMITTED":
                later = await append(producer, ORG_A)  # holds the aggregate's lock
                assert ["recorded"] == await record(worker, batch)
            else:
                assert ["recorded"] == await record(worker, batch)
                later = await append(producer, ORG_A)  # its snapshot still sees the head live
            await producer.commit()
    return later


@pytest.mark.parametrize("isolation", ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"])
async def test_an_append_racing_the_heads_publication_is_claimed_next(
    onboarded, connect_as, isolation
):
    later = await _publish_while_a_producer_appends(connect_as, isolation)

    async with connect_as() as conn:
        assert [(False,)] == await rows(
            conn,
            "SELECT head FROM events.outbox_records r WHERE r.domain_event_id = %s",
            later,
        )
        assert [(1,)] == await rows(conn, "SELECT count(*) FROM events.head_vacancies")
    async with connect_as(WORKER) as conn:
        [claimed] = await claim(conn)
    assert later == claimed["event_id"]
    async with connect_as() as conn:
        assert [(0,)] == await rows(conn, "SELECT count(*) FROM events.head_vacancies")


async def test_a_publication_hands_the_head_on_at_once_when_no_producer_holds_it(
    onboarded, connect_as
):
    async with connect_as(SALES) as conn:
        await append(conn, ORG_A)
        later = await append(conn, ORG_A)
    async with connect_as(WORKER) as conn:
        await record(conn, await claim(conn))

    async with connect_as() as conn:
        assert [(True,)] == await rows(
            conn, "SELECT head FROM events.outbox_records WHERE domain_event_id = %s", later
        )
        assert [(0,)] == await rows(conn, "SELECT count(*) FROM events.head_vacancies")


async def test_claims_from_a_random_point_wrap_around_to_every_organization(onboarded, connect_as):
    """Fifty organizations with one event each, claims of five: each claim visits at most
    twenty organizations from a random one on, wrapping around, and all are served."""
    organizations = [uuid.UUID(int=n + 1) for n in range(50)]
    async with connect_as(SALES) as conn:
        for organization in organizations:
            await append(conn, organization)

    served: list[uuid.UUID] = []
    async with connect_as(WORKER) as conn:
        for _ in range(10):
            batch = await claim(conn, 5)
            assert len(batch) == 5
            served.extend(c["organization_id"] for c in batch)

    assert sorted(organizations) == sorted(served)


async def test_the_organization_with_the_nil_id_gets_its_share(onboarded, connect_as):
    """The loop over organizations wraps around to the lowest id, itself included (0054):
    the nil UUID's events (the platform's own) are claimed in their share, not only by the
    last fill, which a claim skips when the shares took every due head."""
    nil = uuid.UUID(int=0)
    async with connect_as(SALES) as conn:
        for organization in (nil, ORG_A, ORG_B):
            await append(conn, organization)

    async with connect_as(WORKER) as conn:
        batches = [await claim(conn, 3) for _ in range(5)]

    assert sorted([nil, ORG_A, ORG_B]) == sorted(c["organization_id"] for c in batches[0])
    assert [] == [c for batch in batches[1:] for c in batch]
