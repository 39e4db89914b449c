"""outbox.testing's InMemoryInbox runs a handler through the real inbox's steps: one effect
per event, a retry on the backoff's delay, a dead letter at the cap, a replay once fixed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs

from outbox.application.events.inbox_ports import InboxEvent
from outbox.testing import InMemoryInbox, inbox_event


@attrs.define
class Shipping:
    """A handler that ships an order, failing while ``broken``."""

    shipped: list[str] = attrs.field(factory=list)
    broken: bool = False

    async def __call__(self, event: InboxEvent, transaction: Any) -> None:
        if self.broken:
            raise ConnectionError("the carrier is down")
        self.shipped.append(event.payload["order"])


async def test_a_redelivered_event_has_one_effect() -> None:
    shipping = Shipping()
    inbox = InMemoryInbox(shipping)
    event = inbox_event("sales.order_placed", {"order": "o-1"}, aggregate_id="o-1")

    first = await inbox.deliver(event)
    again = await inbox.deliver(attrs.evolve(event, attempt=2))

    assert ((1, 0), (0, 1)) == (
        (first.handled, first.duplicates),
        (again.handled, again.duplicates),
    )
    assert (["o-1"], [event.event_id]) == (shipping.shipped, inbox.received)
    assert [(event.event_id, "ack", None)] * 2 == inbox.settlements


async def test_a_failing_handler_is_retried_then_dead_lettered_then_replayed() -> None:
    shipping = Shipping(broken=True)
    inbox = InMemoryInbox(shipping, max_attempts=2, backoff=(timedelta(seconds=5),))
    event = inbox_event("sales.order_placed", {"order": "o-2"})

    retried = await inbox.deliver(event)
    dead = await inbox.deliver(attrs.evolve(event, attempt=2))
    shipping.broken = False
    replayed = await inbox.replay(event.event_id)

    assert (1, 1) == (retried.retried, dead.dead_lettered)
    assert [(event.event_id, "nak", 5.0), (event.event_id, "term", None)] == inbox.settlements
    assert (True, ["o-2"], []) == (replayed, shipping.shipped, inbox.dead_letters)
    assert not await inbox.replay(event.event_id)  # nothing left to replay


async def test_an_event_is_built_as_the_relay_publishes_it() -> None:
    event = inbox_event("sales.order_placed", {"total": 3}, aggregate_type="order", attempt=1)

    assert ("sales.order_placed", "order", {"total": 3}, 1) == (
        event.event_type,
        event.aggregate_type,
        dict(event.payload),
        event.contract_version,
    )
    assert str(event.event_id) == event.headers["Nats-Msg-Id"]
