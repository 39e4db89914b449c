"""In-memory notifications catalogue: the snapshots, consent and a recipient directory.

It follows notifications.take_snapshot rule for rule (tests/contract/ runs both): the
categories and their channels are the catalogue's, an intent is recorded once per key and
recipient, a snapshot once per intent and channel, consent is applied when it is taken, and a
snapshot that sends enqueues its outbox message (the snapshot's id) through the writer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol
from uuid import UUID

import attrs

from outbox.application.errors import InvalidRequest
from outbox.application.notifications.ports import NotificationView, OptOut, TakenSnapshot
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.notifications.catalogue import CATALOGUE, Catalogue, UnknownCategory
from outbox.domain.notifications.snapshots import (
    Decision,
    Intent,
    PlannedDelivery,
    Recipient,
    Snapshot,
    decide,
)
from outbox.domain.purposes import Purpose
from tests.fakes.clock import FixedClock


class Writer(Protocol):
    """What the fake needs of an outbox writer."""

    async def enqueue(self, message: Message) -> None:
        """Enqueue ``message``."""
        ...


@attrs.frozen
class _IntentRow:
    id: UUID
    key: str
    category: str
    recipient_id: UUID
    source: str


@attrs.define
class NotificationTables:
    """The rows, shared by the store, the consent store and the reader."""

    clock: FixedClock
    catalogue: Catalogue = CATALOGUE
    intents: dict[tuple[str, UUID], _IntentRow] = attrs.field(factory=dict)
    snapshots: dict[UUID, Snapshot] = attrs.field(factory=dict)
    opt_outs: dict[tuple[UUID, str, Channel], OptOut] = attrs.field(factory=dict)

    def category_channels(self, code: str) -> tuple[Channel, ...]:
        try:
            return self.catalogue.category(code).channels
        except UnknownCategory:
            raise InvalidRequest(f"p_category: no category {code}") from None


@attrs.define
class InMemoryNotificationStore:
    """NotificationStore over the tables; sends go to ``writer``."""

    tables: NotificationTables
    writer: Writer

    async def take_snapshot(
        self, intent: Intent, planned: PlannedDelivery, *, intent_id: UUID
    ) -> TakenSnapshot:
        """As notifications.take_snapshot."""
        tables = self.tables
        if planned.channel not in tables.category_channels(intent.category):
            raise InvalidRequest(f"p_channel: {planned.channel} is not sent by {intent.category}")
        row = tables.intents.setdefault(
            (intent.key, intent.recipient_id),
            _IntentRow(
                id=intent_id,
                key=intent.key,
                category=intent.category,
                recipient_id=intent.recipient_id,
                source=intent.source.value,
            ),
        )
        if row.category != intent.category:
            raise InvalidRequest(f"p_intent_key: already an intent of category {row.category}")
        for existing in tables.snapshots.values():
            if existing.intent_id == row.id and existing.channel is planned.channel:
                return TakenSnapshot(
                    snapshot_id=existing.id,
                    intent_id=row.id,
                    channel=existing.channel,
                    decision=existing.decision,
                    created=False,
                )
        decision = decide(
            opted_out=(intent.recipient_id, intent.category, planned.channel) in tables.opt_outs
        )
        now = tables.clock.now()
        if decision is Decision.SEND:
            await self.writer.enqueue(
                Message.enqueue(
                    id=planned.snapshot_id,
                    purpose=Purpose.NOTIFICATION,
                    channel=planned.channel,
                    destination=planned.destination,
                    subject_id=None,
                    template=planned.template,
                    params=planned.variables,
                    locale=planned.locale,
                    now=now,
                )
            )
        tables.snapshots[planned.snapshot_id] = Snapshot(
            id=planned.snapshot_id,
            intent_id=row.id,
            intent_key=row.key,
            category=row.category,
            recipient_id=row.recipient_id,
            source=intent.source,
            channel=planned.channel,
            masked_destination=planned.masked_destination,
            template=planned.template,
            locale=planned.locale,
            variables=planned.variables,
            decision=decision,
            created_at=now,
        )
        return TakenSnapshot(
            snapshot_id=planned.snapshot_id,
            intent_id=row.id,
            channel=planned.channel,
            decision=decision,
            created=True,
        )


@attrs.define
class InMemoryConsent:
    """ConsentStore over the tables."""

    tables: NotificationTables

    def _chosen(self, category: str, channels: Sequence[Channel]) -> tuple[Channel, ...]:
        offered = self.tables.category_channels(category)
        if any(channel not in offered for channel in channels):
            raise InvalidRequest(f"p_channels: {category} is sent by {offered} only")
        return tuple(channels) or offered

    async def opt_out(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """As notifications.opt_out."""
        new = 0
        for channel in self._chosen(category, channels):
            key = (recipient_id, category, channel)
            if key not in self.tables.opt_outs:
                self.tables.opt_outs[key] = OptOut(
                    recipient_id=recipient_id,
                    category=category,
                    channel=channel,
                    opted_out_at=self.tables.clock.now(),
                )
                new += 1
        return new

    async def opt_in(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """As notifications.opt_in."""
        self.tables.category_channels(category)
        lifted = [
            key
            for key in self.tables.opt_outs
            if key[0] == recipient_id
            and key[1] == category
            and (not channels or key[2] in channels)
        ]
        for key in lifted:
            del self.tables.opt_outs[key]
        return len(lifted)

    async def opt_outs(self, recipient_id: UUID) -> Sequence[OptOut]:
        """As notifications.opt_outs."""
        return sorted(
            (o for o in self.tables.opt_outs.values() if o.recipient_id == recipient_id),
            key=lambda o: (o.category, o.channel.value),
        )


@attrs.define
class InMemoryNotificationReader:
    """NotificationReader over the tables; ``state_of`` answers a message's state (None when
    there is no such message)."""

    tables: NotificationTables
    state_of: Callable[[UUID], str | None]

    async def find(self, some_id: UUID) -> NotificationView | None:
        """As notifications.intent_snapshots."""
        snapshot = self.tables.snapshots.get(some_id)
        intent_id = snapshot.intent_id if snapshot is not None else some_id
        found = sorted(
            (s for s in self.tables.snapshots.values() if s.intent_id == intent_id),
            key=lambda s: (s.created_at, s.channel.value),
        )
        if not found:
            return None
        return NotificationView(
            snapshots=tuple(found),
            message_states=tuple(
                self.state_of(s.id) if s.decision is Decision.SEND else None for s in found
            ),
        )


@attrs.define
class InMemoryRecipientDirectory:
    """RecipientDirectory over a dict of recipients."""

    recipients: dict[UUID, Recipient] = attrs.field(factory=dict)

    async def resolve(self, recipient_id: UUID) -> Recipient | None:
        """The recipient with its addresses emails first (else in the order given), or None;
        one without an address is no recipient (as identity's)."""
        recipient = self.recipients.get(recipient_id)
        if recipient is None or not recipient.addresses:
            return None
        ordered = sorted(recipient.addresses, key=lambda a: a.channel is not Channel.EMAIL)
        return attrs.evolve(recipient, addresses=tuple(ordered))


@attrs.define
class InMemoryNotificationScope:
    """NotificationScope over the fakes."""

    recipients: InMemoryRecipientDirectory
    notifications: InMemoryNotificationStore
