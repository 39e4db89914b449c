"""A code never waits behind a batch already in flight (0049_reserved_slot.sql).

Every batch of the security lane is busy sending notifications to a provider that holds them;
a sign-up code enqueued meanwhile still reaches the provider at once: the lane's reserved
slot claims high-priority messages only and wakes on their own channel. Without the slot
the code would wait until one of the held batches ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from outbox.application.delivery.ports import Delivery
from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.lanes import LaneRequest, security_lane
from outbox.entrypoints.bootstrap.parts import build_process_parts
from outbox.entrypoints.settings.tree import load_settings
from tests.integration.worker.conftest import Enqueue

pytestmark = pytest.mark.integration

BATCH, LANES = 3, 2
CROWD = "crowd@example.com"  # the notifications' destination: held by the provider
NOTIFICATIONS = """
SELECT outbox.enqueue_message(
    p_id => gen_random_uuid(), p_purpose => 'notification', p_channel => 'email',
    p_destination => %s, p_subject_id => NULL, p_template => 'notification',
    p_params => '{"subject": "News", "body": "Hello"}'
)
FROM generate_series(1, %s)
"""


class HoldingProvider:
    """Holds every send to CROWD until released; takes every other send at once."""

    name = "holding"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.held = 0
        self.sent: list[str] = []
        self.everyone_held = asyncio.Event()

    async def send(self, delivery: Delivery) -> str:
        if delivery.destination == CROWD:
            self.held += 1
            if self.held == BATCH * LANES:
                self.everyone_held.set()
            await self.release.wait()
        self.sent.append(delivery.destination)
        return ""


@contextlib.asynccontextmanager
async def running_lane(
    worker_env: dict[str, str], provider: HoldingProvider, **variables: str
) -> AsyncIterator[asyncio.Task[object]]:
    settings = load_settings(
        {
            **worker_env,
            "OUTBOX_WORKER_BATCH_SIZE": str(BATCH),
            "OUTBOX_WORKER_CONCURRENCY": str(BATCH),
            "OUTBOX_WORKER_PARALLEL_BATCHES": str(LANES),
            **variables,
        }
    )
    request = LaneRequest(
        settings=settings,
        parts=build_process_parts(settings),
        owner="reserved-slot-test",
        providers=dict.fromkeys(Channel, provider),
    )
    async with security_lane(request) as lane:
        await lane.start_listening()
        assert lane.listening()  # on the channel its loop waits on
        running = asyncio.create_task(lane.loop.run())
        try:
            yield running
        finally:
            provider.release.set()
            lane.loop.stop()
            await asyncio.wait_for(running, 30)


async def test_a_code_is_sent_while_every_batch_holds_notifications(
    connect_as, enqueue: Enqueue, worker_env: dict[str, str]
) -> None:
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (CROWD, 4 * BATCH * LANES))
    provider = HoldingProvider()
    async with running_lane(worker_env, provider):
        await asyncio.wait_for(provider.everyone_held.wait(), 10)  # every batch is in flight

        await enqueue(1, destination="alice@example.com")
        async with asyncio.timeout(5):
            while "alice@example.com" not in provider.sent:
                await asyncio.sleep(0.02)

        assert [] == [sent for sent in provider.sent if sent == CROWD]  # all still held
        assert BATCH * LANES == provider.held  # the slot took no notification


async def test_the_reserved_slot_alone_sends_codes_and_no_notification(
    connect_as, enqueue: Enqueue, worker_env: dict[str, str]
) -> None:
    """OUTBOX_WORKER_RESERVED_SLOT=only: the process ``--lane-processes`` gives the slot."""
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (CROWD, 4))
    provider = HoldingProvider()
    async with running_lane(worker_env, provider, OUTBOX_WORKER_RESERVED_SLOT="only"):
        await enqueue(1, destination="alice@example.com")  # woken by outbox_urgent
        async with asyncio.timeout(5):
            while "alice@example.com" not in provider.sent:
                await asyncio.sleep(0.02)
        await asyncio.sleep(1.0)  # five polls: a notification would have been claimed by now

    assert (0, ["alice@example.com"]) == (provider.held, provider.sent)
    async with connect_as() as conn:
        rows = await (
            await conn.execute("SELECT count(*) FROM outbox.messages WHERE state = 'pending'")
        ).fetchone()
    assert (4,) == rows


async def test_the_batches_without_their_slot_leave_a_code_behind_them(
    connect_as, enqueue: Enqueue, worker_env: dict[str, str]
) -> None:
    """OUTBOX_WORKER_RESERVED_SLOT=elsewhere: another process runs the slot; here a code waits
    for a batch, as the first test shows it never does with the slot beside the batches."""
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, (CROWD, 4 * BATCH * LANES))
    provider = HoldingProvider()
    async with running_lane(worker_env, provider, OUTBOX_WORKER_RESERVED_SLOT="elsewhere"):
        await asyncio.wait_for(provider.everyone_held.wait(), 10)  # every batch is in flight
        await enqueue(1, destination="alice@example.com")
        await asyncio.sleep(1.0)
        assert "alice@example.com" not in provider.sent
        provider.release.set()
        async with asyncio.timeout(10):
            while "alice@example.com" not in provider.sent:
                await asyncio.sleep(0.02)


async def test_batches_leave_a_fresh_code_to_the_slot_in_another_process(
    connect_as, enqueue: Enqueue, worker_env: dict[str, str]
) -> None:
    """With the slot ``elsewhere`` the batches send every notification and leave the code,
    due for less than OUTBOX_WORKER_SLOT_GRACE_SECONDS, to the slot's process."""
    provider = HoldingProvider()
    grace = {"OUTBOX_WORKER_SLOT_GRACE_SECONDS": "60"}
    await enqueue(1, destination="alice@example.com")
    async with connect_as("outbox_producer") as conn:
        await conn.execute(NOTIFICATIONS, ("news@example.com", 4 * BATCH * LANES))
    async with running_lane(worker_env, provider, OUTBOX_WORKER_RESERVED_SLOT="elsewhere", **grace):
        async with asyncio.timeout(10):
            while len(provider.sent) < 4 * BATCH * LANES:
                await asyncio.sleep(0.02)
        await asyncio.sleep(1.0)  # the batches' claims after the last notification

    assert "alice@example.com" not in provider.sent
    async with running_lane(worker_env, provider, OUTBOX_WORKER_RESERVED_SLOT="only", **grace):
        async with asyncio.timeout(5):
            while "alice@example.com" not in provider.sent:
                await asyncio.sleep(0.02)


async def test_a_code_the_slot_leaves_past_the_grace_goes_out_with_the_batches(
    enqueue: Enqueue, worker_env: dict[str, str]
) -> None:
    """No slot runs anywhere (its process is down): the code waits the grace, no longer."""
    provider = HoldingProvider()
    await enqueue(1, destination="alice@example.com")
    async with running_lane(
        worker_env,
        provider,
        OUTBOX_WORKER_RESERVED_SLOT="elsewhere",
        OUTBOX_WORKER_SLOT_GRACE_SECONDS="0.2",
        OUTBOX_WORKER_POLL_SECONDS="0.1",
    ):
        async with asyncio.timeout(5):
            while "alice@example.com" not in provider.sent:
                await asyncio.sleep(0.02)
