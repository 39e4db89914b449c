"""The notifications use cases over the fakes: a recipient directory, the snapshot tables and
the in-memory outbox the sends are enqueued in."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.notifications.change_consent import ChangeConsent
from outbox.application.notifications.request_notification import RequestNotification
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.notifications.catalogue import CATALOGUE
from outbox.domain.notifications.snapshots import Address, Recipient
from tests.fakes.clock import FixedClock
from tests.fakes.ids import SequentialIds
from tests.fakes.notifications import (
    InMemoryConsent,
    InMemoryNotificationReader,
    InMemoryNotificationScope,
    InMemoryNotificationStore,
    InMemoryRecipientDirectory,
    NotificationTables,
)
from tests.fakes.outbox_store import InMemoryOutboxStore

ALICE = UUID(int=1)
BOB = UUID(int=2)


@attrs.define
class NotificationWorld:
    """Fakes plus the use cases built on them."""

    clock: FixedClock = attrs.field(factory=FixedClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    directory: InMemoryRecipientDirectory = attrs.field(factory=InMemoryRecipientDirectory)
    outbox: InMemoryOutboxStore = attrs.field(init=False)
    tables: NotificationTables = attrs.field(init=False)
    scope: InMemoryNotificationScope = attrs.field(init=False)
    request: RequestNotification = attrs.field(init=False)
    consent: ChangeConsent = attrs.field(init=False)
    reader: InMemoryNotificationReader = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.outbox = InMemoryOutboxStore(clock=self.clock)
        self.tables = NotificationTables(clock=self.clock)
        self.scope = InMemoryNotificationScope(
            recipients=self.directory,
            notifications=InMemoryNotificationStore(tables=self.tables, writer=self.outbox),
        )
        self.request = RequestNotification(catalogue=CATALOGUE, ids=self.ids)
        self.consent = ChangeConsent(catalogue=CATALOGUE, store=InMemoryConsent(self.tables))
        self.reader = InMemoryNotificationReader(
            tables=self.tables,
            state_of=lambda i: m.state.value if (m := self.outbox.messages.get(i)) else None,
        )

    def add(self, recipient_id: UUID, *addresses: tuple[Channel, str], locale: str | None = None):
        self.directory.recipients[recipient_id] = Recipient(
            id=recipient_id,
            addresses=tuple(Address(channel=c, value=v) for c, v in addresses),
            preferred_locale=locale,
        )

    def messages(self) -> list[Message]:
        return sorted(self.outbox.messages.values(), key=lambda m: m.id)
