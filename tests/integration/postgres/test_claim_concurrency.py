"""Concurrent claimers get disjoint batches: SKIP LOCKED under a lease."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import pytest

pytestmark = pytest.mark.integration

ROWS = 10_000
CLAIMERS = 8
BATCH = 100

CLAIM = "SELECT id FROM outbox.claim_messages(%s, %s, 60)"
SEED = """
SELECT outbox.enqueue_message(
    gen_random_uuid(), 'notification', 'email', 'person@example.com', NULL, 'hello'
)
FROM generate_series(1, %s)
"""


async def test_eight_concurrent_claimers_take_every_row_exactly_once(connect_as, dispatch_store):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(SEED, (ROWS,))
    batch_sizes: list[int] = []

    async def claimer(owner: str) -> list[UUID]:
        taken: list[UUID] = []
        while True:
            claimed = await dispatch_store.claim(
                owner=owner, limit=BATCH, lease=timedelta(minutes=5)
            )
            batch_sizes.append(len(claimed))
            if not claimed:
                return taken
            taken.extend(message.id for message in claimed)

    results = await asyncio.gather(*(claimer(f"worker-{n}") for n in range(CLAIMERS)))

    every_claim = [message_id for taken in results for message_id in taken]
    assert ROWS == len(every_claim)
    assert ROWS == len(set(every_claim))
    assert max(batch_sizes) <= BATCH
    assert sum(1 for taken in results if taken) > 1, "the claimers did not run concurrently"
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT count(*), count(DISTINCT lease_owner) FROM outbox.messages"
            " WHERE state = 'leased'"
        )
        leased, owners = await cursor.fetchone()
    assert ROWS == leased
    assert owners == sum(1 for taken in results if taken)


async def test_a_claim_never_returns_more_rows_than_asked(connect_as, dispatch_store):
    async with connect_as("outbox_producer") as conn:
        await conn.execute(SEED, (50,))

    sizes = [
        len(await dispatch_store.claim(owner="worker-1", limit=limit, lease=timedelta(minutes=5)))
        for limit in (1, 7, 13, 100)
    ]

    assert [1, 7, 13, 29] == sizes


async def test_a_claim_skips_rows_another_claimer_has_locked(connect_as):
    """A claim takes the due rows nobody holds and never waits on another claimer's lock."""
    async with connect_as("outbox_producer") as conn:
        await conn.execute(SEED, (3,))
    async with (
        connect_as("outbox_worker", autocommit=False) as first,
        connect_as("outbox_worker") as second,
    ):
        # The first claimer holds the oldest row under its open transaction.
        cursor = await first.execute(CLAIM, ("worker-1", 1))
        [(held,)] = await cursor.fetchall()
        # A claim that waited on that lock would fail here instead of hanging.
        await second.execute("SET lock_timeout = '5s'")
        cursor = await second.execute(CLAIM, ("worker-2", 10))
        taken = {row[0] for row in await cursor.fetchall()}
        await first.commit()

    async with connect_as() as conn:
        cursor = await conn.execute("SELECT id, lease_owner FROM outbox.messages")
        owners = dict(await cursor.fetchall())
    assert {held: "worker-1"} | dict.fromkeys(taken, "worker-2") == owners
    assert 2 == len(taken)
