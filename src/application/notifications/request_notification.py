"""Request a notification: resolve the recipient, take the snapshots, enqueue the sends.

Runs in the caller's transaction (a consumer's delivery, or a staff request): the snapshots
and their outbox messages commit with it or not at all. Asking again under the same intent
key answers the first snapshots and enqueues nothing (a redelivered or replayed event).
"""

from __future__ import annotations

import attrs

from outbox.application.notifications.errors import UnknownRecipient
from outbox.application.notifications.ports import NotificationScope, TakenSnapshot
from outbox.application.ports import Ids
from outbox.domain.notifications.catalogue import Catalogue
from outbox.domain.notifications.snapshots import Intent, plan


@attrs.frozen(kw_only=True)
class RequestNotification:
    """Turns an intent into its frozen snapshots, one per channel of its category."""

    catalogue: Catalogue
    ids: Ids

    async def __call__(self, scope: NotificationScope, intent: Intent) -> tuple[TakenSnapshot, ...]:
        """The snapshots of ``intent`` in ``scope``, new or taken before.

        Raises UnknownCategory (domain) and UnknownRecipient; an empty answer means the
        recipient has no address on any channel of the category.
        """
        category = self.catalogue.category(intent.category)
        recipient = await scope.recipients.resolve(intent.recipient_id)
        if recipient is None:
            raise UnknownRecipient("recipient_id: no such recipient")
        intent_id = self.ids.new_id()
        planned = plan(
            intent,
            category,
            recipient,
            ids=[self.ids.new_id() for _ in category.channels],
        )
        taken: list[TakenSnapshot] = []
        for delivery in planned:
            snapshot = await scope.notifications.take_snapshot(
                intent, delivery, intent_id=intent_id
            )
            intent_id = snapshot.intent_id  # the first snapshot's, when it was recorded before
            taken.append(snapshot)
        return tuple(taken)
