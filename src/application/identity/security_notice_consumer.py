"""The ``identity.security_notices`` consumer: an account event becomes its owner's notices.

Each identity account event (domain/identity/account_events.py) is delivered to this consumer
once it is published. The handler reads the account's verified identifiers in the delivery's
own transaction and enqueues one security_notice to each; the notices and the delivery's
completion commit together, so a crash or a duplicate delivery never sends a notice twice
(SPEC §17), and an event is never left without its notices once its delivery completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from application.identity.security_notices import NoticeScope, SecurityNotices
from application.ports import Clock
from domain.identity.account_events import CONTRACT_VERSION, AccountEvent, read_account_event

CONSUMER = "identity.security_notices"
OWNER_MODULE = "identity"
EVENT_TYPES = tuple(kind.value for kind in AccountEvent)
VERSIONS = (CONTRACT_VERSION, CONTRACT_VERSION)  # from, to: both included


@attrs.frozen(kw_only=True)
class SendSecurityNotices:
    """Enqueues the notices of one delivered account event, in the delivery's transaction."""

    notices: SecurityNotices
    clock: Clock

    async def __call__(
        self,
        scope: NoticeScope,
        *,
        event_type: str,
        contract_version: int,
        payload: Mapping[str, Any],
        occurred_at: datetime,
    ) -> int:
        """Enqueue the notices; return how many identifiers they go to.

        Raises UnreadableAccountEvent for an event this consumer cannot read.
        """
        change = read_account_event(
            event_type=event_type,
            contract_version=contract_version,
            payload=payload,
            occurred_at=occurred_at,
        )
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
            occurred_at=occurred_at,
            recipients=recipients,
            details=details,
        )
