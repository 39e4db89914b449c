"""Races on one row between a worker, a producer's resend and the expiry sweep.

Each test holds one side's transaction open so the other side provably runs into its row
lock, then lets go and checks that the lifecycle's rule decided the winner.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.domain.delivery.outcomes import Published, RecordResult
from tests.contract.harness import PostgresHarness, make_message

pytestmark = pytest.mark.integration

LEASE = timedelta(seconds=60)
BLOCKED_FOR = 0.3

RECORD_PUBLISHED = """
SELECT result FROM outbox.record_outcomes(
    ARRAY[%s]::uuid[], ARRAY[%s]::uuid[], ARRAY[1], ARRAY['published'], ARRAY[NULL]::text[],
    ARRAY[''], ARRAY['console'], ARRAY[''], ARRAY[NULL]::timestamptz[], ARRAY[true]
)
"""
STATE = "SELECT state, dead_letter_reason FROM outbox.messages WHERE id = %s"


def _published(claimed: ClaimedMessage) -> AttemptRecord:
    return AttemptRecord(
        message_id=claimed.id, lease_token=claimed.lease_token, attempt=1, outcome=Published()
    )


async def _state(connect_as, message_id):
    async with connect_as() as conn:
        cursor = await conn.execute(STATE, (message_id,))
        return await cursor.fetchone()


async def test_a_resend_that_commits_first_fences_the_workers_later_record(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    subject = uuid.uuid4()
    await outbox.enqueue(make_message(outbox, subject_id=subject))
    [held] = await dispatch_store.claim(owner="worker-1", limit=1, lease=LEASE)
    resend = make_message(outbox, subject_id=subject)

    async with connect_as("outbox_producer") as producer, producer.transaction():
        await PostgresOutboxWriter(producer).enqueue(resend)
        recording = asyncio.create_task(dispatch_store.record([_published(held)]))
        await asyncio.sleep(BLOCKED_FOR)
        assert not recording.done(), "the record should wait for the resend's row lock"

    assert [RecordResult.LEASE_LOST] == list(await recording)
    assert ("dead_lettered", "superseded_by_resend") == await _state(connect_as, held.id)
    sendable = await dispatch_store.claim(owner="worker-2", limit=10, lease=LEASE)
    assert [resend.id] == [message.id for message in sendable]


async def test_a_record_that_commits_first_makes_the_resend_supersede_nothing(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    subject = uuid.uuid4()
    await outbox.enqueue(make_message(outbox, subject_id=subject))
    [held] = await dispatch_store.claim(owner="worker-1", limit=1, lease=LEASE)
    resend = make_message(outbox, subject_id=subject)

    async with connect_as("outbox_worker") as worker, worker.transaction():
        cursor = await worker.execute(RECORD_PUBLISHED, (held.id, held.lease_token))
        assert ("recorded",) == await cursor.fetchone()
        enqueueing = asyncio.create_task(outbox.enqueue(resend))
        await asyncio.sleep(BLOCKED_FOR)
        assert not enqueueing.done(), "the resend should wait for the record's row lock"

    await enqueueing
    assert ("published", None) == await _state(connect_as, held.id)
    assert ("pending", None) == await _state(connect_as, resend.id)


async def test_the_expiry_sweep_leaves_a_row_a_worker_is_recording_to_the_worker(
    connect_as, dispatch_store
):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    message = make_message(outbox, expires_in=timedelta(seconds=1))
    await outbox.enqueue(message)
    [held] = await dispatch_store.claim(owner="worker-1", limit=1, lease=timedelta(seconds=2.5))
    await asyncio.sleep(1.2)  # expired, but the lease is live

    assert 0 == await dispatch_store.expire(limit=10)
    async with connect_as("outbox_worker") as worker, worker.transaction():
        cursor = await worker.execute(RECORD_PUBLISHED, (held.id, held.lease_token))
        assert ("recorded",) == await cursor.fetchone()
        await asyncio.sleep(1.5)  # the lease has run out meanwhile; the row is still locked
        sweeping = asyncio.create_task(dispatch_store.expire(limit=10))
        assert 0 == await asyncio.wait_for(sweeping, 5), "the sweep skips locked rows"

    assert ("published", None) == await _state(connect_as, message.id)
    assert 0 == await dispatch_store.expire(limit=10)


async def test_two_sweeps_at_once_let_one_do_the_work(connect_as, dispatch_store):
    outbox = PostgresHarness(store=dispatch_store, connect_as=connect_as)
    for _ in range(3):
        await outbox.enqueue(make_message(outbox, expires_in=timedelta(seconds=1)))
    await asyncio.sleep(1.2)

    async with connect_as("outbox_worker") as first, first.transaction():
        cursor = await first.execute("SELECT outbox.expire_messages(10)")
        assert (3,) == await cursor.fetchone()
        assert 0 == await dispatch_store.expire(limit=10)
