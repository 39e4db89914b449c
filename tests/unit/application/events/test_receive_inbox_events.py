"""The inbox rides through a broker outage: a settlement the broker never confirms is logged,
not raised, because the redelivery it causes finds the receipt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID, uuid4

import nats.errors

from outbox.application.events.inbox_ports import (
    InboxDeadLetter,
    InboxEvent,
    InboxHandle,
    InboxReceipt,
)
from outbox.application.events.receive_inbox_events import ReceiveInboxEvents
from outbox.domain.delivery.retry_policy import RetryPolicy
from tests.fakes.telemetry import RecordingTelemetry


def _event() -> InboxEvent:
    return InboxEvent(
        event_id=uuid4(),
        subject="outbox.org-1.sales.order_placed",
        organization_id="org-1",
        event_type="sales.order_placed",
        contract_version=1,
        aggregate_type="order",
        aggregate_id="o-1",
        append_sequence=1,
        payload={},
        headers={},
        data=b"{}",
        stream_sequence=1,
        attempt=1,
    )


class _Delivery:
    """A delivery whose every settlement meets a server that went away."""

    def __init__(self, event: InboxEvent) -> None:
        self.event = event
        self.raw_subject = event.subject
        self.raw_headers: Mapping[str, str] = {}
        self.raw_data = b"{}"
        self.attempt = 1

    async def ack(self) -> None:
        raise nats.errors.NoRespondersError

    async def nak(self, delay: float) -> None:
        raise nats.errors.ConnectionReconnectingError

    async def term(self) -> None:
        raise TimeoutError


class _Store:
    """Records each handled event once, as the inbox table's unique key would."""

    def __init__(self) -> None:
        self.effects: list[UUID] = []

    async def handle_once(self, consumer: str, event: InboxEvent, handle: InboxHandle) -> bool:
        if event.event_id in self.effects:
            return False
        await handle(event, None)
        self.effects.append(event.event_id)
        return True

    async def dead_letter(self, consumer: str, **kept: Any) -> None:
        return None

    async def replay_one(self, consumer: str, handle: Any) -> InboxDeadLetter | None:
        return None

    async def dead_letters(self, consumer: str, *, limit: int) -> Sequence[InboxDeadLetter]:
        return []

    async def receipts(self, consumer: str, *, limit: int) -> Sequence[InboxReceipt]:
        return []

    async def request_replay(self, consumer: str, event_id: UUID) -> bool:
        return False


async def _effect(event: InboxEvent, transaction: Any) -> None:
    return None


async def _failure(event: InboxEvent, transaction: Any) -> None:
    raise LookupError


async def test_an_ack_lost_in_an_outage_is_logged_and_the_redelivery_has_no_second_effect() -> None:
    store, telemetry = _Store(), RecordingTelemetry()
    receive = ReceiveInboxEvents(store=store, consumer="c", handle=_effect, telemetry=telemetry)
    event = _event()

    first = await receive([_Delivery(event)])
    again = await receive([_Delivery(event)])

    assert (first.handled, again.duplicates) == (1, 1)
    assert store.effects == [event.event_id]
    lost = telemetry.named("inbox.settle_lost")
    assert [(e.fields["settle"], e.fields["error"]) for e in lost] == [
        ("ack", "NoRespondersError"),
        ("ack", "NoRespondersError"),
    ]


async def test_a_nak_or_term_lost_in_an_outage_does_not_end_the_inbox() -> None:
    telemetry = RecordingTelemetry()
    receive = ReceiveInboxEvents(
        store=_Store(),
        consumer="c",
        handle=_failure,
        telemetry=telemetry,
        policy=RetryPolicy(max_attempts=1),
    )
    retrying = ReceiveInboxEvents(
        store=_Store(),
        consumer="c",
        handle=_failure,
        telemetry=telemetry,
        policy=RetryPolicy(max_attempts=5),
    )

    assert (await retrying([_Delivery(_event())])).retried == 1
    assert (await receive([_Delivery(_event())])).dead_lettered == 1
    assert [e.fields["settle"] for e in telemetry.named("inbox.settle_lost")] == ["nak", "term"]
