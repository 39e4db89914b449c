"""The ``identity.security_notices`` consumer: an account event becomes its owner's notices.

Each identity account event (domain/identity/account_events.py) is delivered to this consumer
once it is published. The handler reads the account's verified identifiers in the delivery's
own transaction and enqueues one security_notice to each; the notices and the delivery's
completion commit together, so a crash or a duplicate delivery never sends a notice twice
(docs/consumers.md), and an event is never left without its notices once its delivery completed.
"""

from __future__ import annotations

import attrs

from outbox.application.events.consumer_handlers import Reject
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.application.identity.security_notices import NoticeScope, SecurityNotices
from outbox.application.ports import Clock
from outbox.domain.identity.account_events import (
    CONTRACT_VERSION,
    AccountEvent,
    UnreadableAccountEvent,
    read_account_event,
)

CONSUMER = "identity.security_notices"
OWNER_MODULE = "identity"
UNREADABLE = "unreadable_account_event"  # the dead letter's code of an event it cannot read
EVENT_TYPES = tuple(kind.value for kind in AccountEvent)
VERSIONS = (CONTRACT_VERSION, CONTRACT_VERSION)  # from, to: both included


@attrs.frozen(kw_only=True)
class SendSecurityNotices:
    """Enqueues the notices of one delivered account event, in the delivery's transaction."""

    notices: SecurityNotices
    clock: Clock

    async def __call__(self, scope: NoticeScope, event: DeliveredEvent) -> int:
        """Enqueue the notices of ``event`` in ``scope``; return how many identifiers they go to.

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
        verified = await scope.identity.find_verified_identifiers(change.identity_id)
        recipients = [login for login in verified if change.tells(login)]
        details = (
            {} if change.masked_identifier is None else {"identifier": change.masked_identifier}
        )
        return await self.notices.send(
            scope,
            identity_id=change.identity_id,
            change=change.change,
            now=self.clock.now(),
            occurred_at=change.occurred_at,
            recipients=recipients,
            details=details,
        )
