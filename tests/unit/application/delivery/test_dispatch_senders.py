"""A batch is sent by at most ``concurrency`` senders at once, each message exactly once."""

from __future__ import annotations

import asyncio

import attrs
import pytest

from outbox.application.delivery.ports import Delivery
from outbox.domain.channels import Channel
from tests.unit.application.delivery.test_dispatch_due_messages import Harness


@attrs.define
class GaugedProvider:
    """Accepts after a short pause; keeps the peak number of sends in flight."""

    in_flight: int = 0
    peak: int = 0
    sent: list[Delivery] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return "gauged"

    async def send(self, delivery: Delivery) -> str:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        self.sent.append(delivery)
        return ""


@pytest.mark.parametrize(("concurrency", "messages"), [(1, 5), (3, 10), (8, 10), (50, 10)])
async def test_sends_never_exceed_the_bound_and_each_message_goes_once(
    concurrency: int, messages: int
) -> None:
    h = Harness(concurrency=concurrency)
    provider = GaugedProvider()
    h.dispatch = attrs.evolve(h.dispatch, providers={Channel.EMAIL: provider})
    ids = [await h.enqueue() for _ in range(messages)]
    result = await h.dispatch()
    assert messages == result.published
    assert min(concurrency, messages) == provider.peak
    assert sorted(ids) == sorted(d.message_id for d in provider.sent)
