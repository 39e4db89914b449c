"""Handle a batch of events read from the broker, each at most once in effect.

The handler runs in the service's own transaction together with the event's receipt; the
message is acknowledged only after that commit. A redelivery (after a crash before the ack,
or a republish after the stream's duplicate window) finds the receipt: acknowledged, no
second effect. A failing handler is retried after the schedule's delay (``nak``) until the
attempt cap; then the event is kept as a dead letter (payload and headers in the service's
database, the error's class name only) and the message terminated. A message that is not
one of the relay's events is dead-lettered at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Sequence
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import attrs

from outbox.application.events.inbox_events import parse_inbox_event
from outbox.application.events.inbox_ports import (
    InboxDeadLetter,
    InboxDelivery,
    InboxEvent,
    InboxHandle,
    InboxStore,
)
from outbox.application.ports import Telemetry
from outbox.domain.delivery.retry_policy import DEFAULT_SCHEDULE, RetryPolicy

NOT_AN_EVENT = "NotAnOutboxEvent"
DEFAULT_BACKOFF = DEFAULT_SCHEDULE  # the retry schedule every lane starts from


@attrs.frozen(kw_only=True)
class InboxResult:
    """What one batch did."""

    handled: int = 0
    duplicates: int = 0
    retried: int = 0
    dead_lettered: int = 0
    replayed: int = 0


@attrs.frozen(kw_only=True)
class ReceiveInboxEvents:
    """Settles each delivery of a batch in turn (a batch keeps the stream's order)."""

    store: InboxStore
    consumer: str
    handle: InboxHandle
    telemetry: Telemetry
    # The lanes' one retry policy: its schedule is the nak's delay after attempt n, its
    # attempt cap the dead letter's.
    policy: RetryPolicy = attrs.field(factory=RetryPolicy)

    async def __call__(self, deliveries: Sequence[InboxDelivery]) -> InboxResult:
        """Handle, acknowledge, retry or dead-letter every delivery; then run marked replays."""
        tally = {"handled": 0, "duplicates": 0, "retried": 0, "dead_lettered": 0}
        for delivery in deliveries:
            tally[await self._settle(delivery)] += 1
        replayed = await self.replay()
        for outcome, count in tally.items():
            if count:
                self.telemetry.count(
                    "outbox_inbox_events_total", count, consumer=self.consumer, outcome=outcome
                )
        return InboxResult(**tally, replayed=replayed)

    async def _settle(self, delivery: InboxDelivery) -> str:
        event = delivery.event
        if event is None:
            await self._dead_letter(delivery, event_id=None, error_class=NOT_AN_EVENT)
            return "dead_lettered"
        try:
            first = await self.store.handle_once(self.consumer, event, self.handle)
        except Exception as error:  # noqa: BLE001 - a handler's failure is an attempt, not a crash
            return await self._failed(delivery, event, type(error).__name__)
        await self._tell_broker(delivery.ack(), "ack", event.event_id)
        if not first:
            self.telemetry.event(
                "inbox.duplicate",
                level="info",
                consumer=self.consumer,
                event_id=str(event.event_id),
                stream_sequence=event.stream_sequence,
            )
            return "duplicates"
        return "handled"

    async def _failed(self, delivery: InboxDelivery, event: InboxEvent, error_class: str) -> str:
        attempt = delivery.attempt
        self.telemetry.event(
            "inbox.handler_failed",
            level="warning",
            consumer=self.consumer,
            event_id=str(event.event_id),
            attempt=attempt,
            error_class=error_class,
        )
        if attempt >= self.policy.max_attempts:
            await self._dead_letter(delivery, event_id=event.event_id, error_class=error_class)
            return "dead_lettered"
        step = self.policy.backoff(attempt)
        await self._tell_broker(delivery.nak(step.total_seconds()), "nak", event.event_id)
        return "retried"

    async def _tell_broker(self, settle: Awaitable[None], verb: str, event_id: UUID | None) -> None:
        """Settle a message with the broker; if the link is down meanwhile, the broker delivers
        it again after its ack wait, and the inbox's receipt (or the kept dead letter) makes
        that redelivery harmless, so a lost settlement is logged, never raised: raising would
        end the inbox during the very outage it must ride through."""
        try:
            await settle
        except Exception as error:  # noqa: BLE001 - see above: redelivered, then settled
            self.telemetry.event(
                "inbox.settle_lost",
                level="warning",
                consumer=self.consumer,
                settle=verb,
                event_id=str(event_id) if event_id else None,
                error=type(error).__name__,
            )

    async def _dead_letter(
        self, delivery: InboxDelivery, *, event_id: UUID | None, error_class: str
    ) -> None:
        try:
            await self.store.dead_letter(
                self.consumer,
                event_id=event_id or _message_id(delivery),
                subject=delivery.raw_subject,
                headers=delivery.raw_headers,
                data=delivery.raw_data,
                attempts=delivery.attempt,
                error_class=error_class,
            )
        except Exception as error:  # noqa: BLE001 - not kept: let the broker deliver it again
            self.telemetry.event(
                "inbox.dead_letter_failed",
                level="error",
                consumer=self.consumer,
                error=type(error).__name__,
            )
            await self._tell_broker(delivery.nak(self._first_step()), "nak", event_id)
            return
        self.telemetry.event(
            "inbox.dead_lettered",
            level="warning",
            consumer=self.consumer,
            event_id=str(event_id) if event_id else None,
            attempts=delivery.attempt,
            error_class=error_class,
        )
        await self._tell_broker(delivery.term(), "term", event_id)

    def _first_step(self) -> float:
        return self.policy.backoff(1).total_seconds()

    async def replay(self) -> int:
        """Handle every dead letter marked for replay; a failing one becomes a dead letter
        again with its new error class. Returns how many were handled."""
        replayed = 0
        while True:
            try:
                taken = await self.store.replay_one(self.consumer, self._replayed)
            except _ReplayFailed as failed:
                await self.store.dead_letter(
                    self.consumer,
                    event_id=failed.dead_letter.event_id,
                    subject=failed.dead_letter.subject,
                    headers=failed.dead_letter.headers,
                    data=failed.dead_letter.data,
                    attempts=1,
                    error_class=failed.error_class,
                )
                continue
            if taken is None:
                return replayed
            replayed += 1
            self.telemetry.event(
                "inbox.replayed", consumer=self.consumer, event_id=str(taken.event_id)
            )

    async def _replayed(self, dead_letter: InboxDeadLetter, transaction: Any) -> None:
        event = parse_inbox_event(
            subject=dead_letter.subject,
            headers=dead_letter.headers,
            data=dead_letter.data,
            stream_sequence=0,
            attempt=dead_letter.attempts + 1,
        )
        if event is None:
            raise _ReplayFailed(dead_letter, NOT_AN_EVENT)
        try:
            await self.handle(event, transaction)
        except Exception as error:  # noqa: BLE001 - kept as a dead letter again, by class
            raise _ReplayFailed(dead_letter, type(error).__name__) from None


class _ReplayFailed(Exception):
    """A replayed dead letter failed again: keep it, with the new error's class."""

    def __init__(self, dead_letter: InboxDeadLetter, error_class: str) -> None:
        super().__init__(error_class)
        self.dead_letter = dead_letter
        self.error_class = error_class


def _message_id(delivery: InboxDelivery) -> UUID:
    """A stable id for a message that carries none: from its subject and body."""
    digest = hashlib.sha256(delivery.raw_data).hexdigest()
    return uuid5(NAMESPACE_URL, f"nats:{delivery.raw_subject}:{digest}")
