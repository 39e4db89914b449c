"""The ``identity.account_notifications`` consumer: a verified account gets its welcome.

Each ``identity.account_verified`` event, once published, is delivered to this consumer. The
handler asks the notifications catalogue for an ``account.welcome`` intent to the
account, keyed by the event, in the delivery's own transaction: the snapshots, their outbox
messages and the delivery's completion commit together, and a redelivered or replayed event
finds its snapshots taken and enqueues nothing more.
"""

from __future__ import annotations

import attrs

from outbox.application.events.consumer_handlers import Reject
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.application.notifications.errors import UnknownRecipient
from outbox.application.notifications.ports import NotificationScope, TakenSnapshot
from outbox.application.notifications.request_notification import RequestNotification
from outbox.domain.identity.account_events import (
    CONTRACT_VERSION,
    AccountEvent,
    UnreadableAccountEvent,
    read_account_event,
)
from outbox.domain.notifications.catalogue import ACCOUNT_WELCOME
from outbox.domain.notifications.snapshots import Intent, IntentSource

CONSUMER = "identity.account_notifications"
OWNER_MODULE = "identity"
UNREADABLE = "unreadable_account_event"
EVENT_TYPES = (AccountEvent.ACCOUNT_VERIFIED.value,)
VERSIONS = (CONTRACT_VERSION, CONTRACT_VERSION)


def intent_key(event: DeliveredEvent) -> str:
    """The intent's key: the event's type and id, the same on every delivery of it."""
    return f"{event.event_type}:{event.event_id}"


@attrs.frozen(kw_only=True)
class SendAccountNotifications:
    """Asks for the welcome of one delivered account_verified event."""

    request: RequestNotification

    async def __call__(
        self, scope: NotificationScope, event: DeliveredEvent
    ) -> tuple[TakenSnapshot, ...]:
        """The welcome's snapshots (empty for an account that is gone).

        Raises Reject (dead-letter it now) for an event this consumer cannot read.
        """
        try:
            change = read_account_event(
                event_type=event.event_type,
                contract_version=event.contract_version,
                payload=event.payload,
                occurred_at=event.occurred_at,
            )
        except UnreadableAccountEvent:
            raise Reject(UNREADABLE) from None
        if event.event_type != AccountEvent.ACCOUNT_VERIFIED.value:
            raise Reject(UNREADABLE)
        intent = Intent(
            key=intent_key(event),
            category=ACCOUNT_WELCOME.code,
            recipient_id=change.identity_id,
            source=IntentSource.EVENT,
        )
        try:
            return await self.request(scope, intent)
        except UnknownRecipient:
            return ()  # no verified identifier left: nobody to welcome
