"""One timer bounds every send of a batch: each send still ends by its own deadline."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import attrs
import pytest

from outbox.application.delivery.ports import Delivery
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from tests.unit.application.delivery.test_dispatch_due_messages import Harness


@attrs.define
class ScriptedProvider:
    """Sends the n-th message after ``delays[n]`` seconds (hangs when None)."""

    delays: list[float | None]
    started: list[Delivery] = attrs.field(factory=list)
    first_started: asyncio.Event = attrs.field(factory=asyncio.Event)

    @property
    def name(self) -> str:
        return "scripted"

    async def send(self, delivery: Delivery) -> str:
        delay = self.delays[len(self.started)]
        self.started.append(delivery)
        self.first_started.set()
        await asyncio.sleep(3600 if delay is None else delay)
        return f"receipt-{len(self.started)}"


@pytest.mark.parametrize("concurrency", [1, 2, 4])
async def test_hanging_sends_time_out_and_the_others_are_published(concurrency: int) -> None:
    h = Harness(concurrency=concurrency)
    provider = ScriptedProvider(delays=[None, 0.001, None, 0.002, 0.001])
    h.dispatch = attrs.evolve(
        h.dispatch,
        providers={Channel.EMAIL: provider},
        provider_timeout=timedelta(milliseconds=30),
    )
    ids = [await h.enqueue() for _ in range(5)]

    result = await asyncio.wait_for(h.dispatch(), timeout=5)

    assert (5, 3, 2) == (result.claimed, result.published, result.retried)
    by_id = {attempt.message_id: attempt.outcome for attempt in h.store.attempts}
    hung = {provider.started[0].message_id, provider.started[2].message_id}
    for message_id in ids:
        outcome = by_id[message_id]
        if message_id in hung:
            assert (FailureClass.INDETERMINATE, "timeout") == (
                outcome.failure_class,  # type: ignore[union-attr]
                outcome.code,  # type: ignore[union-attr]
            )
            assert State.PENDING == h.message(message_id).state
        else:
            assert State.PUBLISHED == h.message(message_id).state


async def test_an_earlier_deadline_after_a_later_one_moves_the_timer_ahead() -> None:
    """The second send starts with little of the lease left: it is cut first, not at 1 s."""
    h = Harness(concurrency=2)
    cut_at: dict[int, float] = {}
    loop = asyncio.get_running_loop()

    @attrs.define
    class Hanging:
        sends: int = 0

        @property
        def name(self) -> str:
            return "hanging"

        async def send(self, delivery: Delivery) -> str:
            self.sends += 1
            number = self.sends
            if number == 1:  # the lease is nearly over by the time the second send starts
                h.clock.advance(timedelta(seconds=54) - timedelta(milliseconds=50))
            try:
                await asyncio.sleep(3600)
            finally:
                cut_at[number] = loop.time()
            return ""

    h.dispatch = attrs.evolve(
        h.dispatch,
        providers={Channel.EMAIL: Hanging()},
        provider_timeout=timedelta(seconds=1),
        lease=timedelta(seconds=60),  # send deadline: 54 s after the claim
    )
    await h.enqueue()
    await h.enqueue()
    started = loop.time()

    result = await asyncio.wait_for(h.dispatch(), timeout=5)

    assert (2, 0, 2) == (result.claimed, result.published, result.retried)
    assert cut_at[2] - started < 0.5 <= cut_at[1] - started


async def test_cancelling_the_batch_during_a_send_is_not_taken_for_a_timeout() -> None:
    h = Harness()
    provider = ScriptedProvider(delays=[None])
    h.dispatch = attrs.evolve(
        h.dispatch, providers={Channel.EMAIL: provider}, provider_timeout=timedelta(seconds=30)
    )
    await h.enqueue()

    batch = asyncio.ensure_future(h.dispatch())
    await asyncio.wait_for(provider.first_started.wait(), timeout=5)
    batch.cancel()

    with pytest.raises(asyncio.CancelledError):
        await batch
    assert [] == h.store.attempts  # nothing recorded: the lease expires
