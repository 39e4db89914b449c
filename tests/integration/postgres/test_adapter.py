"""The psycopg adapter: transactions, wake-ups, prepared statements, outages and the claim plan."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.work_listener import WorkListener
from outbox.application.errors import StoreUnavailable
from outbox.domain.purposes import Purpose
from tests.contract.harness import PostgresHarness, make_message

pytestmark = pytest.mark.integration

UNREACHABLE = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"


async def test_an_enqueue_rolled_back_with_the_callers_transaction_leaves_nothing(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    message = make_message(outbox)
    async with connect_as("outbox_producer") as conn:
        await conn.execute("BEGIN")
        await PostgresOutboxWriter(conn).enqueue(message)
        await conn.execute("ROLLBACK")

    assert await outbox.view(message.id) is None


async def test_a_transaction_of_several_enqueues_sends_one_empty_notification(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    async with connect_as() as listener:
        await listener.execute("LISTEN outbox_work")
        async with connect_as("outbox_producer") as conn, conn.transaction():
            writer = PostgresOutboxWriter(conn)
            for _ in range(3):
                await writer.enqueue(make_message(outbox, purpose=Purpose.NOTIFICATION))
        received = [n async for n in listener.notifies(timeout=0.5)]

    assert [("outbox_work", "")] == [(n.channel, n.payload) for n in received]


@pytest.mark.parametrize(("prepared", "expected"), [(True, True), (False, False)])
async def test_prepared_statements_are_on_by_default_and_can_be_turned_off(
    database_url, prepared, expected
):
    pool = await open_pool(
        database_url, max_size=1, prepared_statements=prepared, role="outbox_worker"
    )
    try:
        store = PostgresDispatchStore(pool, WorkListener(database_url))
        await store.claim(owner="w", limit=10, lease=timedelta(seconds=60))
        await store.expire(limit=10)
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT count(*) > 0 FROM pg_prepared_statements"
                " WHERE statement LIKE '%%outbox.claim_messages%%'"
            )
            assert (expected,) == await cursor.fetchone()
    finally:
        await pool.close()


async def test_wait_for_work_survives_a_killed_listener_and_listens_again(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    await dispatch_store.wait_for_work(0.05)
    async with connect_as() as admin:
        cursor = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query = 'LISTEN outbox_work'"
        )
        assert (1,) == await cursor.fetchone()

    started = time.monotonic()
    await dispatch_store.wait_for_work(0.3)  # the dead connection is noticed, not raised
    assert time.monotonic() - started >= 0.25
    await dispatch_store.wait_for_work(0.05)  # listening again
    waiter = asyncio.create_task(dispatch_store.wait_for_work(30))
    await asyncio.sleep(0.1)
    await outbox.enqueue(make_message(outbox, purpose=Purpose.NOTIFICATION))
    await asyncio.wait_for(waiter, 10)


async def test_an_unreachable_database_raises_store_unavailable():
    with pytest.raises(StoreUnavailable):
        await open_pool(UNREACHABLE, connect_timeout=1)


async def test_a_closed_pool_raises_store_unavailable(database_url):
    pool = await open_pool(database_url, max_size=1, role="outbox_worker")
    store = PostgresDispatchStore(pool, WorkListener(database_url))
    await pool.close()

    with pytest.raises(StoreUnavailable):
        await store.claim(owner="w", limit=1, lease=timedelta(seconds=60))


async def test_a_killed_backend_surfaces_as_store_unavailable_with_its_sqlstate(
    database_url, connect_as
):
    pool = await open_pool(database_url, max_size=1, role="outbox_worker")
    store = PostgresDispatchStore(pool, WorkListener(database_url))
    try:
        async with pool.connection() as conn:
            cursor = await conn.execute("SELECT pg_backend_pid()")
            row = await cursor.fetchone()
        async with connect_as() as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", row)
        with pytest.raises(StoreUnavailable) as caught:
            await store.claim(owner="w", limit=1, lease=timedelta(seconds=60))
        assert caught.value.code in {"57P01", "OperationalError"}
        assert [] == list(await store.claim(owner="w", limit=1, lease=timedelta(seconds=60)))
    finally:
        await pool.close()


async def test_the_claim_reads_the_live_rows_index_not_the_terminal_rows(connect_as):
    """With many final rows and few live ones, the claim's candidate scan uses the partial index
    in claim order (no sort), so its cost follows the batch, not the table."""
    async with connect_as() as conn:
        await conn.execute(
            "INSERT INTO outbox.messages (id, purpose, channel, destination, template, state,"
            " available_at, created_at, published_at)"
            " SELECT gen_random_uuid(), 'notification', 'email', 'p@example.com', 'hello',"
            " 'published', now(), now(), now() FROM generate_series(1, 20000)"
        )
        await conn.execute(
            "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email',"
            " 'p@example.com', NULL, 'hello') FROM generate_series(1, 50)"
        )
        await conn.execute("ANALYZE outbox.messages")
        # The candidate query of outbox.claim_messages, with its parameters inlined.
        cursor = await conn.execute(
            "EXPLAIN SELECT m.id FROM outbox.messages AS m"
            " WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= now()"
            " ORDER BY m.claimable_at, m.created_at, m.id LIMIT 100 FOR UPDATE SKIP LOCKED"
        )
        plan = "\n".join(row[0] for row in await cursor.fetchall())

    assert "messages_claim_order" in plan
    assert "Sort" not in plan
    assert "Seq Scan" not in plan


async def test_the_pool_acts_as_the_role_it_was_given(database_url):
    pool = await open_pool(database_url, max_size=1, role="outbox_worker")
    try:
        async with pool.connection() as conn:
            cursor = await conn.execute("SELECT current_user")
            assert ("outbox_worker",) == await cursor.fetchone()
    finally:
        await pool.close()
