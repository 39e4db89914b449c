"""Security notices: every verified identifier of an account hears of a security change.

A notice carries no secret: what changed, when, and for an added sign-in method its masked
value. It is enqueued in a transaction that sees the change: the change's own (the wrong-code
budget), or the delivery of the change's domain event to the ``identity.security_notices``
consumer (security_notice_consumer.py), which commits the notices with the delivery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from outbox.application.delivery.ports import OutboxWriter
from outbox.application.identity.ports import IdentityStore
from outbox.application.ports import Ids
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.identities import LoginIdentifier
from outbox.domain.identity.security_changes import SecurityChange
from outbox.domain.purposes import Purpose

TEMPLATE = Purpose.SECURITY_NOTICE.value


class NoticeScope(Protocol):
    """One open transaction with the identity tables and the outbox (a unit of work)."""

    @property
    def identity(self) -> IdentityStore:
        """The identity tables in this transaction."""
        ...

    @property
    def outbox(self) -> OutboxWriter:
        """The outbox producer API in this transaction."""
        ...


@attrs.frozen(kw_only=True)
class SecurityNotices:
    """Enqueues one security_notice per verified identifier of the account."""

    ids: Ids
    locale: str = "en"

    async def send(
        self,
        uow: NoticeScope,
        *,
        identity_id: UUID,
        change: SecurityChange,
        now: datetime,
        occurred_at: datetime | None = None,
        recipients: Sequence[LoginIdentifier] | None = None,
        details: Mapping[str, str] | None = None,
    ) -> int:
        """Enqueue the notice in ``uow`` at ``now``; return how many identifiers it goes to.

        ``occurred_at`` (default ``now``) is when the change happened, as the notice says;
        ``recipients`` defaults to the account's verified identifiers as ``uow`` sees them.
        """
        if recipients is None:
            recipients = await uow.identity.find_verified_identifiers(identity_id)
        when = (occurred_at or now).isoformat()
        params = {"change": change.value, "occurred_at": when, **(details or {})}
        for login in recipients:
            await uow.outbox.enqueue(
                Message.enqueue(
                    id=self.ids.new_id(),
                    purpose=Purpose.SECURITY_NOTICE,
                    channel=login.channel,
                    destination=login.value,
                    subject_id=identity_id,
                    template=TEMPLATE,
                    params=params,
                    locale=self.locale,
                    now=now,
                )
            )
        return len(recipients)
